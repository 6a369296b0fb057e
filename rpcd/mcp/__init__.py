"""MCP (Model Context Protocol) servers a session uses, on the official SDK (PyPI ``mcp``).

``config`` (which servers: ``mcp.json`` files in ``pi-mcp-adapter``'s format, a front's list) ·
``connection`` (one running server on the SDK: stdio, streamable HTTP or SSE; its task, status,
calls) · ``pool`` (the process-wide pool: one connection per distinct config, shared by every
session naming it, refcounted, every server task owned by the pool's task group) · ``tools``
(a server's tools and resources as session tools behind the one tool seam) · ``prompts`` (a
server's prompts as commands) · ``elicitation`` (a server's questions asked through the session's
UI) · ``results`` (MCP content as Pi's tool content, bounded).

The SDK (and pydantic under it) is imported by ``connection`` on first use only: a daemon whose
sessions name no MCP server never loads it.

Doors: may import ``rpcd.core`` and ``rpcd.tools`` (the tool shapes and the seam's helpers); the
session service imports this room, never the reverse; no front is known here.
"""
