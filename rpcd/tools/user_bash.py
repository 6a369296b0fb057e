"""A command the *client* runs (the ``bash`` wire method): Pi's ``bash-executor.js``.

The process is run by the bash tool's runner (``rpcd.tools.bash.run_shell``: the session's
shell, its own process group, SIGTERM then SIGKILL on abort or timeout). What differs from the
tool is the output, as in Pi: every chunk is decoded incrementally, stripped of ANSI escapes and
of control/format characters (``sanitizeBinaryOutput``), ``\\r`` removed, and handed to
``on_chunk`` (the ``bash_execution_update`` events: all of it, even what the result later
truncates). A rolling buffer keeps the last 100 KB of text; the result is its tail truncation
(2000 lines / 50 KB), and once more than 50 KB of raw output arrived, everything (sanitized) also
goes to ``$TMPDIR/pi-bash-<hex>.log``, named by ``fullOutputPath`` when the result is truncated.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Final

import anyio
import attrs

from rpcd.tools.base import AbortSignal
from rpcd.tools.bash import TEMP_FILE_PREFIX, run_shell
from rpcd.tools.output import create_temp_output
from rpcd.tools.sandbox import OFF as SANDBOX_OFF
from rpcd.tools.sandbox import SandboxPolicy
from rpcd.tools.truncate import DEFAULT_MAX_BYTES, truncate_tail, utf16_len

_ST: Final = "(?:\u0007|\u001b\\\\|\u009c)"
_ANSI: Final = re.compile(
    rf"(?:\u001b\][\s\S]*?{_ST})|[\u001b\u009b][\[\]()#;?]*(?:\d{{1,4}}(?:[;:]\d{{0,4}})*)?[\dA-PR-TZcf-nq-uy=><~]"
)
"""Pi's ``ansiRegex`` (OSC sequences, then CSI and related)."""
_UNSAFE: Final = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufff9-\ufffb]")
"""What ``sanitizeBinaryOutput`` drops: control characters except tab/newline/CR, format characters."""


def sanitize(text: str) -> str:
    """``sanitizeBinaryOutput(stripAnsi(text)).replace(/\\r/g, "")``."""
    return _UNSAFE.sub("", _ANSI.sub("", text)).replace("\r", "")


@attrs.frozen
class UserBashResult:
    output: str
    exit_code: int | None
    cancelled: bool
    truncated: bool
    full_output_path: str | None


class _Output:
    """The executor's accumulation (a ``ShellSink`` for ``run_shell``)."""

    def __init__(self, on_chunk: Callable[[str], None] | None) -> None:
        self.on_chunk = on_chunk
        self.data_seen = anyio.Event()
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._chunks: list[str] = []
        self._length = 0
        self._raw_bytes = 0
        self.temp_path: str | None = None
        self._temp: IO[str] | None = None

    def on_data(self, data: bytes) -> None:
        self._raw_bytes += len(data)
        self._text(self._decoder.decode(data))
        self.data_seen.set()

    def _text(self, decoded: str) -> None:
        text = sanitize(decoded)
        if self._raw_bytes > DEFAULT_MAX_BYTES:
            self.ensure_temp_file()
        if self._temp is not None:
            self._temp.write(text)
        self._chunks.append(text)
        self._length += utf16_len(text)
        while self._length > DEFAULT_MAX_BYTES * 2 and len(self._chunks) > 1:
            self._length -= utf16_len(self._chunks.pop(0))
        if self.on_chunk is not None and text:
            self.on_chunk(text)

    def ensure_temp_file(self) -> None:
        if self.temp_path is not None:
            return
        self.temp_path, fd = create_temp_output(TEMP_FILE_PREFIX)
        self._temp = os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass")
        for chunk in self._chunks:
            self._temp.write(chunk)

    async def updater(self) -> None:
        return None

    def finish(self, code: int | None, cancelled: bool) -> UserBashResult:
        self._text(self._decoder.decode(b"", final=True))
        full = "".join(self._chunks)
        tail = truncate_tail(full)
        if tail["truncated"]:
            self.ensure_temp_file()
        if self._temp is not None:
            self._temp.close()
            self._temp = None
        return UserBashResult(
            output=tail["content"] if tail["truncated"] else full,
            exit_code=None if cancelled else code,
            cancelled=cancelled,
            truncated=bool(tail["truncated"]),
            full_output_path=self.temp_path,
        )


async def execute_user_bash(
    command: str,
    cwd: str,
    *,
    signal: AbortSignal,
    env: Mapping[str, str],
    shell_path: str | None = None,
    timeout: float | None = None,
    on_chunk: Callable[[str], None] | None = None,
    run: RunCommand | None = None,
    sandbox: SandboxPolicy = SANDBOX_OFF,
) -> UserBashResult:
    """Run a client's command (inside ``sandbox``); abort (``signal``) or ``timeout`` stops it:
    ``cancelled``, no exit code. ``run`` replaces the local shell (Pi's ``BashOperations.exec``, an
    extension's ``user_bash`` ``operations``): ``await run(command, cwd, on_data, signal, timeout,
    env)`` feeds the output to ``on_data`` and answers the exit code (``None``: none); the result is
    built the same way (the extension's operations run where it says, outside rpcd's sandbox)."""
    output = _Output(on_chunk)
    try:
        if run is not None:
            code: int | None = await run(command, cwd, output.on_data, signal, timeout, env)
            stopped = None
        else:
            code, stopped = await run_shell(command, cwd, output, signal=signal, timeout=timeout, env=env,
                                            shell_path=shell_path, sandbox=sandbox)
    except BaseException:
        output.finish(None, True)
        raise
    return output.finish(code, stopped is not None or signal.aborted)


RunCommand = Callable[[str, str, Callable[[bytes], None], AbortSignal, "float | None", Mapping[str, str]],
                      Awaitable["int | None"]]
