"""TypeScript/JavaScript extensions, hosted in Node: the second runner behind the runner interface.

* ``locate`` — which Node (≥ 22.19: ``$RPCD_NODE`` or the one on ``PATH``) and where the host's
  pinned npm packages are installed (``npm ci`` into a cache dir, once);
* ``connection`` — JSON-RPC over the host's pipes, with budgets, abort grace and the watchdog;
* ``bridge`` — the script loader: ``Extension`` records whose callables are calls into the host, and
  the answers to the host's ``pi.*`` / ``ctx.*`` calls from the daemon's own extension API;
* ``service`` — the process-wide host (started on first need, restarted after it died);
* ``host.mjs`` / ``reader.mjs`` — the Node side (Pi's loader and API), ``package.json`` +
  ``package-lock.json`` — its dependencies, pinned.

Nothing here is imported unless a session has a TypeScript/JavaScript extension.
"""
