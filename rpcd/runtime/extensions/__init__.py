"""The extension host: discovering, loading and running extensions.

One runner interface for every kind of extension (``registry``: what an extension registered, as
plain data and async callables with JSON arguments; ``runner``: Pi 0.85.0's rules for running and
combining handlers, in load order), the ``ctx`` and its ``ui`` (``context``), ``pi.events``
(``bus``), ``pi.exec`` (``process``), and the Python runner (``python_runner``: modules that define
``register(pi)``, and the ``pi`` they get).

Doors: ``rpcd.core`` only; never the session core, which hands the runner what it needs
(``context.SessionActions``).
"""

from .context import (
    CommandContextError,
    ExtensionCommandContext,
    ExtensionContext,
    ExtensionRuntimeNotReadyError,
    SessionActions,
    turn_scope,
)
from .python_runner import ExtensionAPI, load_python_extensions
from .registry import Extension, RegisteredCommand, RegisteredTool
from .runner import SESSION_BEFORE_EVENTS, ExtensionRunner, ResolvedCommand

__all__ = [
    "SESSION_BEFORE_EVENTS",
    "CommandContextError",
    "Extension",
    "ExtensionAPI",
    "ExtensionCommandContext",
    "ExtensionContext",
    "ExtensionRunner",
    "ExtensionRuntimeNotReadyError",
    "RegisteredCommand",
    "RegisteredTool",
    "ResolvedCommand",
    "SessionActions",
    "load_python_extensions",
    "turn_scope",
]
