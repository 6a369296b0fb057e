"""Pi's own RPC wire (``pi --mode rpc``) as a third thin front over the session service.

Pi 0.85.0's protocol, byte for byte where a client can tell: JSON lines in (``{"type": "get_state",
"id": …}``), answers ``{"id", "type": "response", "command", "success", "data" | "error"}`` and bare
event lines out, the extension UI sub-protocol, LF-only framing, Pi's answer to a bad line, Pi's
end at EOF and on signals. It composes nothing and holds no behaviour of its own: every command is
one call of the serialized host (``rpcd.sessions``) through the door rpcd's method table gives it,
exactly as the JSON-RPC front (``rpcd.wire``) and the ACP front (``rpcd.acp``) call it.

* ``app`` — the start (Pi's flags' session), the line loop, the orderly end;
* ``commands`` — the 33 commands: their fields, their host call, their answer's ``data``;
* ``bindings`` — what the host binds into each session: event lines, UI, extension errors;
* ``ui`` — ``extension_ui_request`` / ``extension_ui_response``;
* ``output`` — the ordered, bounded line stream on stdout;
* ``json_errors`` — ``JSON.parse``'s words for a line that is not JSON.

Doors: ``rpcd.core``, ``rpcd.protocol`` (the method table's doors and names only), ``rpcd.transport``,
``rpcd.host`` and ``rpcd.sessions``; nothing of the other fronts, the runtime or the store (the start's
session manager is the store's, reached through the session service's composition).
"""
