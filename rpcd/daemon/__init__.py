"""The composition root: command-line flags, the startup target, the host bindings, the host
journal, logging and the end of the process (``app``, ``bindings``, ``journal``, ``logs``,
``process``). It reads top to bottom:
options -> ``Daemon`` (pump, client requests, bindings, host, server) -> serve (the startup is
the host's first operation, queued at ``initialize``) -> orderly end -> exit code.

Doors: the only room that may import every other room.
"""
