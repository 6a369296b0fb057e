"""The composition root: command-line flags, the startup target, the host bindings, the host
journal, logging and the end of the process (``app``, ``bindings``, ``journal``, ``logs``,
``process``). It reads top to bottom: options -> server + pump -> (after ``initialize``) runtime +
host -> serve -> orderly end.

Doors: the only room that may import every other room.
"""
