"""THE session service every front uses: nothing about a session is composed in a front.

* ``spec`` — what a session is composed from: the process's flags (``ProcessSpec``) and what one
  session adds (``SessionSpec``: its cwd, its MCP servers); the flags' defaults;
* ``services`` — the process-wide services, one of each (the library, approval rules, trust memory,
  the provider registry) and the registry of lazily started ones (MCP pool, TypeScript host);
* ``compose`` — the one composition: spec + services + a front's hooks -> factory -> runtime ->
  serialized host; the session managers of new, opened and forked sessions;
* ``hub`` — the live hosts by session id, one host per file, the current one; the bounded final
  disposal;
* ``library`` — where sessions live (session-dir precedence) and the session files: list, find,
  rename, delete (trash, writer lock);
* ``actions`` — an extension command's session actions, as host calls.

Doors: ``rpcd.core``, ``rpcd.host``, ``rpcd.runtime``, ``rpcd.providers``, ``rpcd.store``,
``rpcd.tools`` and ``rpcd.mcp`` (the MCP pool is the registry's ``mcp`` service); never a front
(``rpcd.wire``, ``rpcd.acp``), ``rpcd.protocol`` or the daemon: it knows no wire.
"""
