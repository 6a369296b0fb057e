"""Keys from a terminal, one at a time: the chat's pickers and what is typed while a reply streams.

:class:`RawKeys` puts the terminal in cbreak mode without echo (Ctrl-C still interrupts: ``ISIG``
stays on) and decodes what arrives into :class:`Key`\\ s — printable text, Enter, Alt-Enter,
Shift-Enter (``CSI 13;2u`` / ``CSI 27;2;13~`` where the terminal reports it), arrows, Backspace,
Escape, a bracketed paste as one piece. :func:`pick` is Pi's selector: a list filtered as you
type (Pi's fuzzy match), moved with the arrows, Enter to choose, Escape to cancel, drawn on
stderr in place. Stdlib only (termios).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import tty
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rpcd.clients.fuzzy import fuzzy_filter

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
_SEQUENCES = {
    b"\x1b[A": "up", b"\x1b[B": "down", b"\x1b[C": "right", b"\x1b[D": "left", b"\x1bOA": "up", b"\x1bOB": "down",
    b"\x1b[H": "home", b"\x1b[F": "end", b"\x1b[5~": "pageup", b"\x1b[6~": "pagedown", b"\x1b[3~": "delete",
    b"\x1b\r": "alt-enter", b"\x1b\n": "alt-enter", b"\x1b[13;2u": "shift-enter", b"\x1b[27;2;13~": "shift-enter",
    b"\x1b[13;3u": "alt-enter", b"\x1b[27;3;13~": "alt-enter",
}
_SINGLE = {b"\r": "enter", b"\n": "enter", b"\x7f": "backspace", b"\x08": "backspace", b"\t": "tab",
           b"\x04": "ctrl-d", b"\x15": "ctrl-u", b"\x17": "ctrl-w", b"\x1b": "escape"}


@dataclass(frozen=True)
class Key:
    name: str
    """``text`` (printable characters or a paste), or a key name: ``enter``, ``alt-enter``, ``up`` …"""
    text: str = ""


class RawKeys:
    """The terminal on ``fd`` in cbreak mode without echo while inside ``with`` (restored after)."""

    def __init__(self, fd: int, wake: int | None = None, *, out: TextIO | None = None) -> None:
        self.fd = fd
        self.out = out
        """The terminal's output, told to bracket pastes (``CSI ?2004h``) while keys are read."""
        self.wake = wake
        """A pipe's read end: a byte written to it ends a wait in :meth:`read` early (``None`` result)."""
        self._saved: list[Any] | None = None
        self._pending = b""

    def __enter__(self) -> RawKeys:
        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd, termios.TCSANOW)  # no ICANON, no ECHO; ISIG kept (Ctrl-C interrupts)
        self._tell("\x1b[?2004h")
        return self

    def _tell(self, control: str) -> None:
        if self.out is not None:
            with contextlib.suppress(OSError, ValueError):
                self.out.write(control)
                self.out.flush()

    def __exit__(self, *exc: object) -> None:
        self._tell("\x1b[?2004l")
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)  # keep what was typed ahead

    def read(self, timeout: float | None = None) -> Key | None:
        """The next key; ``None`` after ``timeout`` or when woken."""
        while True:
            key = self._decode()
            if key is not None:
                return key
            watched = [self.fd] + ([self.wake] if self.wake is not None else [])
            ready, _, _ = select.select(watched, [], [], timeout)
            if not ready:
                return None
            if self.wake is not None and self.wake in ready:
                with contextlib.suppress(OSError):
                    os.read(self.wake, 512)
                return None
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return Key("ctrl-d")
            self._pending += chunk
            if self._pending == b"\x1b":  # a lone Escape, or the start of a sequence still coming
                more, _, _ = select.select([self.fd], [], [], 0.05)
                if more:
                    self._pending += os.read(self.fd, 4096)

    def _decode(self) -> Key | None:
        data = self._pending
        if not data:
            return None
        if data.startswith(PASTE_START):
            end = data.find(PASTE_END)
            if end < 0:
                return None  # the rest of the paste is on its way
            self._pending = data[end + len(PASTE_END):]
            return Key("paste", data[len(PASTE_START):end].decode("utf-8", "replace").replace("\r\n", "\n")
                       .replace("\r", "\n"))
        for sequence, name in _SEQUENCES.items():
            if data.startswith(sequence):
                self._pending = data[len(sequence):]
                return Key(name)
        if data[:1] == b"\x1b" and len(data) > 1 and data[1:2] in (b"[", b"O"):
            final = next((i for i in range(2, len(data)) if 0x40 <= data[i] <= 0x7E), None)
            if final is None:
                return None
            self._pending = data[final + 1:]
            return Key("unknown")
        head = data[:1]
        if head in _SINGLE:
            self._pending = data[1:]
            return Key(_SINGLE[head])
        if head < b" ":
            self._pending = data[1:]
            return Key("unknown")
        text = _printable_prefix(data)
        if not text:
            return None  # an unfinished UTF-8 character
        self._pending = data[len(text.encode("utf-8")):]
        return Key("text", text)


def _printable_prefix(data: bytes) -> str:
    end = 0
    while end < len(data) and data[end] >= 0x20 and data[end] != 0x7F:
        end += 1
    chunk = data[:end]
    for cut in range(len(chunk), max(-1, len(chunk) - 4), -1):
        try:
            return chunk[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return chunk.decode("utf-8", "replace")


@dataclass(frozen=True)
class Choice:
    label: str
    """What is shown and filtered."""
    detail: str = ""
    """Shown dimmed after the label (not filtered)."""


def pick(keys: RawKeys, title: str, choices: Sequence[Choice], *, current: int | None = None,
         out: TextIO | None = None, rows: int = 10) -> int | None:
    """Pi's selector on a terminal: the index chosen, ``None`` on Escape (or Ctrl-D)."""
    out = out or sys.stderr
    query = ""
    selected = current or 0
    drawn = 0
    top = 0
    while True:
        shown = fuzzy_filter(list(range(len(choices))), query, lambda i: choices[i].label)
        if query:
            selected = min(selected, max(0, len(shown) - 1)) if shown else 0
        top = min(max(top, selected - rows + 1), selected) if shown else 0
        lines = [f"\x1b[1m{title}\x1b[22m" + (f"  \x1b[2mfilter:\x1b[22m {query}" if query else "")]
        for position in range(top, min(len(shown), top + rows)):
            choice = choices[shown[position]]
            marker = "\x1b[36m→ " if position == selected else "  "
            detail = f"  \x1b[2m{choice.detail}\x1b[22m" if choice.detail else ""
            lines.append(f"{marker}{choice.label}\x1b[39m{detail}")
        if not shown:
            lines.append("  \x1b[2m(nothing matches)\x1b[22m")
        more = len(shown) - rows
        lines.append(f"\x1b[2m↑↓ move · type to filter · Enter select · Esc cancel"
                     f"{f' · {more} more' if more > 0 else ''}\x1b[22m")
        _redraw(out, lines, drawn)
        drawn = len(lines)
        key = keys.read()
        if key is None:
            continue
        if key.name == "enter" and shown:
            _redraw(out, [], drawn)
            return shown[selected]
        if key.name in ("escape", "ctrl-d"):
            _redraw(out, [], drawn)
            return None
        if key.name == "up":
            selected = max(0, selected - 1)
        elif key.name == "down":
            selected = min(len(shown) - 1, selected + 1) if shown else 0
        elif key.name == "pageup":
            selected = max(0, selected - rows)
        elif key.name == "pagedown":
            selected = min(len(shown) - 1, selected + rows) if shown else 0
        elif key.name == "backspace":
            query = query[:-1]
        elif key.name == "ctrl-u":
            query = ""
        elif key.name in ("text", "paste"):
            query += key.text.replace("\n", " ")
            selected = 0


def _redraw(out: TextIO, lines: Sequence[str], previous: int) -> None:
    """Replace the ``previous`` lines drawn (the cursor is below them) with ``lines``."""
    erase = f"\x1b[{previous}A\r\x1b[J" if previous else "\r\x1b[J"
    out.write(erase + "".join(f"{line}\x1b[K\n" for line in lines))
    out.flush()


@contextlib.contextmanager
def wake_pipe() -> Iterator[tuple[int, Callable[[], None]]]:
    """A pipe whose read end :class:`RawKeys` watches, and a ``wake()`` any thread may call."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)

    def wake() -> None:
        with contextlib.suppress(OSError):
            os.write(write_end, b"!")

    try:
        yield read_end, wake
    finally:
        os.close(read_end)
        os.close(write_end)
