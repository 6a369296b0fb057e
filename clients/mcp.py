"""The chat's ``/mcp``: the current session's MCP servers (``listMcpServers``) for a person — each
server's status, where it runs, its tools and prompts, and why it failed — and ``/mcp NAME`` with
every tool and prompt of one server (a row of the chat's command table: ``chat.EXTRA_COMMAND_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpcd.clients import render, slash
from rpcd.clients.slash import ChatContext

NO_SERVERS = ("no MCP servers in this session: add them to ~/.pi/agent/mcp.json or (trusted projects) "
              ".pi/mcp.json, then /reload or start a new session (docs/mcp.md)")
PREFIX = "mcp__"


def servers(result: Mapping[str, Any]) -> str:
    """Every server of the session, one row each, then each failure's reason."""
    listed: Sequence[Mapping[str, Any]] = result.get("servers") or ()
    if not listed:
        return NO_SERVERS
    rows = [(s.get("name"), s.get("status"), f"{s.get('transport')} {render.short(s.get('target'), 40)}",
             len(s.get("tools") or ()), len(s.get("prompts") or ()), s.get("resources", 0), s.get("source"))
            for s in listed]
    lines = [render.table(("server", "status", "runs", "tools", "prompts", "resources", "from"), rows)]
    for server in listed:
        if server.get("lastError"):
            lines.append(f"{server.get('name')}: {server['lastError']}")
    lines.append("/mcp NAME lists a server's tools and prompts")
    return "\n".join(lines)


def server_detail(server: Mapping[str, Any]) -> str:
    """One server: what it is, its tools (as the model calls them) and its prompts (as ``/commands``)."""
    name = str(server.get("name"))
    version = " ".join(str(part) for part in (server.get("serverName"), server.get("serverVersion")) if part)
    lines = [f"{name}: {server.get('status')}  {server.get('transport')} {server.get('target')}"
             + (f"  ({version})" if version else ""),
             f"  from {server.get('source')}, used by {server.get('sessions')} session(s)"]
    if server.get("lastError"):
        lines.append(f"  last error: {server['lastError']}")
    tools = list(server.get("tools") or ())
    lines.append(f"  tools ({len(tools)}; the model calls them {PREFIX}{name}__<tool>):" if tools else "  no tools")
    lines += [f"    {tool}" for tool in tools]
    prompts = list(server.get("prompts") or ())
    if prompts:
        lines.append(f"  prompts ({len(prompts)}; run them as /{PREFIX}{name}__<prompt> ARGS):")
        lines += [f"    {prompt}" for prompt in prompts]
    if server.get("resources"):
        lines.append(f"  resources: {server['resources']} (the model reads them with {PREFIX}{name}__read_resource)")
    return "\n".join(lines)


@slash.command("mcp", "[NAME]", "this session's MCP servers: status, tools, prompts, errors (NAME: one server)",
               while_streaming=True)
async def _mcp(chat: ChatContext, rest: str) -> None:
    result = await chat.client.list_mcp_servers()
    name = rest.strip()
    if not name:
        chat.printer.result(result, servers)
        return
    found = next((s for s in result.get("servers") or () if s.get("name") == name), None)
    if found is None:
        known = ", ".join(str(s.get("name")) for s in result.get("servers") or ()) or "none"
        raise slash.UsageProblem(f"no MCP server {name!r} in this session (servers: {known})")
    chat.printer.result(found, server_detail)
