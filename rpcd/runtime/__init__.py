"""Session runtime: Pi's AgentSessionRuntime in Python — the runtime and its replacement order
(``runtime``), the factory, sessions (``session``), cwd-bound services (``services``) and usage;
its sub-rooms: the turn machinery (``turns``: agent loop, input queue, retry), per-project
resources (``resources``: settings, context files, trust, skills, prompt templates, commands, the
system prompt), the extension host (``extensions``) and ``compaction``.

Doors: may import ``rpcd.core``, ``rpcd.store``, ``rpcd.tools`` and ``rpcd.providers``; never the
host, the wire, the daemon or JSON-RPC. It satisfies the host's port structurally, without
importing it. The sub-rooms never import the session core (``tests/test_doors.py``).
"""
