"""``pi.events``: the event bus extensions of one session talk over (Pi's ``createEventBus``).

``emit(channel, data)`` calls every listener of the channel at once, in subscription order (Node's
``EventEmitter``); a listener that returns an awaitable runs on in the host's task group, not waited
for. A listener that raises is logged (Pi writes ``Event handler error`` to stderr) and the others
still run. ``data`` crosses between extensions as JSON (checked when it is emitted), so listeners of
any runner get the same value and none can change what another sees. A runner's subscriptions end
when its session is disposed or reloaded.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from rpcd.core.codec import to_json

_log = logging.getLogger(__name__)

Listener = Callable[[Any], Any]
Spawn = Callable[..., None]
"""``spawn(work, extension_path=..., event=...)``: run ``work()`` without waiting for it."""


class EventBus:
    def __init__(self, spawn: Spawn) -> None:
        self._spawn = spawn
        self._listeners: dict[str, list[tuple[Listener, str]]] = {}

    def on(self, channel: str, listener: Listener, *, extension_path: str = "<runtime>") -> Callable[[], None]:
        """Subscribe; returns the unsubscribe (safe to call twice)."""
        if not callable(listener):
            raise TypeError(f"listener for {channel!r} is not callable")
        entry = (listener, extension_path)
        self._listeners.setdefault(str(channel), []).append(entry)

        def unsubscribe() -> None:
            listeners = self._listeners.get(str(channel))
            if listeners is not None and entry in listeners:
                listeners.remove(entry)

        return unsubscribe

    def emit(self, channel: str, data: Any = None, *, hosted: object = None) -> list[Any]:
        """Call every listener of ``channel``. ``hosted`` (an emit made by extensions hosted elsewhere,
        whose own listeners that host runs itself): listeners whose ``hosted_by`` is it are not called
        here; their listener ids are returned, in subscription order."""
        value = to_json(data)
        skipped: list[Any] = []
        for listener, path in list(self._listeners.get(str(channel), ())):
            if hosted is not None and getattr(listener, "hosted_by", None) is hosted:
                skipped.append(getattr(listener, "listener_id", None))
                continue
            try:
                outcome = listener(_fresh(value))
            except Exception:
                _log.exception("Event handler error (%s) in %s", channel, path)
                continue
            if inspect.isawaitable(outcome):
                awaitable = outcome

                async def finish(awaitable: Any = awaitable, path: str = path) -> None:
                    try:
                        await awaitable
                    except Exception:
                        _log.exception("Event handler error (%s) in %s", channel, path)

                self._spawn(finish, extension_path=path, event=f"events:{channel}")
        return skipped

    def clear(self) -> None:
        self._listeners.clear()


def _fresh(value: Any) -> Any:
    """Each listener its own copy: one cannot change what the next one gets."""
    import copy

    return copy.deepcopy(value)
