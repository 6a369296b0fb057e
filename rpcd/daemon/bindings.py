"""The daemon's ``HostBindings``: what the serialized host installs into every bound session.

The host calls these in the seed's order for the initial session and for every replacement:
``extension_bindings`` → (``bind_extensions``) → ``subscribe`` → ``report_diagnostics``, then
``flush_persistence`` after a successful replacement. Consequences for the wire:

* ``subscribe`` is the first moment a session may speak: it opens a fresh numbered channel for
  the generation the host gave the session, announces ``session/lifecycle session_start`` (the
  event the runtime built the session with: its reason and previous file) and only then
  forwards the session's events. Nothing from a replacement is sent before its extensions are bound.
* the returned unsubscribe (called by the host before the old session is invalidated, on
  every failure path, and at final disposal, with the runtime's shutdown reason) announces
  ``session_shutdown`` and closes the channel, so nothing of an invalidated session is sent
  after its invalidation.

Nothing here counts generations or remembers which session is current: the host says so.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from rpcd.core.redact import redact as redact_text
from rpcd.core.values import (
    CommandActions,
    Diagnostic,
    ExtensionBindings,
    ExtensionError,
    QueueSnapshot,
    ToolApprovalAnswer,
    ToolApprovalRequest,
    ToolApprover,
    UiContext,
)
from rpcd.host.port import Binding, HostSubscription, SessionPort
from rpcd.wire.notifications import SESSION_DIAGNOSTICS, EventPump, SessionChannel

log = logging.getLogger(__name__)

_START_FIELDS: Final = ("reason", "previousSessionFile")
"""What of the runtime's ``session_start`` event goes on the wire."""

Persist = Callable[[str | None, str], Awaitable[object]]
"""``(session_file, cwd)``: record the current session durably (the host journal)."""
AuthorizeTool = Callable[[Mapping[str, Any]], Awaitable[ToolApprovalAnswer]]
"""Sends ``tool/authorize`` with these params (``ClientRequests.authorize_tool``)."""


class _Outlet:
    """One session's channel, once subscribed (what its tool approver asks on behalf of)."""

    __slots__ = ("channel",)

    def __init__(self) -> None:
        self.channel: SessionChannel | None = None


class RpcHostBindings:
    """``rpcd.host.port.HostBindings`` for the JSON-RPC daemon."""

    def __init__(self, pump: EventPump, ui: UiContext | None, persist: Persist | None = None,
                 authorize_tool: AuthorizeTool | None = None, command_actions: CommandActions | None = None) -> None:
        self._pump = pump
        self._ui = ui
        self._persist = persist
        self._authorize_tool = authorize_tool
        self.command_actions = command_actions
        """What an extension command's session actions go through (the host's own requests)."""
        self.spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        """The host's task group, for what extensions start without waiting (``SerializedHost.spawn``)."""
        self.shutdown: Callable[[], None] | None = None
        """An extension's ``ctx.shutdown()``: the daemon's orderly end once the session is idle."""
        self._live: SessionChannel | None = None
        """The channel of the last subscribed session: extension errors are forwarded while it is open."""
        self._outlets: dict[int, _Outlet] = {}
        """Sessions between ``extension_bindings`` and ``subscribe``, by identity."""

    # -- HostBindings ---------------------------------------------------------------------

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings:
        outlet = self._outlets[id(session)] = _Outlet()
        return ExtensionBindings(mode="rpc", ui=self._ui, on_error=self._on_extension_error,
                                 tool_approver=self._tool_approver(outlet), command_actions=self.command_actions,
                                 spawn=self.spawn, shutdown=self.shutdown)

    def _tool_approver(self, outlet: _Outlet) -> ToolApprover | None:
        """``tool/authorize`` on behalf of one session, tagged with its id and generation. Asked only
        while that session is subscribed (its channel open); an answer that arrives after it was
        unsubscribed (replaced, disposed) is a rejection: its tool never runs."""
        send = self._authorize_tool
        if send is None:
            return None

        async def approve(request: ToolApprovalRequest) -> ToolApprovalAnswer:
            channel = outlet.channel
            if channel is None or not channel.is_open:
                return ToolApprovalAnswer("rejectOnce", "the session is no longer current", answered=False)
            params = {
                "sessionId": channel.session_id,
                "generation": channel.generation,
                "toolCallId": request.tool_call_id,
                "toolName": request.tool_name,
                "kind": request.kind,
                "title": request.title,
                "arguments": dict(request.arguments),
                "locations": [{"path": loc.path} if loc.line is None else {"path": loc.path, "line": loc.line}
                              for loc in request.locations],
                "notices": list(request.notices),
            }
            rule = request.always_rule
            if rule is not None:
                params["alwaysRule"] = {"toolName": rule.tool_name, "description": rule.description,
                                        **({"command": rule.command} if rule.command is not None else {}),
                                        **({"path": rule.path} if rule.path is not None else {})}
            await self._pump.drain()  # the call's tool_execution_start reaches the client first
            answer = await send(params)
            if not channel.is_open:
                return ToolApprovalAnswer("rejectOnce", "the session was replaced while waiting for approval",
                                          answered=False)
            return answer

        return approve

    def subscribe(self, binding: Binding) -> HostSubscription:
        session = binding.session
        channel = self._pump.channel(session.session_id, binding.generation)
        try:
            release = session.subscribe(channel.event)
        except BaseException:
            channel.close()
            raise
        self._live = channel
        self._outlets.pop(id(session), _Outlet()).channel = channel
        start = session.session_start_event
        # Listeners run synchronously, so no session event can slip in before this line.
        channel.lifecycle({"type": "session_start", **{k: start[k] for k in _START_FIELDS if k in start}})
        done = False

        def unsubscribe(reason: str) -> None:
            nonlocal done
            if done:
                return
            done = True
            shutdown: dict[str, Any] = {"type": "session_shutdown", "reason": reason}
            dropped = _safe_dropped(session)
            if dropped is not None:
                shutdown["droppedQueue"] = {"steering": list(dropped.steering), "followUp": list(dropped.follow_up)}
            channel.lifecycle(shutdown)
            channel.close()
            release()

        return unsubscribe

    def report_diagnostics(self, binding: Binding, diagnostics: Sequence[Diagnostic]) -> None:
        session = binding.session
        params: dict[str, Any] = {
            "operation": binding.operation,
            "generation": binding.generation,
            "cwd": _safe_cwd(session),
            "diagnostics": [{"type": d.type, "message": redact_text(d.message)} for d in diagnostics],
        }
        file = _safe_file(session)
        if file is not None:
            params["sessionFile"] = file
        if self._live is None or not self._live.is_open:
            return
        self._pump.post(SESSION_DIAGNOSTICS, params)

    async def flush_persistence(self, current: SessionPort | None) -> None:
        # After a terminal failure the host passes no session: a dead one is never named as the one to resume.
        if self._persist is None or current is None:
            return
        await self._persist(_safe_file(current), current.state().cwd)

    # -- extension errors -------------------------------------------------------------------

    def _on_extension_error(self, error: ExtensionError) -> None:
        """Pi's RPC mode reports ``extension_error`` records; we forward them on the live channel."""
        log.warning("extension %s failed in %s", error.extension_path, error.event)
        channel = self._live
        if channel is not None and channel.is_open:
            channel.event(
                {
                    "type": "extension_error",
                    "extensionPath": error.extension_path,
                    "event": error.event,
                    "error": redact_text(error.error),
                }
            )


def _safe_file(session: SessionPort) -> str | None:
    try:
        return session.session_file
    except Exception:
        return None


def _safe_dropped(session: SessionPort) -> QueueSnapshot | None:
    try:
        return session.dropped_queue
    except Exception:
        return None


def _safe_cwd(session: SessionPort) -> str:
    try:
        return session.state().cwd
    except Exception:
        return ""

