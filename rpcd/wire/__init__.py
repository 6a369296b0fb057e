"""The JSON-RPC endpoint: dispatch at arrival with a task and a cancel scope per request, the
handshake and the orderly end (``server``; pygls, kept for the daemon->client request table, is
imported nowhere else), the session methods registered from the method table (``handlers``),
the event pump (``notifications``), work-done progress (``progress``), daemon->client requests
(``client_requests``) and the mapping of failures to wire errors (``errors``).

Doors: may import ``rpcd.core``, ``rpcd.protocol``, ``rpcd.transport`` and ``rpcd.host``;
never the runtime, the store or the daemon.
"""
