"""This front's ``HostBindings``: what the serialized host installs into every session it binds.

* ``subscribe``: the session's events go on stdout as Pi's event lines (``toJsonEvent``; only the
  event types Pi 0.85.0's ``AgentSession`` emits: rpcd's own, e.g. ``commands_changed``, are not
  Pi's wire), from the moment the host subscribed the session until it unsubscribes it (before the
  session is invalidated): nothing of an invalidated session is written after its invalidation.
  Pi's wire has no ``session_start``/``session_shutdown`` lines (those are extension events there).
* ``extension_bindings``: mode ``rpc``, the extension UI sub-protocol (``rpcd.pirpc.ui``), an
  extension command's session actions through the host, and ``extension_error`` lines.
* ``report_diagnostics``: to stderr, as Pi reports them (the startup's errors end the process:
  ``rpcd.pirpc.app``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from rpcd.core.json_event import to_json_event
from rpcd.core.redact import redact
from rpcd.core.values import CommandActions, Diagnostic, ExtensionBindings, ExtensionError, UiContext
from rpcd.host.port import Binding, HostSubscription, SessionPort
from rpcd.pirpc.output import LineOut

__all__ = ["PI_EVENT_TYPES", "PiBindings"]

log = logging.getLogger("rpcd.pirpc")

PI_EVENT_TYPES: Final = frozenset({
    # pi-agent-core's AgentEvent
    "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update", "message_end",
    "tool_execution_start", "tool_execution_update", "tool_execution_end",
    # AgentSessionEvent (core/agent-session.d.ts)
    "agent_settled", "queue_update", "compaction_start", "compaction_end", "entry_appended",
    "session_info_changed", "thinking_level_changed", "auto_retry_start", "auto_retry_end",
    "summarization_retry_scheduled", "summarization_retry_attempt_start", "summarization_retry_finished",
    "bash_execution_update",
})
"""The event lines of Pi 0.85.0's RPC mode (every ``AgentSessionEvent`` type)."""


class PiBindings:
    """``rpcd.host.port.HostBindings`` for Pi's wire (one process, one host, one line stream)."""

    def __init__(self, out: LineOut, ui: UiContext, command_actions: CommandActions | None = None) -> None:
        self._out = out
        self._ui = ui
        self.command_actions = command_actions
        self.spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        """The host's task group, for what extensions start without waiting (``SerializedHost.spawn``)."""
        self.shutdown: Callable[[], None] | None = None
        """An extension's ``ctx.shutdown()``: the front's orderly end once the session is idle."""
        self._live = False
        """Whether a session is subscribed: extension errors are written while one is."""
        self._muted = False
        self.startup_diagnostics: list[Diagnostic] = []

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings:
        return ExtensionBindings(mode="rpc", ui=self._ui, on_error=self._on_extension_error,
                                 command_actions=self.command_actions, spawn=self.spawn, shutdown=self.shutdown)

    def subscribe(self, binding: Binding) -> HostSubscription:
        out = self._out
        open_ = True

        def listener(event: Mapping[str, Any]) -> None:
            if open_ and not self._muted and event.get("type") in PI_EVENT_TYPES:
                out.put(to_json_event(event))

        release = binding.session.subscribe(listener)
        self._live = True

        def unsubscribe(reason: str) -> None:
            nonlocal open_
            if open_:
                open_ = False
                self._live = False
                release()

        return unsubscribe

    def mute(self) -> None:
        """The orderly end has begun: no event line any more (Pi unsubscribes before it disposes)."""
        self._muted = True

    def report_diagnostics(self, binding: Binding, diagnostics: Sequence[Diagnostic]) -> None:
        if binding.operation == "startup":
            self.startup_diagnostics = list(diagnostics)
            return  # the front reports them once the startup settled (an error ends the process, as in Pi)
        for diagnostic in diagnostics:
            log.warning("%s: %s", diagnostic.type, redact(diagnostic.message))

    async def flush_persistence(self, current: SessionPort | None) -> None:
        """Nothing to record: Pi keeps no journal of the current session."""

    def _on_extension_error(self, error: ExtensionError) -> None:
        log.warning("extension %s failed in %s", error.extension_path, error.event)
        if self._live and not self._muted:
            self._out.put({"type": "extension_error", "extensionPath": error.extension_path, "event": error.event,
                           "error": redact(error.error)})
