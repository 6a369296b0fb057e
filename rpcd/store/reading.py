"""How much of a session file anything here reads, and the one line reader that keeps to it.

A session file is named by a client or found in a directory, so it may be anything: a file with one
600 MiB line, ``/proc/self/pagemap`` (a "regular file" of size 0 that reads without end), a file that
keeps growing. Every reader of session files — the load of a session, the listing, ``--continue``,
the full-text search, the library's checks — keeps to the same limits:

``max_session_bytes()``
    a file larger than this is not read whole (loading it is ``SessionFileTooLargeError``; the listing
    shows it from its header): ``$RPCD_MAX_IMPORT_BYTES``, else 1 GiB — the import's limit;
``max_line_bytes()``
    a line longer than this is never held: it is skipped as it streams past (a warning diagnostic
    names it when a session is loaded): ``$RPCD_MAX_LINE_BYTES``, else 64 MiB;
``HEADER_SCAN_BYTES``
    a session's header is looked for in the first 1 MiB (Pi's ``readSessionHeader``);
``READ_SLACK``
    a file is read up to the size it had when opened plus this much (a file still being appended to
    is read as far as that; ``/proc`` files, whose size says 0, are read this far and no further).

Readers run in worker threads (the fronts and the runtime call them off the event loop).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Final

MAX_IMPORT_BYTES_ENV: Final = "RPCD_MAX_IMPORT_BYTES"
DEFAULT_MAX_IMPORT_BYTES: Final = 1 << 30
MAX_LINE_BYTES_ENV: Final = "RPCD_MAX_LINE_BYTES"
DEFAULT_MAX_LINE_BYTES: Final = 64 << 20
READ_SLACK: Final = 1 << 20
HEADER_SCAN_BYTES: Final = 1 << 20
"""Pi's ``MAX_SESSION_HEADER_SCAN_BYTES`` (``readSessionHeader``): a session's header — the first line
``JSON.parse`` accepts — is looked for in this many bytes of the file, never further."""
_BLOCK: Final = 1 << 20


def _positive(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def max_session_bytes() -> int:
    """The largest session file read whole (``$RPCD_MAX_IMPORT_BYTES``, else 1 GiB)."""
    return _positive(MAX_IMPORT_BYTES_ENV, DEFAULT_MAX_IMPORT_BYTES)


def default_max_import_bytes() -> int:
    """The import's limit: the same number (``importJsonl`` copies no more than a load would read)."""
    return max_session_bytes()


def max_line_bytes() -> int:
    """The longest line held (``$RPCD_MAX_LINE_BYTES``, else 64 MiB)."""
    return _positive(MAX_LINE_BYTES_ENV, DEFAULT_MAX_LINE_BYTES)


def read_cap(size: int) -> int:
    """How far a file of ``size`` bytes (when opened) is read."""
    return max(size, 0) + READ_SLACK


def iter_lines(fd: int, *, cap: int, max_line: int | None = None) -> Iterator[tuple[bytes | None, bool]]:
    """The lines of the file at ``fd`` from its offset, each without its newline and with whether one
    ended it: ``(line, True)``; a line longer than ``max_line`` (default ``max_line_bytes()``) is
    ``(None, …)`` — its bytes were read past, never held. Reads ``cap`` bytes at most, 1 MiB at a time:
    memory stays bounded by the longest line kept plus one read."""
    longest = max_line_bytes() if max_line is None else max_line
    pending: list[bytes] = []
    pending_len = 0
    skipping = False
    left = cap
    while left > 0:
        data = os.read(fd, min(_BLOCK, left))
        if not data:
            break
        left -= len(data)
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                if not skipping:
                    pending_len += len(data) - start
                    if pending_len > longest:
                        skipping, pending = True, []
                    else:
                        pending.append(data[start:])
                break
            if skipping or pending_len + newline - start > longest:
                yield None, True
            else:
                piece = data[start:newline]
                yield (b"".join((*pending, piece)) if pending else piece), True
            skipping, pending, pending_len = False, [], 0
            start = newline + 1
    if skipping:
        yield None, False
    elif pending:
        yield b"".join(pending), False
