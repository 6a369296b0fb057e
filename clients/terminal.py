"""The terminal, owned by one thread, serving whoever on the event loop asks next.

:class:`LineReader` hands the loop what the person types: a line (``await reader.read(prompt)``),
a choice from a list (``await reader.pick(title, choices)``), and — while a reply streams — each
key as it is pressed (``reader.keys_on(callback)`` … ``reader.keys_off()``). A request is served
only when someone waits for it; a waiter that is cancelled (an approval question the daemon
withdrew) leaves the line to the next one. Who reads the terminal:

* :meth:`LineReader.start_thread` — a daemon thread reading ``stdin`` plainly (one-shot
  ``prompt`` answering approval questions);
* :meth:`LineReader.serve` — the *main* thread (``chat``), with ``readline`` for lines: editing,
  history in ``<agentDir>/rpcd/chat_history``, a bracketed paste kept as one multi-line prompt,
  Shift-Enter / Alt-Enter for a new line (Shift-Enter where the terminal reports it: rpcctl asks
  for xterm's ``modifyOtherKeys``), a line ending ``\\`` continued on the next. Between lines the
  terminal is in cbreak mode without echo (``clients/keys.py``), so keys typed while a reply
  streams are the chat's to show and send, never echoed into the reply. Only the main thread
  receives ``KeyboardInterrupt``, so a Ctrl-C interrupts cleanly (a half-typed line is dropped)
  and is handed to the loop's ``on_interrupt``, which decides: abort the running turn, or — at an
  idle prompt, the second time — quit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import sys
import termios
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from rpcd.clients.keys import Choice, Key, RawKeys, pick, wake_pipe

HISTORY_LENGTH = 1000
CONTINUATION_PROMPT = "… "
REPORT_MODIFIED_KEYS, DEFAULT_KEYS = "\x1b[>4;1m", "\x1b[>4m"
"""xterm's modifyOtherKeys level 1 (Shift-Enter reported as ``CSI 27;2;13~``), and back to the default."""
_READLINE_BINDINGS = (
    "set enable-bracketed-paste on",  # a paste arrives as one piece, its newlines kept (Python turns it off)
    r'"\e[13;2u": "\C-v\C-j"',  # Shift-Enter (CSI u terminals): a newline in the prompt
    r'"\e[27;2;13~": "\C-v\C-j"',  # Shift-Enter (modifyOtherKeys)
    r'"\e\C-m": "\C-v\C-j"',  # Alt-Enter
)


class Quit(Exception):
    """Raised from :meth:`LineReader.read` when the person asked to leave (Ctrl-C twice)."""


_QUIT = object()
_STOP = object()
_KEYS = object()


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
        self._on_key: Callable[[Key], None] | None = None
        self._wake: Callable[[], None] = lambda: None
        self._served = False
        """:meth:`serve` reads the terminal (keys and pickers possible); the plain thread reads lines only."""
        self.on_interrupt: Callable[[], bool] = lambda: True
        """Called on the loop for a Ctrl-C; True means quit."""

    @property
    def interactive(self) -> bool:
        """A person at a terminal, served by :meth:`serve` (keys and pickers); else lines are read plainly."""
        return self._served and self._tty()

    def _tty(self) -> bool:
        try:
            return self._stream.isatty()
        except (AttributeError, ValueError):
            return False

    # -- the loop's side ---------------------------------------------------------------

    async def read(self, prompt: str, *, history: bool = False, prefill: str = "") -> str | None:
        """Wait for the next line after showing ``prompt`` (``None`` at end of input).

        ``history``: a chat prompt (kept in the readline history, continued after a ``\\``);
        ``prefill``: text already in the line (what was typed while a reply streamed)."""
        if self._lines.empty():
            if self._eof:
                return None
            if self._requested == 0:
                self._requested += 1
                self._post(("line", prompt, history, prefill))
        item = await self._lines.get()
        if item is _QUIT:
            raise Quit
        return item if isinstance(item, str) else None

    async def pick(self, title: str, choices: Sequence[Choice], *, current: int | None = None) -> int | None:
        """The index of the choice the person picks, ``None`` if they cancel. At a terminal: Pi's
        selector (filter as you type, arrows, Enter, Escape); otherwise a numbered list and a line."""
        if not choices:
            return None
        if not self.interactive:
            listing = "".join(f"\n  {i + 1}. {c.label}{'  ' + c.detail if c.detail else ''}"
                              for i, c in enumerate(choices))
            answer = (await self.read(f"{title}{listing}\nnumber (empty: cancel): ") or "").strip()
            return int(answer) - 1 if answer.isdigit() and 0 < int(answer) <= len(choices) else None
        done: asyncio.Future[int | None] = self._loop.create_future()
        self._post(("pick", title, list(choices), current, done))
        return await done

    def keys_on(self, on_key: Callable[[Key], None]) -> None:
        """Hand every key to ``on_key`` (on the loop) until :meth:`keys_off` (a terminal only)."""
        if self.interactive:
            self._on_key = on_key
            self._post(_KEYS)

    def keys_off(self) -> None:
        if self._on_key is not None:
            self._on_key = None
            self._wake()

    def _post(self, request: object) -> None:
        self._requests.put(request)
        self._wake()

    def _deliver(self, line: object) -> None:
        self._requested = max(0, self._requested - 1)
        self._eof = self._eof or line is None
        self._lines.put_nowait(line)

    def _key(self, key: Key) -> None:
        if self._on_key is not None:
            self._on_key(key)

    def stop(self) -> None:
        """The chat is over: let the terminal's reader return (also from a pending ``input()``)."""
        self._stopped = True
        self._on_key = None
        self._post(_STOP)
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
            if not isinstance(item, tuple) or item[0] != "line":
                continue
            line = self._plain_line(item[1])
            self._loop.call_soon_threadsafe(self._deliver, line)
            if line is None:
                return

    def serve(self, history_file: Path | None = None) -> None:
        """Serve the loop's requests on the main thread until :meth:`stop` (blocks)."""
        self._served = True
        interactive = self.interactive
        readline = _load_readline(history_file) if interactive else None
        with wake_pipe() as (wake_read, wake):
            self._wake = wake
            pending: object = None
            while not self._stopped:
                try:
                    if pending is None:
                        pending = self._next(wake_read) if interactive else self._requests.get()
                    if pending is _STOP:
                        return
                    request = pending
                    if request is _KEYS or request is None:
                        pending = None
                        continue
                    assert isinstance(request, tuple)
                    if request[0] == "pick":
                        _, title, choices, current, done = request
                        with RawKeys(self._fd(), out=self._err) as keys:
                            chosen = pick(keys, title, choices, current=current, out=self._err)
                        self._loop.call_soon_threadsafe(_settle, done, chosen)
                        pending = None
                        continue
                    _, prompt, keep, prefill = request
                    line = self._line(prompt, keep, prefill, readline, history_file)
                    pending = None
                    self._loop.call_soon_threadsafe(self._deliver, line)
                    if line is None:
                        return
                except KeyboardInterrupt:
                    self._in_input = False
                    if self._stopped:
                        return
                    if isinstance(pending, tuple) and pending[0] == "line":
                        pending = (*pending[:3], "")  # asked again, the half-typed line dropped
                    elif isinstance(pending, tuple) and pending[0] == "pick":
                        self._loop.call_soon_threadsafe(_settle, pending[4], None)  # a Ctrl-C cancels it
                        pending = None
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

    def _next(self, wake_read: int) -> object:
        """The next request; meanwhile, while keys are wanted, the keys (cbreak, no echo)."""
        while True:
            with contextlib.suppress(queue.Empty):
                request = self._requests.get_nowait()
                if request is not _KEYS:
                    return request
            if self._on_key is None:
                with _no_echo(self._fd()):  # typed before the next prompt: kept for it, not echoed now
                    return self._requests.get()
            with RawKeys(self._fd(), wake_read, out=self._err) as keys:
                while self._on_key is not None and self._requests.empty():
                    key = keys.read()
                    if key is not None:
                        self._loop.call_soon_threadsafe(self._key, key)

    def _fd(self) -> int:
        return self._stream.fileno()

    def _line(self, prompt: str, keep: bool, prefill: str, readline: ModuleType | None,
              history_file: Path | None) -> str | None:
        if readline is None:
            return self._plain_line(prompt)
        parts: list[str] = []
        while True:
            line = self._input(readline, prompt if not parts else CONTINUATION_PROMPT,
                               prefill if not parts else "", report_keys=keep)
            if line is None:
                return "\n".join(parts) if parts else None
            if keep and line.endswith("\\") and not line.endswith("\\\\"):
                parts.append(line[:-1])  # `\` at the end: the prompt goes on on the next line
                continue
            parts.append(line)
            break
        text = "\n".join(parts)
        if keep and text.strip():
            readline.add_history(text)
            if history_file is not None:
                _append_history(readline, history_file)
        return text

    def _input(self, readline: ModuleType, prompt: str, prefill: str, *, report_keys: bool) -> str | None:
        if prefill:
            def hook() -> None:
                readline.insert_text(prefill)
                readline.redisplay()

            readline.set_pre_input_hook(hook)
        self._in_input = True
        if report_keys:
            self._control(REPORT_MODIFIED_KEYS)
        try:
            return input(prompt)
        except EOFError:
            return None
        finally:
            self._in_input = False
            if report_keys:
                self._control(DEFAULT_KEYS)
            if prefill:
                readline.set_pre_input_hook(None)

    def _control(self, sequence: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._err.write(sequence)
            self._err.flush()

    def _plain_line(self, prompt: str) -> str | None:
        """Not a terminal (a script piped in): the prompt on stderr, stdout keeps only replies; a
        line ending ``\\`` goes on on the next one."""
        self._err.write(prompt)
        self._err.flush()
        parts: list[str] = []
        while True:
            line = self._stream.readline()
            if line == "":
                return "\n".join(parts) if parts else None
            line = line.rstrip("\n")
            if line.endswith("\\") and not line.endswith("\\\\"):
                parts.append(line[:-1])
                continue
            parts.append(line)
            return "\n".join(parts)

    async def _interrupted(self) -> bool:
        return self.on_interrupt()


@contextlib.contextmanager
def _no_echo(fd: int) -> Iterator[None]:
    """The terminal without echo (still line-buffered) while nobody reads it."""
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _load_readline(history_file: Path | None) -> ModuleType | None:
    try:
        import readline
    except ImportError:  # no readline (Windows without pyreadline): plain input()
        return None
    readline.set_auto_history(False)
    readline.set_history_length(HISTORY_LENGTH)
    if "libedit" not in (readline.__doc__ or ""):
        for binding in _READLINE_BINDINGS:
            readline.parse_and_bind(binding)
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
