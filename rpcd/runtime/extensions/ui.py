"""``ctx.ui``: the host's UI context as extensions see it, and Pi's ``ui_prompt_start``/``_end``
around blocking dialogs."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Literal

from rpcd.core.values import UiContext, WidgetPlacement


class Theme:
    """Pi's ``ctx.ui.theme`` in RPC mode with colours off (``NO_COLOR``): every style is the text
    itself, so what an extension styles reaches the client as plain text."""

    name = "rpc"

    def fg(self, color: str, text: str) -> str:
        return text

    def bg(self, color: str, text: str) -> str:
        return text

    def bold(self, text: str) -> str:
        return text

    def italic(self, text: str) -> str:
        return text

    def underline(self, text: str) -> str:
        return text

    def strikethrough(self, text: str) -> str:
        return text

    def dim(self, text: str) -> str:
        return text

    def inverse(self, text: str) -> str:
        return text


THEME = Theme()
_NOTIFY_TYPES = ("info", "warning", "error")
_PLACEMENTS: tuple[WidgetPlacement, ...] = ("aboveEditor", "belowEditor")
UiPromptKind = Literal["select", "confirm", "input", "editor", "custom"]


def _text(value: Any) -> str:
    """Display text from an extension: a string as is, anything else as ``str()`` shows it."""
    return str.__str__(value) if isinstance(value, str) else str(value)


def _timeout(value: Any, *, milliseconds: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ValueError("timeout must be None or a non-negative number of seconds")
    return float(value) / 1000 if milliseconds else float(value)


class UiPromptTracker:
    """Pi's ``withUIPrompt``: ``ui_prompt_start``/``ui_prompt_end`` around blocking dialogs, nested or
    overlapping ones coalesced into one outer span; the events are not waited for (the start's
    handlers run once the dialog is out, the end's answer-at-once part before its caller goes on)."""

    def __init__(self, emit_later: Callable[..., None]) -> None:
        self._emit_later = emit_later
        self._depth = 0
        self._active: tuple[str, str | None] | None = None

    @contextlib.asynccontextmanager
    async def prompt(self, kind: UiPromptKind, title: str | None) -> AsyncIterator[None]:
        outer = self._depth == 0
        self._depth += 1
        if outer:
            self._active = (kind, title)
            self._emit_later(_prompt_event("ui_prompt_start", kind, title), now=False)
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth <= 0:
                self._depth = 0
                active, self._active = self._active or (kind, title), None
                # Pi queues it as a microtask that runs before the dialog's caller resumes
                self._emit_later(_prompt_event("ui_prompt_end", *active))


def _prompt_event(kind: str, prompt_kind: str, title: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "reason": "ui_prompt", "kind": prompt_kind}
    if title:
        event["title"] = title
    return event


class CheckedUi:
    """The host's UI context as extensions see it (Pi's ``ExtensionUIContext`` in RPC mode):
    arguments brought into what the wire carries, dialogs wrapped in ``ui_prompt_*`` events, and
    Pi's terminal-only members as Pi's RPC mode has them (no-ops and defaults).

    ``notify(exc)`` shows ``str(exc)``; a notify type other than info/warning/error, or a timeout
    that is not a finite number of seconds, is refused with ``ValueError`` in the caller. Dialog
    timeouts are seconds (``timeout=``); ``timeout_ms=`` takes Pi's milliseconds.
    """

    theme = THEME

    def __init__(self, ui: UiContext, prompts: UiPromptTracker) -> None:
        self._ui = ui
        self._prompts = prompts

    @staticmethod
    def _wait(timeout: Any, timeout_ms: Any) -> float | None:
        if timeout_ms is not None:
            return _timeout(timeout_ms, milliseconds=True)
        return _timeout(timeout)

    def notify(self, message: Any, notify_type: Any = "info") -> None:
        if notify_type is None:
            notify_type = "info"
        if notify_type not in _NOTIFY_TYPES:
            raise ValueError(f"notify type must be one of {', '.join(_NOTIFY_TYPES)}")
        self._ui.notify(_text(message), notify_type)

    async def confirm(self, title: Any, message: Any, timeout: Any = None, *, timeout_ms: Any = None) -> bool:
        text = _text(title)
        wait = self._wait(timeout, timeout_ms)
        async with self._prompts.prompt("confirm", text):
            return await self._ui.confirm(text, _text(message), wait)

    async def select(self, title: Any, options: Any, timeout: Any = None, *, timeout_ms: Any = None) -> str | None:
        if isinstance(options, str | bytes) or not isinstance(options, Iterable):
            raise TypeError("select options must be a list of strings")
        text = _text(title)
        choices = [_text(option) for option in options]
        wait = self._wait(timeout, timeout_ms)
        async with self._prompts.prompt("select", text):
            return await self._ui.select(text, choices, wait)

    async def input(self, title: Any, placeholder: Any = None, timeout: Any = None, *,
                    timeout_ms: Any = None) -> str | None:
        text = _text(title)
        hint = None if placeholder is None else _text(placeholder)
        wait = self._wait(timeout, timeout_ms)
        async with self._prompts.prompt("input", text):
            return await self._ui.input(text, hint, wait)

    async def editor(self, title: Any, prefill: Any = None, timeout: Any = None) -> str | None:
        """Pi's multi-line editor: the edited text, ``None`` when cancelled."""
        text = _text(title)
        initial = None if prefill is None else _text(prefill)
        wait = _timeout(timeout)
        async with self._prompts.prompt("editor", text):
            return await self._ui.editor(text, initial, wait)

    async def custom(self, factory: Any, options: Any = None) -> None:
        """Pi's terminal component dialog: an RPC client cannot show one (``None``, as Pi's RPC mode)."""
        async with self._prompts.prompt("custom", None):
            return None

    def set_status(self, key: Any, text: Any = None) -> None:
        self._ui.set_status(_text(key), None if text is None else _text(text))

    def set_widget(self, key: Any, lines: Any = None, placement: Any = "aboveEditor") -> None:
        """Lines of text (``None`` clears); like Pi's RPC mode, a component factory (a callable) is ignored."""
        if callable(lines):
            return
        if isinstance(placement, Mapping):  # Pi's options object: {"placement": ...}
            placement = placement.get("placement", "aboveEditor")
        if placement is None:
            placement = "aboveEditor"
        if placement not in _PLACEMENTS:
            raise ValueError(f"widget placement must be one of {', '.join(_PLACEMENTS)}")
        if lines is not None:
            if isinstance(lines, str | bytes) or not isinstance(lines, Iterable):
                raise TypeError("widget lines must be a list of strings")
            lines = [_text(line) for line in lines]
        self._ui.set_widget(_text(key), lines, placement)

    def set_title(self, title: Any) -> None:
        self._ui.set_title(_text(title))

    def set_editor_text(self, text: Any) -> None:
        self._ui.set_editor_text(_text(text))

    def paste_to_editor(self, text: Any) -> None:
        """Pi's RPC mode: the same as ``set_editor_text``."""
        self.set_editor_text(text)

    def get_editor_text(self) -> str:
        """Pi's RPC mode cannot ask the client synchronously: always ``""``."""
        return ""

    # Pi's terminal-only members, as its RPC mode has them.
    def on_terminal_input(self, handler: Any) -> Callable[[], None]:
        return lambda: None

    def set_working_message(self, message: Any = None) -> None:
        return None

    def set_working_visible(self, visible: Any) -> None:
        return None

    def set_working_indicator(self, options: Any = None) -> None:
        return None

    def set_hidden_thinking_label(self, label: Any = None) -> None:
        return None

    def set_footer(self, factory: Any) -> None:
        return None

    def set_header(self, factory: Any) -> None:
        return None

    def add_autocomplete_provider(self, factory: Any) -> None:
        return None

    def set_editor_component(self, factory: Any) -> None:
        return None

    def get_editor_component(self) -> None:
        return None

    def get_all_themes(self) -> list[dict[str, Any]]:
        return []

    def get_theme(self, name: Any) -> None:
        return None

    def set_theme(self, theme: Any) -> dict[str, Any]:
        return {"success": False, "error": "Theme switching not supported in RPC mode"}

    def get_tools_expanded(self) -> bool:
        return False

    def set_tools_expanded(self, expanded: Any) -> None:
        return None


