"""The composition root: command-line flags, the startup target, the host bindings, the host
journal and logging (``app``, ``bindings``, ``journal``, ``logs``). It reads top to bottom:
options -> server + pump -> (after ``initialize``) runtime + host -> serve -> orderly end.

Doors: the only room that may import every other room.
"""
