"""ACP's ``mcpServers`` (``session/new``, ``load``, ``resume``, ``fork``) as the session's MCP server
configs: stdio servers (every ACP agent must take them), streamable HTTP and SSE (advertised in
``mcpCapabilities``). They join the servers of the ``mcp.json`` files; a name given by both is the
client's (``rpcd.mcp.config.dedupe``). A stdio server runs in the session's cwd."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from rpcd.mcp.config import ServerConfig, Transport

SOURCE: Final = "acp"


def server_configs(servers: Sequence[Any] | None, cwd: str) -> tuple[ServerConfig, ...]:
    """The SDK's ``McpServerStdio`` / ``HttpMcpServer`` / ``SseMcpServer`` values as configs."""
    out: list[ServerConfig] = []
    for server in servers or ():
        name = str(getattr(server, "name", "") or "")
        command = getattr(server, "command", None)
        if isinstance(command, str) and command:
            env = tuple((str(e.name), str(e.value)) for e in getattr(server, "env", None) or ())
            out.append(ServerConfig(name=name, transport="stdio", command=command,
                                    args=tuple(str(a) for a in getattr(server, "args", None) or ()), env=env,
                                    cwd=cwd, source=SOURCE))
            continue
        url = getattr(server, "url", None)
        if isinstance(url, str) and url:
            headers = tuple((str(h.name), str(h.value)) for h in getattr(server, "headers", None) or ())
            transport: Transport = "sse" if getattr(server, "type", None) == "sse" else "http"
            out.append(ServerConfig(name=name, transport=transport, url=url, headers=headers, source=SOURCE))
    return tuple(out)
