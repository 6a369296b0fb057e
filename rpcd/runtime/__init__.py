"""Session runtime: Pi's AgentSessionRuntime in Python — the runtime and its replacement order
(``runtime``), the factory, sessions (``session``), the agent loop (``agent``), services
(settings, context files, trust, extensions) and model providers (``providers``).

Doors: may import ``rpcd.core``, ``rpcd.store`` and ``rpcd.tools``; never the host, the wire,
the daemon or JSON-RPC. It satisfies the host's port structurally, without importing it.
"""
