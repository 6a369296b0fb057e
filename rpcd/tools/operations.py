"""Where the file and shell tools get their bytes and their processes: the local disk and local
processes by default, or what a front supplies instead (the ACP front: the editor's buffers, its
review of writes, its terminals).

This is Pi's ``ReadOperations`` / ``WriteOperations`` / ``EditOperations`` / ``BashOperations``
idea, cut narrower: every rule of a tool stays in the tool — path resolution, the access checks,
image detection, line windows and truncation, BOM and line-ending handling, the error texts, the
output accumulator and its temp file, the timeout. Only these steps are replaceable:

* ``read_text`` — the bytes of a file the tool will decode as UTF-8 text (``read``'s text path,
  ``edit``'s read); an editor may answer with an unsaved buffer;
* ``write_text`` — the new text of a file (``write``, ``edit``); an editor may route it through
  its review;
* :meth:`ShellOperations.exec` — run one command line and stream its output (``bash``).

A ``None`` operation means the tool's own local code runs, byte for byte what it did before. File
operations are called from the tool's worker thread (they block; an implementation that talks to
an event loop uses ``anyio.from_thread``), the shell operation on the event loop. Either raises
``ToolError`` with a message the model may read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol

import attrs

from rpcd.tools.base import AbortSignal

ReadText = Callable[[str], bytes]
"""``read_text(path)``: the file's current text, UTF-8 encoded (``path`` is absolute and passed the
tool's own checks); an editor may answer with its unsaved buffer."""
WriteText = Callable[[str, str], None]
"""``write_text(path, content)``: replace the file's text (its parent directory exists); an editor
may route it through its review."""
BeforeChange = Callable[[str], None]
"""``before_change(path)``: called (from the tool's worker thread, after the call's own checks) before
``write``/``edit`` touch ``path`` — locally or through ``write_text``; it may block until the front is
ready for the change (the ACP front: until the call's ``tool_call``, with the diff from the file's
prior text, has reached the client)."""


@attrs.frozen
class ShellExit:
    """How a command ended: its exit code (``None``: killed by a signal of its own), or that the
    tool stopped it (``aborted`` / ``timeout``)."""

    code: int | None
    stopped: Literal["aborted", "timeout"] | None = None


class ShellOperations(Protocol):
    """Runs the ``bash`` tool's command line somewhere other than a local child process."""

    async def exec(
        self,
        argv: Sequence[str],
        cwd: str,
        *,
        env: Mapping[str, str],
        on_data: Callable[[bytes], None],
        signal: AbortSignal,
        timeout: float | None,
        tool_call_id: str,
    ) -> ShellExit:
        """Run ``argv`` (the shell, its flags, the command) in ``cwd``; every output byte goes to
        ``on_data`` as it arrives. Stop it when ``signal`` fires (``stopped="aborted"``) or after
        ``timeout`` seconds (``stopped="timeout"``). ``env`` holds what the session adds to the
        environment (``PATH`` with the agent's ``bin``, the ``PI_*`` facts)."""
        ...


@attrs.frozen
class ToolOperations:
    """The replaceable I/O of one session's built-in tools (``None``: local)."""

    read_text: ReadText | None = None
    write_text: WriteText | None = None
    shell: ShellOperations | None = None
    before_change: BeforeChange | None = None
