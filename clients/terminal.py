"""Lines typed at the terminal, for whoever on the event loop asks next.

:class:`LineReader` hands lines to coroutines (``await reader.read(prompt)``). A line is read
only when someone waits for one; a waiter that is cancelled (an approval question the daemon
withdrew) leaves the line to the next waiter. Who reads the terminal:

* :meth:`LineReader.start_thread` — a daemon thread reading ``stdin`` plainly (one-shot
  ``prompt`` answering approval questions);
* :meth:`LineReader.serve` — the *main* thread, with ``readline`` (line editing, history in
  ``<agentDir>/rpcd/chat_history``) while the event loop runs on another thread (``chat``). Only
  the main thread receives ``KeyboardInterrupt``, so a Ctrl-C interrupts ``input()`` cleanly (the
  half-typed line is dropped) and is handed to the loop's ``on_interrupt``, which decides: abort
  the running turn, or — at an idle prompt, the second time — quit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TextIO

HISTORY_LENGTH = 1000


class Quit(Exception):
    """Raised from :meth:`LineReader.read` when the person asked to leave (Ctrl-C twice)."""


_QUIT = object()
_STOP = object()


def history_path(agent_dir: str | None) -> Path:
    """``<agentDir>/rpcd/chat_history`` (the agent dir as the daemon resolves it)."""
    base = agent_dir or os.environ.get("PI_CODING_AGENT_DIR") or "~/.pi/agent"
    return Path(os.path.expanduser(base)) / "rpcd" / "chat_history"


class LineReader:
    def __init__(self, loop: asyncio.AbstractEventLoop, stream: TextIO | None = None,
                 err: TextIO | None = None) -> None:
        self._loop = loop
        self._stream = stream or sys.stdin
        self._err = err or sys.stderr
        self._lines: asyncio.Queue[object] = asyncio.Queue()
        self._requests: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._requested = 0
        self._eof = False
        self._stopped = False
        self._in_input = False
        self.on_interrupt: Callable[[], bool] = lambda: True
        """Called on the loop for a Ctrl-C; True means quit."""

    # -- the loop's side ---------------------------------------------------------------

    async def read(self, prompt: str, *, history: bool = False) -> str | None:
        """Wait for the next line after showing ``prompt`` (``None`` at end of input).

        ``history``: the line is a chat prompt worth keeping in the readline history."""
        if self._lines.empty():
            if self._eof:
                return None
            if self._requested == 0:
                self._requested += 1
                self._requests.put((prompt, history))
        item = await self._lines.get()
        if item is _QUIT:
            raise Quit
        return item if isinstance(item, str) else None

    def _deliver(self, line: object) -> None:
        self._requested = max(0, self._requested - 1)
        self._eof = self._eof or line is None
        self._lines.put_nowait(line)

    def stop(self) -> None:
        """The chat is over: let the terminal's reader return (also from a pending ``input()``)."""
        self._stopped = True
        self._requests.put(_STOP)
        if self._in_input and threading.current_thread() is not threading.main_thread():
            with contextlib.suppress(Exception):
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    # -- the terminal's side -----------------------------------------------------------

    def start_thread(self) -> None:
        """Read plain lines from ``stream`` on a daemon thread."""
        threading.Thread(target=self._plain, name="rpcctl-stdin", daemon=True).start()

    def _plain(self) -> None:
        while True:
            item = self._requests.get()
            if item is _STOP:
                return
            assert isinstance(item, tuple)
            line = self._plain_line(item[0])
            self._loop.call_soon_threadsafe(self._deliver, line)
            if line is None:
                return

    def serve(self, history_file: Path | None = None) -> None:
        """Read lines with ``input()`` on the main thread until :meth:`stop` (blocks)."""
        interactive = self._stream.isatty()
        readline = _load_readline(history_file) if interactive else None
        pending: tuple[str, bool] | None = None
        while not self._stopped:
            try:
                if pending is None:
                    item = self._requests.get()
                    if item is _STOP:
                        return
                    assert isinstance(item, tuple)
                    pending = item
                prompt, keep = pending
                self._in_input = True
                try:
                    line = input(prompt) if interactive else self._plain_line(prompt)
                except EOFError:
                    line = None
                finally:
                    self._in_input = False
                pending = None
                if line is not None and keep and line.strip() and readline is not None:
                    readline.add_history(line)
                    if history_file is not None:
                        _append_history(readline, history_file)
                self._loop.call_soon_threadsafe(self._deliver, line)
                if line is None:
                    return
            except KeyboardInterrupt:
                self._in_input = False
                if self._stopped:
                    return
                self._err.write("\n")
                self._err.flush()
                decided = asyncio.run_coroutine_threadsafe(self._interrupted(), self._loop)
                try:
                    leave = decided.result(timeout=30)
                except (KeyboardInterrupt, Exception):
                    leave = True
                if leave:
                    self._loop.call_soon_threadsafe(self._deliver, _QUIT)
                    return

    def _plain_line(self, prompt: str) -> str | None:
        """Not a terminal (a script piped in): the prompt on stderr, stdout keeps only replies."""
        self._err.write(prompt)
        self._err.flush()
        line = self._stream.readline()
        return None if line == "" else line.rstrip("\n")

    async def _interrupted(self) -> bool:
        return self.on_interrupt()


def _load_readline(history_file: Path | None) -> ModuleType | None:
    try:
        import readline
    except ImportError:  # no readline (Windows without pyreadline): plain input()
        return None
    readline.set_auto_history(False)
    readline.set_history_length(HISTORY_LENGTH)
    if history_file is not None:
        with contextlib.suppress(OSError):
            readline.read_history_file(history_file)
    return readline


def _append_history(readline: ModuleType, history_file: Path) -> None:
    """Rewrite the history file after each prompt (so it survives a Ctrl-C exit); at most
    HISTORY_LENGTH lines, private to the user."""
    with contextlib.suppress(OSError):
        history_file.parent.mkdir(parents=True, exist_ok=True)
        if not history_file.exists():
            history_file.touch(mode=0o600)
        readline.write_history_file(history_file)
