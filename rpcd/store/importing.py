"""Importing a session file into a session directory without ever overwriting anything.

Pi 0.85.0 copies ``x.jsonl`` to ``x.jsonl``, ``x-1.jsonl``, ``x-2.jsonl``, ... (exclusive
create) and skips the copy when the source already is the destination. We also refuse a
source that is not a session before copying (its first parsed line must be a header, looked
for as Pi's ``readSessionHeader`` looks for it: within the first ``HEADER_SCAN_BYTES``, so a
large file without a header is refused from its first lines, in one bounded read; only when no
line parses in that first megabyte is the rest streamed, as Pi then loads the file whole), and
``import_session`` removes its own copy again when the session's stored cwd is missing (Pi
leaves it behind).

The copy streams in chunks (memory bounded by one chunk, or none where the kernel copies),
reports its progress, and refuses a source over ``max_bytes`` (default
``DEFAULT_MAX_IMPORT_BYTES``, or ``$RPCD_MAX_IMPORT_BYTES``: ``rpcd.store.reading``, the limit every
reader of session files keeps) before copying anything. Only a
regular file is read: a FIFO or a device is refused, never opened for a blocking read.
Callers on an event loop run these functions in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Callable
from typing import Any, Final

from rpcd.core.errors import (
    MissingSessionCwdError,
    SessionFileNotFoundError,
    SessionFileTooLargeError,
    SessionWriteError,
)
from rpcd.core.files import NotARegularFileError, check_regular, open_regular
from rpcd.core.jstext import js_truthy
from rpcd.store import _fs, codec
from rpcd.store import entries as E
from rpcd.store.loader import not_a_session
from rpcd.store.manager import SessionManager, assert_session_cwd_exists
from rpcd.store.paths import make_private_dirs
from rpcd.store.reading import (
    HEADER_SCAN_BYTES,
    MAX_IMPORT_BYTES_ENV,
    default_max_import_bytes,
    iter_lines,
    read_cap,
)

_MAX_SUFFIX = 10_000
_CHUNK: Final = 8 << 20
_REPORT_EVERY: Final = 1  # percent

Progress = Callable[[int, int], None]
"""``(bytes copied, bytes to copy)``; called from the copying thread."""


def _split_name(name: str) -> tuple[str, str]:
    if name.endswith(".jsonl"):
        return name[: -len(".jsonl")], ".jsonl"
    stem, ext = os.path.splitext(name)
    return stem, ext


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_import_source(source: str) -> str:
    """``source`` made absolute; ``SessionFileNotFoundError`` if missing, ``NotASessionError`` if it
    is not a regular file (a FIFO, a device, a directory: refused without being read)."""
    source = os.path.abspath(source)
    try:
        check_regular(source)
    except FileNotFoundError:
        raise SessionFileNotFoundError(f"File not found: {source}", session_path=source) from None
    except (NotARegularFileError, IsADirectoryError):
        raise not_a_session(source) from None
    except OSError as exc:
        raise SessionWriteError(f"Could not import session file: {exc.strerror}", session_path=source) from exc
    return source


def import_session_file(
    source: str, session_dir: str, *, max_bytes: int | None = None, on_progress: Progress | None = None
) -> tuple[str, bool]:
    """Copy ``source`` into ``session_dir``; returns ``(destination, copied)``.

    Raises ``SessionFileNotFoundError`` (missing source), ``NotASessionError`` (not a regular
    file), ``SessionFileTooLargeError`` (over ``max_bytes``) or ``SessionWriteError``.
    """
    source = check_import_source(source)
    with _open_source(source) as fd:
        _check_size(fd, source, max_bytes)
        return _copy_into(fd, source, session_dir, _limit(max_bytes), on_progress)


def import_session(
    source: str,
    session_dir: str,
    cwd_override: str | None = None,
    *,
    fallback_cwd: str | None = None,
    max_bytes: int | None = None,
    on_progress: Progress | None = None,
) -> SessionManager:
    """The store side of ``importFromJsonl``: check, copy, open, check the cwd.

    Raises ``NotASessionError`` before copying anything; on ``MissingSessionCwdError`` the
    copy made by this call is removed, so a retry with ``cwd_override`` reuses the name.
    """
    source = check_import_source(source)
    with _open_source(source) as fd:
        size = _check_size(fd, source, max_bytes)
        if size > 0 and not _starts_with_header(fd):
            raise not_a_session(source)
        destination, copied = _copy_into(fd, source, session_dir, _limit(max_bytes), on_progress)
    manager = SessionManager.open(destination, session_dir, cwd_override)
    try:
        assert_session_cwd_exists(manager, fallback_cwd if fallback_cwd is not None else os.getcwd())
    except MissingSessionCwdError:
        manager.close()  # let go of the copy's writer lock before the copy goes
        if copied:
            with contextlib.suppress(OSError):
                os.unlink(destination)
        raise
    return manager


def starts_with_session_header(source: str) -> bool:
    """Whether the regular file ``source`` is a session by Pi's header scan (``readSessionHeader``:
    its first line that parses is a header, within ``HEADER_SCAN_BYTES``). A file that cannot be read
    that way (``/proc/self/pagemap`` refuses reads not aligned to 8 bytes) is not one."""
    with _open_source(source) as fd:
        try:
            return _starts_with_header(fd)
        except OSError:
            return False


def _limit(max_bytes: int | None) -> int:
    return max_bytes if max_bytes is not None else default_max_import_bytes()


@contextlib.contextmanager
def _open_source(source: str) -> Any:
    try:
        fd = open_regular(source)
    except FileNotFoundError:
        raise SessionFileNotFoundError(f"File not found: {source}", session_path=source) from None
    except (NotARegularFileError, IsADirectoryError):
        raise not_a_session(source) from None
    except OSError as exc:
        raise SessionWriteError(f"Could not import session file: {exc.strerror}", session_path=source) from exc
    try:
        yield fd
    finally:
        os.close(fd)


def _check_size(fd: int, source: str, max_bytes: int | None) -> int:
    size = os.fstat(fd).st_size
    limit = _limit(max_bytes)
    if size > limit:
        raise _too_large(source, size, limit)
    return size


def _too_large(source: str, size: int | None, limit: int) -> SessionFileTooLargeError:
    seen = f"{size} bytes" if size is not None else "more"
    return SessionFileTooLargeError(
        f"Session file is too large to import: {seen}, the limit is {limit} bytes "
        f"(set {MAX_IMPORT_BYTES_ENV} to change it): {source}",
        session_path=source,
    )


_VALUE_START: Final = frozenset(b'{["-0123456789tfn')
_NON_BLANK: Final = re.compile(rb"[^ \t\r\n]")
_NOT_FOUND: Final = object()


def _starts_with_header(fd: int) -> bool:
    """Whether the first line ``JSON.parse`` accepts is a session header, found as Pi's
    ``readSessionHeader`` finds it: within the first ``HEADER_SCAN_BYTES`` (one read, nothing else
    held), so a file without a header is refused from its first lines whatever its size."""
    value = _first_parsed_line(fd)
    return isinstance(value, dict) and value.get("type") == E.SESSION and isinstance(value.get("id"), str)


def _first_parsed_line(fd: int) -> Any:
    """The first line that parses (blank and malformed lines, and ``null``/``false``/``0``/``""``,
    skipped as Pi skips them) among the lines that end within ``HEADER_SCAN_BYTES`` — a last line
    without a newline counts only when the file ends there; ``_NOT_FOUND`` when there is none."""
    data = os.pread(fd, HEADER_SCAN_BYTES + 1, 0)
    whole = len(data) <= HEADER_SCAN_BYTES  # else the line cut by the bound is not within the scan
    pos = 0
    while (found := _NON_BLANK.search(data, pos)) is not None:  # blank lines skipped in one search
        start = found.start()
        end = data.find(b"\n", start)
        if end < 0:
            if not whole:
                break
            end = len(data)
        pos = end + 1
        if data[start] not in _VALUE_START:
            continue  # a line that cannot be JSON (its first byte says so)
        try:
            value = codec.loads(memoryview(data)[start:end])
        except codec.LineError:
            continue
        if js_truthy(value):
            return value
    if whole:
        return _NOT_FOUND
    return _first_parsed_line_streamed(fd)


def _first_parsed_line_streamed(fd: int) -> Any:
    """Pi's fallback when the bounded scan finds no header (``SessionManager.open`` catches
    ``SessionHeaderScanLimitError`` and loads the file whole: a legacy header over 1 MiB, or a
    megabyte of blank lines first, still opens): the first line that parses in the whole file,
    streamed line by line (a line over ``max_line_bytes()`` skipped, never held) and stopped there."""
    size = os.fstat(fd).st_size
    os.lseek(fd, 0, os.SEEK_SET)
    for line, _ended in iter_lines(fd, cap=read_cap(size)):
        found = _NON_BLANK.search(line) if line is not None else None
        if line is None or found is None or line[found.start()] not in _VALUE_START:
            continue
        try:
            value = codec.loads(line)
        except codec.LineError:
            continue
        if js_truthy(value):
            return value
    return _NOT_FOUND


def _copy_into(
    fd: int, source: str, session_dir: str, limit: int, on_progress: Progress | None
) -> tuple[str, bool]:
    session_dir = os.path.abspath(session_dir)
    stem, ext = _split_name(os.path.basename(source))
    first = os.path.join(session_dir, stem + ext)
    if os.path.exists(first) and _same_file(first, source):
        return first, False
    try:
        make_private_dirs(session_dir)
    except OSError as exc:
        raise SessionWriteError(f"Could not import session file: {exc.strerror}", session_path=source) from exc
    for suffix in range(_MAX_SUFFIX):
        candidate = first if suffix == 0 else os.path.join(session_dir, f"{stem}-{suffix}{ext}")
        try:
            _fs.create_streamed(candidate, lambda out: _copy_stream(fd, out, source, limit, on_progress))
        except FileExistsError:
            continue
        except SessionFileTooLargeError:
            raise
        except OSError as exc:
            raise SessionWriteError(f"Could not import session file: {exc.strerror}", session_path=candidate) from exc
        return candidate, True
    raise SessionWriteError("Could not import session file: no free file name", session_path=first)


def _copy_stream(src: int, out: int, source: str, limit: int, on_progress: Progress | None) -> None:
    """Copy ``src`` from its start to EOF into ``out``, ``_CHUNK`` at a time; bounded by ``limit``."""
    total = os.fstat(src).st_size
    done = 0
    reported = -1
    kernel_copy = hasattr(os, "copy_file_range")
    buffer = bytearray()
    while True:
        count = 0
        if kernel_copy:
            try:
                count = os.copy_file_range(src, out, _CHUNK, done)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
                    raise
                kernel_copy = False
        if not kernel_copy:
            if not buffer:
                buffer = bytearray(_CHUNK)
            count = os.preadv(src, [buffer], done)
            view = memoryview(buffer)[:count]
            while view:
                view = view[os.write(out, view) :]
        if count == 0:
            break
        done += count
        if done > limit:
            raise _too_large(source, None, limit)
        if on_progress is not None:
            percent = 100 if total <= 0 else min(100, done * 100 // total)
            if percent >= reported + _REPORT_EVERY:
                reported = percent
                on_progress(done, max(total, done))
