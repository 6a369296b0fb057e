"""How a turn looks: :class:`PlainView` for pipes and files, :class:`RichView` for a terminal.

Both take the same calls from ``output.Printer`` (reply text, thinking, tool blocks from
``clients/blocks.py``, notices). The plain view writes text as it arrives — the reply on stdout,
tool blocks on stderr — with nothing but the words (thinking framed by ``<thinking>`` lines).
The terminal view uses rich (imported here, on first use, only when stdout is a terminal: the
library and the one-shots into pipes never load it): the reply rendered as Markdown block by
block (the block being written shown live, words wrapped at the terminal's width), thinking
dimmed — or a ``thinking…`` spinner while it is hidden — a ``working…`` spinner until the first
word, tool blocks and coloured diffs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TextIO

from rpcd.clients.blocks import Line

DIM, UNDIM = "\x1b[2m", "\x1b[22m"
THINKING_OPEN, THINKING_CLOSE = "<thinking>\n", "</thinking>\n"
"""Off a terminal, shown thinking is framed by these lines so a reader can tell it from the answer."""
STYLES = {
    "dim": "dim", "tool.bullet": "bold cyan", "tool.name": "bold", "tool.detail": "cyan", "tool.output": "",
    "tool.error": "red", "ok": "green", "diff.add": "green", "diff.del": "red", "diff.context": "dim",
    "diff.hunk": "cyan", "diff.file": "bold", "warn": "yellow", "error": "bold red", "user": "bold",
    "note": "dim", "": "",
}
LIVE_INTERVAL = 0.05
"""Seconds between re-renders of the block being written (a fast stream is not re-rendered per word)."""
_FENCE = re.compile(r"^\s{0,3}(```|~~~)", re.MULTILINE)


class Writer(Protocol):
    def __call__(self, text: str) -> None: ...


class View(Protocol):
    def text(self, delta: str) -> None: ...
    def thinking(self, delta: str, shown: bool) -> None: ...
    def lines(self, lines: Sequence[Line]) -> None: ...
    def busy(self, label: str | None) -> None: ...
    def end_stream(self) -> None: ...
    def pause(self) -> None: ...
    def set_status(self, text: str | None) -> None: ...


def plain(line: Line) -> str:
    return "".join(text for text, _ in line)


class PlainView:
    """Text as it arrives: the reply on ``write_out`` (stdout), blocks and notices on ``err``."""

    def __init__(self, write_out: Writer, err: TextIO, *, tty: bool) -> None:
        self._out = write_out
        self._err = err
        self._tty = tty
        self._mid_line = False
        self._in_thinking = False

    def _stream(self, text: str, *, thinking: bool) -> None:
        if not text:
            return
        if thinking != self._in_thinking:
            self._close_thinking()
            if self._mid_line:
                self._out("\n")
                self._mid_line = False
            self._in_thinking = thinking
            if thinking and not self._tty:
                self._out(THINKING_OPEN)
        self._out(f"{DIM}{text}{UNDIM}" if thinking and self._tty else text)
        self._mid_line = not text.endswith("\n")

    def _close_thinking(self) -> None:
        if self._in_thinking and not self._tty:
            self._out(("\n" if self._mid_line else "") + THINKING_CLOSE)
            self._mid_line = False
        self._in_thinking = False

    def text(self, delta: str) -> None:
        self._stream(delta, thinking=False)

    def thinking(self, delta: str, shown: bool) -> None:
        if shown:
            self._stream(delta, thinking=True)

    def lines(self, lines: Sequence[Line]) -> None:
        self.end_stream()
        for line in lines:
            self._err.write(plain(line) + "\n")
        self._err.flush()

    def busy(self, label: str | None) -> None:
        pass

    def set_status(self, text: str | None) -> None:
        pass

    def end_stream(self) -> None:
        self._close_thinking()
        if self._mid_line:
            self._out("\n")
            self._mid_line = False

    def pause(self) -> None:
        self.end_stream()


class RichView:
    """The terminal: Markdown block by block, a live region for the block being written (or a
    spinner), styled tool blocks. Everything it prints goes through one rich ``Console`` on the
    terminal; ``pause`` ends the live region before anyone else writes (a question, a warning)."""

    def __init__(self, out: TextIO, *, on_broken: Callable[[], None] = lambda: None) -> None:
        from rich.console import Console

        self.console = Console(file=out, highlight=False, soft_wrap=False, emoji=False)
        self._on_broken = on_broken
        self._live: Any = None
        self._buffer = ""
        self._thought = ""
        self._busy: str | None = None
        self._status: str | None = None
        self._last_render = 0.0

    # -- the live region ------------------------------------------------------------------------

    def _renderable(self) -> Any:
        from rich.console import Group
        from rich.markdown import Markdown
        from rich.spinner import Spinner
        from rich.text import Text

        parts: list[Any] = []
        if self._thought:
            parts.append(Text(self._tail(self._thought), style="dim italic"))
        if self._buffer:
            parts.append(Markdown(self._tail(self._buffer)))
        if self._busy and not self._buffer:
            parts.append(Spinner("dots", text=Text(self._busy, style="dim")))
        if self._status:
            parts.append(Text(self._status, style="dim"))
        return Group(*parts)

    def _tail(self, text: str) -> str:
        """What fits the live region: the block's last lines (the whole block prints once it is done)."""
        room = max(4, self.console.size.height - 4)
        lines = text.split("\n")
        return "\n".join(lines[-room:])

    def _refresh(self, *, force: bool = False) -> None:
        wanted = bool(self._buffer or self._thought or self._busy or self._status)
        if not wanted:
            self._stop_live()
            return
        now = time.monotonic()
        if self._live is None:
            from rich.live import Live

            self._live = Live(self._renderable(), console=self.console, transient=True, auto_refresh=True,
                              refresh_per_second=12, redirect_stdout=False, redirect_stderr=False,
                              vertical_overflow="crop")
            self._guard(self._live.start)
            self._last_render = now
        elif force or now - self._last_render >= LIVE_INTERVAL:
            self._last_render = now
            live = self._live
            self._guard(lambda: live.update(self._renderable()))

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            self._guard(live.stop)

    def _guard(self, act: Callable[[], object]) -> None:
        try:
            act()
        except (BrokenPipeError, ConnectionResetError):
            self._on_broken()

    def _print(self, renderable: Any) -> None:
        self._stop_live()
        self._guard(lambda: self.console.print(renderable))

    # -- what the printer calls -----------------------------------------------------------------

    def text(self, delta: str) -> None:
        if self._thought:
            self._commit_thought()
        self._buffer += delta
        done = _completed_blocks(self._buffer)
        if done:
            from rich.markdown import Markdown

            self._buffer = self._buffer[len(done):]
            self._print(Markdown(done.strip("\n")))
        self._refresh()

    def thinking(self, delta: str, shown: bool) -> None:
        if shown:
            self._thought += delta
            self._refresh()
        elif self._busy != "thinking…":
            self._busy = "thinking…"
            self._refresh(force=True)

    def _commit_thought(self) -> None:
        from rich.text import Text

        thought, self._thought = self._thought.strip("\n"), ""
        if thought:
            self._print(Text(thought, style="dim italic"))

    def lines(self, lines: Sequence[Line]) -> None:
        from rich.text import Text

        self.end_stream(keep_busy=True)
        for line in lines:
            self._print(Text.assemble(*((text, STYLES.get(style, style)) for text, style in line)))
        self._refresh(force=True)

    def busy(self, label: str | None) -> None:
        self._busy = label
        self._refresh(force=True)

    def set_status(self, text: str | None) -> None:
        self._status = text
        self._refresh(force=True)

    def end_stream(self, *, keep_busy: bool = False) -> None:
        from rich.markdown import Markdown

        self._commit_thought()
        buffer, self._buffer = self._buffer.strip("\n"), ""
        if buffer:
            self._print(Markdown(buffer))
        if not keep_busy:
            self._busy = None
            self._status = None
        self._refresh(force=True)

    def pause(self) -> None:
        """Someone else writes to the terminal now: finish the live region (it comes back with the next word)."""
        self._stop_live()


def _completed_blocks(text: str) -> str:
    """The leading part of ``text`` made of finished Markdown blocks: up to its last blank line that is
    not inside a code fence (a fence's blank lines do not end it)."""
    end = 0
    for match in re.finditer(r"\n[ \t]*\n", text):
        if len(_FENCE.findall(text[:match.start()])) % 2 == 0:
            end = match.end()
    return text[:end]


def make_view(write_out: Writer, out: TextIO, err: TextIO, *, on_broken: Callable[[], None]) -> View:
    """The terminal view when stdout is a terminal and rich is installed, else the plain one."""
    tty = _isatty(out)
    if tty:
        try:
            return RichView(out, on_broken=on_broken)
        except ImportError:  # rich is a dependency; a broken install still gets readable text
            pass
    return PlainView(write_out, err, tty=tty)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
