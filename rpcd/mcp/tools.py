"""A session's MCP servers as session tools, behind the one tool seam.

Names are ``mcp__<server>__<tool>`` — what Claude Code and Codex call MCP tools, and what
``pi-mcp-adapter`` produces with ``toolPrefix: "mcp"`` (and always for its prompt commands) — with
every character outside ``[A-Za-z0-9_-]`` replaced by ``_`` and names over 64 characters (the
providers' limit) cut and ended with a hash of the whole name, so two long names stay apart.

Each tool passes the seam like any other: its arguments are validated against the server's
``inputSchema``; the extensions' ``tool_call``/``tool_result`` hooks see it; the approval gate
classifies it by the server's ``readOnlyHint`` (read-only: runs under ``ask-writes``; anything else
asks). A call streams the server's progress notifications as partial results, is aborted with the
turn (the server is told ``notifications/cancelled``) and fails — never hangs — when the server
crashes or stops answering. A server with resources adds ``mcp__<server>__read_resource`` (read-only):
``uri`` reads one resource, no ``uri`` lists them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from rpcd.core.values import UiContext
from rpcd.mcp.config import ServerConfig
from rpcd.mcp.connection import McpConnection, ResourceInfo, ToolInfo
from rpcd.mcp.elicitation import elicit_handler
from rpcd.mcp.results import bounded, resource_content, tool_result
from rpcd.tools.base import ToolCallContext, ToolResult, text_result

PREFIX: Final = "mcp__"
NAME_LIMIT: Final = 64
READ_RESOURCE: Final = "read_resource"
LISTED_RESOURCES: Final = 20
"""Resources named in the resource tool's description (the rest: listed by a call without ``uri``)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def qualified_name(server: str, item: str) -> str:
    """``mcp__<server>__<item>``, safe for every provider's tool-name rules."""
    name = f"{PREFIX}{sanitize(server)}__{sanitize(item)}"
    if len(name) <= NAME_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:NAME_LIMIT - 9]}_{digest}"


def input_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The server's ``inputSchema`` as a tool's ``parameters``: an object, without ``$schema``
    (Gemini refuses unknown keywords at the top)."""
    out = {key: value for key, value in schema.items() if key != "$schema"}
    out["type"] = "object"
    out.setdefault("properties", {})
    return out


@attrs.frozen
class McpTool:
    """One MCP tool as a session tool (``rpcd.tools.base.Tool``)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    server: str
    original: str
    connection: McpConnection = attrs.field(repr=False)
    ui: Callable[[], UiContext | None] = attrs.field(repr=False)
    label: str = ""
    read_only: bool = False
    prompt_snippet: str | None = None
    prompt_guidelines: tuple[str, ...] = ()
    accepts_signal: bool = True

    def prepare_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        return args

    async def execute(self, tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        on_update = ctx.on_update

        def progress(done: float, total: float | None, message: str | None) -> None:
            if on_update is None:
                return
            shown = f"{done:g}/{total:g}" if total else f"{done:g}"
            on_update(text_result(f"[{self.server}] progress {shown}" + (f": {message}" if message else ""),
                                  {"server": self.server, "tool": self.original, "progress": done,
                                   "total": total}))

        result = await self.connection.call_tool(self.original, args, signal=ctx.signal, on_progress=progress,
                                                 elicit=elicit_handler(self.server, self.ui))
        return tool_result(result, server=self.server, tool=self.original)


@attrs.frozen
class ResourceTool:
    """``mcp__<server>__read_resource``: one resource by ``uri``, or the list of them."""

    name: str
    server: str
    connection: McpConnection = attrs.field(repr=False)
    description: str = ""
    label: str = ""
    read_only: bool = True
    prompt_snippet: str | None = None
    prompt_guidelines: tuple[str, ...] = ()
    accepts_signal: bool = True
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {
        "type": "object",
        "properties": {"uri": {"type": "string", "description": "The resource's URI; leave out to list them"}},
    })

    def prepare_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        return args

    async def execute(self, tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        uri = args.get("uri")
        if not isinstance(uri, str) or not uri:
            return text_result(_resource_list(self.connection.resources) or "(no resources)",
                               {"server": self.server})
        result = await self.connection.read_resource(uri, signal=ctx.signal)
        blocks = [resource_content(c.model_dump(mode="json", by_alias=True, exclude_none=True))
                  for c in result.contents]
        content, truncation = bounded(blocks or [{"type": "text", "text": "(empty resource)"}])
        details: dict[str, Any] = {"server": self.server, "uri": uri}
        if truncation is not None:
            details["truncation"] = truncation
        return {"content": content, "details": details}


def server_tools(config: ServerConfig, connection: McpConnection,
                 ui: Callable[[], UiContext | None]) -> list[McpTool | ResourceTool]:
    """The session tools of one ready server (none for one that is not ready)."""
    if connection.status != "ready":
        return []
    out: list[McpTool | ResourceTool] = []
    for tool in connection.tools:
        if not config.allows_tool(tool.name):
            continue
        out.append(_tool(config.name, tool, connection, ui))
    if connection.resources and config.allows_tool(READ_RESOURCE):
        out.append(ResourceTool(
            name=qualified_name(config.name, READ_RESOURCE), server=config.name, connection=connection,
            label=f"{config.name}: read resource",
            description=(f"Read a resource of the MCP server {config.name} by its URI (leave uri out to list "
                         f"them).\n\n{_resource_list(connection.resources, LISTED_RESOURCES)}"),
        ))
    return out


def _tool(server: str, tool: ToolInfo, connection: McpConnection, ui: Callable[[], UiContext | None]) -> McpTool:
    description = tool.description.strip() or f"The {tool.name} tool of the MCP server {server}"
    return McpTool(
        name=qualified_name(server, tool.name), description=description, parameters=input_schema(tool.input_schema),
        server=server, original=tool.name, connection=connection, ui=ui, read_only=tool.read_only,
        label=f"{server}: {tool.title or tool.name}",
    )


def _resource_list(resources: tuple[ResourceInfo, ...], limit: int | None = None) -> str:
    shown = resources if limit is None else resources[:limit]
    lines = []
    for resource in shown:
        kind = "template" if resource.template else "resource"
        line = f"- {resource.uri} ({kind}: {resource.name}"
        line += f", {resource.mime_type})" if resource.mime_type else ")"
        if resource.description:
            line += f" — {resource.description}"
        lines.append(line)
    if limit is not None and len(resources) > limit:
        lines.append(f"- … {len(resources) - limit} more (call without uri to list them all)")
    return "\n".join(lines)
