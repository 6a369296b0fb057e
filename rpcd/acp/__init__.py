"""The Agent Client Protocol front (``rpcd acp``): one serialized host per ACP session, mapped
onto the same runtime. Imported only in that mode.

Doors: may import ``rpcd.core``, ``rpcd.host``, ``rpcd.runtime``, ``rpcd.store``, ``rpcd.tools``
and ``rpcd.transport``; never ``rpcd.wire`` (JSON-RPC's own endpoint) or the daemon.
"""
