"""The reference MCP servers from the npm registry, pinned: ``@modelcontextprotocol/server-filesystem``
and ``@modelcontextprotocol/server-everything`` (tools, resources, prompts, progress, elicitation, a
slow tool, failing calls; stdio, streamable HTTP and SSE), installed once per machine in
``$RPCD_MCP_SERVERS_DIR`` or ``~/.cache/rpcd/mcp-servers-<version>`` (``tests/npm_packages.py``)."""

from __future__ import annotations

import attrs

from tests.acp.ts_sdk import node_binary
from tests.npm_packages import ensure_packages, install_dir

SERVERS_VERSION = "2026.8.31"
SDK_VERSION = "1.32.2"
"""The TypeScript MCP SDK both servers run on (their manifests ask for ``^1.30.0``: pinned here)."""


@attrs.frozen
class NpmServers:
    node: str
    filesystem: str
    everything: str


def ensure_servers() -> NpmServers:
    root = ensure_packages(
        install_dir("RPCD_MCP_SERVERS_DIR", f"mcp-servers-{SERVERS_VERSION}"), "MCP reference servers",
        {"@modelcontextprotocol/server-filesystem": SERVERS_VERSION,
         "@modelcontextprotocol/server-everything": SERVERS_VERSION},
        overrides={"@modelcontextprotocol/sdk": SDK_VERSION},
    )
    modules = root / "node_modules" / "@modelcontextprotocol"
    return NpmServers(node=node_binary(), filesystem=str(modules / "server-filesystem" / "dist" / "index.js"),
                      everything=str(modules / "server-everything" / "dist" / "index.js"))


__all__ = ["NpmServers", "ensure_servers"]
