"""The Agent Client Protocol front (``rpcd acp``): ACP v1 over stdio with the official SDK
(``agent-client-protocol``: its schema types, its connection and router), one serialized host per
ACP session over the same runtime as the daemon's.

``app`` (serve, orderly end) · ``stdio`` (the daemon's stdio edge as the SDK's message transport) ·
``connection`` (the SDK connection, extra routes, calls to the client) · ``agent`` (every ACP method,
the live sessions) · ``session`` (one host per session: modes, config options, turns, replay) ·
``updates`` (events and history as ``session/update``) · ``stream`` (ordered, bounded updates) ·
``permissions`` (tool approval and project trust as ``session/request_permission``) · ``ui``
(extension dialogs and MCP elicitations through the editor) · ``plans`` (to-do lists as ``plan``) · ``editor``
(``fs/*`` and ``terminal/*`` for the built-in tools) · ``prompt`` (content blocks to a prompt) ·
``auth`` (auth methods, model inputs) · ``library`` (sessions by id, listing, deletion) · ``errors``
(rpcd's flat errors as ACP errors) · ``config``. Imported only in ACP mode: the JSON-RPC daemon never
loads it (nor the SDK), and it never loads the JSON-RPC endpoint.

Doors: may import ``rpcd.core``, ``rpcd.protocol``, ``rpcd.host``, ``rpcd.runtime``, ``rpcd.store``,
``rpcd.tools``, ``rpcd.transport`` and ``rpcd.wire.errors`` (the one failure-to-error mapping); never
the rest of ``rpcd.wire`` (JSON-RPC's own endpoint) or the daemon.
"""

from rpcd.acp.sdk import load_schema as _load_schema

_load_schema()  # before any module here imports the SDK (``rpcd.acp.sdk``: ~0.7 s off the start)
