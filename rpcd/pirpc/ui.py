"""The extension UI sub-protocol of Pi's RPC mode: ``ctx.ui`` as ``extension_ui_request`` lines on
stdout and ``extension_ui_response`` lines on stdin (``rpcd.core.values.UiContext`` for this front).

As Pi 0.85.0 (``modes/rpc/rpc-mode.js``, ``createExtensionUIContext``):

* dialogs (``select``, ``confirm``, ``input``, ``editor``) send a request with a fresh UUID and wait
  for the response of that id; a dialog given a timeout sends it (``timeout``, milliseconds) and
  resolves to its default when it passes: ``None`` for select/input/editor, ``False`` for confirm —
  the defaults a ``cancelled: true`` response gives too. Without a timeout a dialog waits as Pi's
  does, for as long as the process lives (``--ui-timeout`` sets one for dialogs given none);
  ``editor`` never sends a timeout (Pi's takes none);
* the rest (``notify``, ``setStatus``, ``setWidget``, ``setTitle``, ``set_editor_text``) send a
  request and expect nothing back;
* a response whose id is unknown (answered already, timed out, never asked) is ignored.

At the orderly end every open dialog resolves to its default (``close``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import anyio

from rpcd.core.jstext import js_truthy
from rpcd.core.values import WidgetPlacement
from rpcd.pirpc.output import LineOut

__all__ = ["PiUi"]

T = TypeVar("T")
Parse = Callable[[Mapping[str, Any]], T]


def _value(response: Mapping[str, Any]) -> str | None:
    if js_truthy(response.get("cancelled")):
        return None
    value = response.get("value")
    return value if isinstance(value, str) else None


def _confirmed(response: Mapping[str, Any]) -> bool:
    if js_truthy(response.get("cancelled")):
        return False
    return js_truthy(response.get("confirmed", False))


class _Dialog:
    __slots__ = ("done", "response")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.response: Mapping[str, Any] | None = None


class PiUi:
    """``UiContext`` over the front's line stream; ``answer`` takes the client's responses."""

    def __init__(self, out: LineOut, *, default_timeout: float | None = None) -> None:
        self._out = out
        self._default_timeout = default_timeout
        self._open: dict[str, _Dialog] = {}
        self._closed = False

    def answer(self, response: Mapping[str, Any]) -> None:
        """An ``extension_ui_response`` line (ignored unless it answers an open dialog)."""
        response_id = response.get("id")
        dialog = self._open.pop(response_id, None) if isinstance(response_id, str) else None
        if dialog is not None:
            dialog.response = response
            dialog.done.set()

    def close(self) -> None:
        """The client can no longer answer: every open dialog resolves to its default."""
        self._closed = True
        dialogs, self._open = list(self._open.values()), {}
        for dialog in dialogs:
            dialog.done.set()

    @property
    def pending(self) -> int:
        return len(self._open)

    def _send(self, method: str, fields: Mapping[str, Any]) -> str:
        request_id = str(uuid.uuid4())
        line = {"type": "extension_ui_request", "id": request_id, "method": method}
        line.update((key, value) for key, value in fields.items() if value is not None)  # undefined: left out
        self._out.put(line)
        return request_id

    async def _dialog(self, method: str, fields: dict[str, Any], default: T, parse: Parse[T],
                      timeout: float | None, *, send_timeout: bool = True) -> T:
        if self._closed:
            return default
        if timeout is None:
            timeout = self._default_timeout
        elif send_timeout and timeout > 0:
            fields["timeout"] = max(1, round(timeout * 1000))
        dialog = _Dialog()
        request_id = self._send(method, fields)
        self._open[request_id] = dialog
        try:
            with anyio.move_on_after(math.inf if timeout is None or timeout <= 0 else timeout):
                await dialog.done.wait()
        finally:
            self._open.pop(request_id, None)
        return default if dialog.response is None else parse(dialog.response)

    # -- UiContext ---------------------------------------------------------------------------------

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        return await self._dialog("select", {"title": title, "options": list(options)}, None, _value, timeout)

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        return await self._dialog("confirm", {"title": title, "message": message}, False, _confirmed, timeout)

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None:
        return await self._dialog("input", {"title": title, "placeholder": placeholder}, None, _value, timeout)

    async def editor(self, title: str, prefill: str | None = None, timeout: float | None = None) -> str | None:
        return await self._dialog("editor", {"title": title, "prefill": prefill}, None, _value, timeout,
                                  send_timeout=False)

    def notify(self, message: str, notify_type: Literal["info", "warning", "error"] | None = "info") -> None:
        self._send("notify", {"message": message, "notifyType": notify_type})

    def set_status(self, key: str, text: str | None) -> None:
        self._send("setStatus", {"statusKey": key, "statusText": text})

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement | None = None) -> None:
        self._send("setWidget", {"widgetKey": key, "widgetLines": None if lines is None else list(lines),
                                 "widgetPlacement": placement})

    def set_title(self, title: str) -> None:
        self._send("setTitle", {"title": title})

    def set_editor_text(self, text: str) -> None:
        self._send("set_editor_text", {"text": text})
