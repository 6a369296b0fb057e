"""The JSON-RPC endpoint: dispatch over pygls (``server``; pygls is imported nowhere else),
the session method handlers (``handlers``), the event pump (``notifications``), work-done
progress (``progress``), daemon->client requests (``client_requests``) and the mapping of
failures to wire errors (``errors``).

Doors: may import ``rpcd.core``, ``rpcd.protocol``, ``rpcd.transport`` and ``rpcd.host``;
never the runtime, the store or the daemon.
"""
