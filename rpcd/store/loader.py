"""Reading a session file the way Pi 0.85.0 reads it, and saying what was skipped.

Pi's rules: split on LF, skip blank lines and lines ``JSON.parse`` rejects (anywhere,
including a torn last line), the first parsed line must be a header with a string id,
migrate old versions. We add what Pi leaves silent: a diagnostic with the count and
line numbers (never the content) of skipped lines.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Final

import attrs

from rpcd.core import collection
from rpcd.core.errors import NotASessionError, SessionFileTooLargeError
from rpcd.core.files import open_regular
from rpcd.core.values import Diagnostic
from rpcd.store import codec, migrations
from rpcd.store import entries as E
from rpcd.store._fs import HEAD, TAIL, FileState
from rpcd.store.reading import (
    MAX_IMPORT_BYTES_ENV,
    MAX_LINE_BYTES_ENV,
    READ_SLACK,
    iter_lines,
    max_line_bytes,
    max_session_bytes,
    read_cap,
)
from rpcd.store.records import Record

_MAX_LISTED_LINES = 20
_WHITESPACE = b" \t\r\n"
_LINE_START = frozenset(b'{["-0123456789tfn \t\r')
"""Bytes a line ``JSON.parse`` accepts can start with."""

# The fixed prefix JSON.stringify gives every entry Pi writes with the base keys first.
# A line that starts like this and ends in "}" is accepted on its skeleton; its body is
# parsed when first needed (see docs/store.md, "Lazy parsing").
_SKELETON = re.compile(
    rb'\{"type":"([A-Za-z0-9_]+)","id":"([^"\\]+)","parentId":(?:null|"([^"\\]*)"),"timestamp":"[^"\\]*"'
    rb'(?:,"message":\{"role":"([A-Za-z0-9_]+)")?'
)
_EAGER_TYPES = frozenset({E.LABEL, E.SESSION})
PAUSED_FROM_BYTES: Final = 16 << 20
"""A file this large (~6,000 entries of Pi's usual size) is read and parsed with the cyclic collector
paused (``rpcd.core.collection``): its records hold no cycles, and the collections a load of 200,000
entries triggered cost ~300 ms. A smaller one is read with it on: its young collections cost little,
and moving what it made to the oldest generation unscanned is worth doing only for a big load."""


@attrs.define
class LoadedFile:
    header: dict[str, Any]
    records: list[Record]
    diagnostics: list[Diagnostic]
    missing_final_newline: bool
    migrated: bool
    rewrite: list[bytes] | None = None
    """After a migration: every entry line as Pi's rewrite writes it (header not included)."""
    state: FileState | None = None
    """Which file was read and how much of it (set by ``load_file``): appends check it."""


def not_a_session(path: str) -> NotASessionError:
    return NotASessionError(f"Session file is not a valid pi session: {path}", session_path=path)


def parse_bytes(data: bytes, path: str, *, lazy: bool = True) -> LoadedFile | None:
    """Parse file contents; ``None`` if there is no parsable line at all (empty file).

    Raises ``NotASessionError`` if the first parsed line is not a session header. With
    ``lazy``, lines in Pi's own shape are indexed from their skeleton and parsed later;
    the last line (where a torn write would be) is always parsed in full.
    """
    return parse_chunks([data], path, lazy=lazy)


def parse_chunks(chunks: list[bytes], path: str, *, lazy: bool = True,
                 too_long: Sequence[int] = ()) -> LoadedFile | None:
    """``parse_bytes`` of the concatenation of ``chunks`` (a file read in pieces).

    Lines are found with ``bytes.find`` and matched in place (``Pattern.match(buf, pos,
    end)``): a lazily indexed line is never copied out of its chunk; its record keeps a
    span of the chunk. Only lines that need a full parse are sliced.
    """
    header: dict[str, Any] | None = None
    records: list[Record] = []
    parsed: list[tuple[dict[str, Any], bytes]] = []
    blank: list[int] = []
    bad: list[int] = []
    number = 0
    fast = False  # lazy indexing is on once a v3 header has been read
    last_lazy = 0  # line number of the latest non-blank line if it was indexed lazily, else 0
    skeleton = _SKELETON.match
    names = _NAMES
    append = records.append
    previous_b, previous = b"", ""  # the id of the latest lazily indexed line, as bytes and as its string
    for buf, pos, stop in _segments(chunks):
        find = buf.find
        while pos < stop:
            end = find(b"\n", pos, stop)
            if end < 0:
                end = stop
            number += 1
            if fast and end > pos and buf[end - 1] == 0x7D:  # "}": complete-looking, no CR
                match = skeleton(buf, pos, end)
                if match is not None:
                    kind_b, id_b, parent_b, role_b = match.groups()
                    kind = names.get(kind_b) or _name(kind_b)
                    if kind not in _EAGER_TYPES and (role_b is not None or kind != E.MESSAGE):
                        role = None if role_b is None else names.get(role_b) or _name(role_b)
                        # Node decodes with U+FFFD for invalid bytes (as codec.loads does): never raise here.
                        # Most lines' parent is the line before: its id's string is shared, not decoded again.
                        if parent_b is None:
                            parent = None
                        elif parent_b == previous_b:
                            parent = previous
                        else:
                            parent = parent_b.decode("utf-8", "replace")
                        entry_id = id_b.decode("utf-8", "replace")
                        previous_b, previous = id_b, entry_id
                        record = Record(entry_id, parent or None, kind, role, buf, None, pos, end)
                        if parent == "":
                            record.tree_parent = ""  # a falsy parentId: not walked, but compared by getTree
                        append(record)
                        last_lazy = number
                        pos = end + 1
                        continue
            if end > pos and buf[pos] not in _LINE_START:
                # Not JSON whatever follows (a torn or binary line, a sparse file's zeros): skipped
                # without copying it out, however long it is.
                bad.append(number)
                last_lazy = 0
                pos = end + 1
                continue
            raw = buf[pos:end]
            pos = end + 1
            if raw[:1] in _WHITESPACE or raw[-1:] in _WHITESPACE:
                raw = raw.strip(_WHITESPACE)
                if not raw:
                    blank.append(number)
                    continue
            last_lazy = 0
            try:
                value = codec.loads(raw)
            except codec.LineError:
                bad.append(number)
                continue
            if not E.js_truthy(value):
                bad.append(number)  # null, false, 0, "": Pi's reader drops such a line too
                continue
            if header is None:
                if not (
                    isinstance(value, dict) and value.get("type") == E.SESSION and isinstance(value.get("id"), str)
                ):
                    raise not_a_session(path)
                header = value
                if migrations.needs_migration(header):
                    lazy = False  # migration needs every entry parsed
                fast = lazy
                continue
            if not isinstance(value, dict):
                bad.append(number)  # a bare value: Pi keeps it as an entry with no fields (docs/pi-compat.md)
                continue
            if lazy:
                if value.get("type") != E.SESSION:  # a second header (Pi 0.73.1 wrote those): not an entry
                    append(Record.from_parsed(value, raw))
            else:
                parsed.append((value, raw))
    if last_lazy:
        # The last line is where a torn write would be: parse it now, as the full path would have.
        tail = records.pop()
        try:
            value = codec.loads(tail.raw)
        except codec.LineError:
            value = None
        if not isinstance(value, dict):
            bad.append(last_lazy)
        else:
            append(Record.from_parsed(value, tail.raw))
    if header is None:
        if any(chunk.strip(_WHITESPACE) for chunk in chunks):
            raise not_a_session(path)
        return None

    migrated = migrations.migrate([header, *(entry for entry, _ in parsed)])
    rewrite: list[bytes] | None = [] if migrated else None
    for entry, raw in parsed:
        line = codec.dumps(entry) if migrated else raw
        if rewrite is not None:
            rewrite.append(line)  # Pi rewrites every parsed line, a second header included
        if entry.get("type") != E.SESSION:
            append(Record.from_parsed(entry, line))

    return LoadedFile(
        header=header,
        records=records,
        diagnostics=_diagnostics(blank, bad, too_long),
        missing_final_newline=not _ends_with_newline(chunks),
        migrated=migrated,
        rewrite=rewrite,
    )


# Entry types and roles seen so far, as interned strings: most lines repeat a handful of
# them, so a dict hit replaces a decode (bounded, since a file may hold anything there).
_NAMES: dict[bytes, str] = {}
_MAX_NAMES = 256


def _name(raw: bytes) -> str:
    name = sys.intern(raw.decode())
    if len(_NAMES) < _MAX_NAMES:
        _NAMES[raw] = name
    return name


def _ends_with_newline(chunks: list[bytes]) -> bool:
    for chunk in reversed(chunks):
        if chunk:
            return chunk.endswith(b"\n")
    return False


_HOPELESS: Final = b"\x00"
"""Stands for a line cut by a chunk boundary that cannot be JSON (it starts with a byte no JSON
text starts with): the parser sees one unreadable line, and the line is never copied."""


def _carried(chunk: bytes, start: int) -> bytes:
    """The partial line ``chunk[start:]`` to carry into the next chunk (or its stand-in)."""
    if start < len(chunk) and chunk[start] not in _LINE_START:
        return _HOPELESS
    return chunk[start:]


def _segments(chunks: list[bytes]) -> Iterator[tuple[bytes, int, int]]:
    """``(buf, start, stop)`` spans holding whole lines, in order, covering all of ``chunks``.

    A line cut by a chunk boundary is joined into a small buffer of its own; one that cannot be
    JSON is not joined at all (``_HOPELESS``), so a huge binary or zero-filled line (a sparse file)
    costs no copy.
    """
    carry = b""
    for index, chunk in enumerate(chunks):
        last = index == len(chunks) - 1
        start = 0
        if carry:
            newline = chunk.find(b"\n")
            if newline < 0 and not last:
                if carry is not _HOPELESS:
                    carry += chunk
                continue
            head = len(chunk) if newline < 0 else newline + 1
            # A hopeless line is not joined: its stand-in (plus the newline that ends it) is enough.
            ending = b"\n" if newline >= 0 else b""
            joined = carry + chunk[:head] if carry is not _HOPELESS else _HOPELESS + ending
            carry = b""
            yield joined, 0, len(joined)
            start = head
        stop = len(chunk) if last else chunk.rfind(b"\n", start) + 1
        if stop <= start:  # no line ends in this chunk
            carry = _carried(chunk, start)
            continue
        carry = _carried(chunk, stop)
        yield chunk, start, stop
    if carry:
        yield carry, 0, len(carry)


# Below this size one read() is as fast as two; above it, two halves are read at once (the
# cost of reading a large file is mostly the kernel faulting in fresh pages, which two
# threads do in parallel; the GIL is released during the reads).
_PARALLEL_READ_BYTES = 8 << 20


def read_chunks(path: str) -> tuple[list[bytes], FileState]:
    """The whole file (to EOF, as one ``read()`` would, within ``rpcd.store.reading``'s limits), as
    consecutive chunks, and what was read.

    Only a regular file is read (``rpcd.core.files.open_regular``): a FIFO, a device or a socket
    at ``path`` raises ``NotARegularFileError`` at once instead of blocking or never ending.
    """
    fd = open_regular(path)
    try:
        chunks, _too_long, state = _read_session(fd, path, os.fstat(fd))
    finally:
        os.close(fd)
    return chunks, state


def _read_session(fd: int, path: str, info: os.stat_result) -> tuple[list[bytes], list[int], FileState]:
    """(chunks of whole lines, the numbers of the lines over ``max_line_bytes()`` — replaced by an
    unreadable stand-in, never held —, what was read), for ``fd`` whose ``fstat`` is ``info``.
    ``SessionFileTooLargeError`` for a file over ``max_session_bytes()``."""
    limit = max_session_bytes()
    if info.st_size > limit:
        raise SessionFileTooLargeError(
            f"Session file is too large to open: {info.st_size} bytes, the limit is {limit} bytes "
            f"(set {MAX_IMPORT_BYTES_ENV} to change it): {path}", session_path=path)
    longest = max_line_bytes()
    if info.st_size <= longest:  # no line of it can be longer: the fast read
        return _held_whole(info, _read_fd_chunks(fd, info.st_size))
    if longest >= _PARALLEL_READ_BYTES:
        blocks = _blocks_of_short_lines(fd, read_cap(info.st_size), longest)
        if blocks is not None:
            return _held_whole(info, blocks)
        os.lseek(fd, 0, os.SEEK_SET)
    chunks, too_long, total = _bounded_chunks(fd, read_cap(info.st_size), longest)
    return chunks, too_long, FileState.of(info, total, os.pread(fd, HEAD, 0), os.pread(fd, TAIL, max(0, total - TAIL)))


def _held_whole(info: os.stat_result, chunks: list[bytes]) -> tuple[list[bytes], list[int], FileState]:
    """``_read_session``'s answer for a file read as it is (no line over the limit): what was read is held."""
    return chunks, [], FileState.of(info, sum(len(c) for c in chunks), _first_bytes(chunks), _last_bytes(chunks))


def _blocks_of_short_lines(fd: int, cap: int, longest: int) -> list[bytes] | None:
    """A file larger than the longest line held, read as it is, in blocks (a line may be cut by a
    block's end, as by the fast read's halves), while no line of it is over ``longest`` (at least one
    block long, so a line inside a block is shorter); ``None`` as soon as one is. By then it holds the
    file up to that line and at most ``longest`` plus a block of the line itself (the line-by-line
    read, ``_bounded_chunks``, then skips the line without holding it). That read copies every line
    twice in a Python loop: 1,679 ms against 1,314 ms for open + context of a 495 MB file."""
    blocks: list[bytes] = []
    line = 0  # the length of the line the last block ended in (its bytes since its last newline)
    while cap > 0:
        block = os.read(fd, min(_PARALLEL_READ_BYTES, cap))
        if not block:
            break
        cap -= len(block)
        first = block.find(b"\n")
        if first < 0:
            line += len(block)
        else:
            if line + first > longest:
                return None
            line = len(block) - block.rfind(b"\n") - 1
        if line > longest:
            return None
        blocks.append(block)
    return blocks


def _read_capped(fd: int, cap: int) -> bytes:
    """Up to ``cap`` bytes from the offset to end of file (a file that reads without end, such as
    ``/proc/self/pagemap``, is read this far and no further)."""
    pieces: list[bytes] = []
    while cap > 0:
        piece = os.read(fd, cap)
        if not piece:
            break
        pieces.append(piece)
        cap -= len(piece)
    return b"".join(pieces)


def _read_fd_chunks(fd: int, size: int) -> list[bytes]:
    if size < _PARALLEL_READ_BYTES or not hasattr(os, "pread"):
        return [_read_capped(fd, read_cap(size))]
    half = size // 2
    tail: list[bytes] = []
    failure: list[BaseException] = []

    def read_tail() -> None:
        try:
            tail.append(os.pread(fd, size - half, half))
        except BaseException as exc:  # handed to the reading thread below
            failure.append(exc)

    worker = threading.Thread(target=read_tail, name="rpcd-store-read", daemon=True)
    worker.start()
    try:
        head = os.pread(fd, half, 0)
    finally:
        worker.join()
    if failure:
        raise failure[0]
    if len(head) < half or len(tail[0]) < size - half:  # shrank meanwhile: read it plainly
        os.lseek(fd, 0, os.SEEK_SET)
        return [_read_capped(fd, read_cap(size))]
    os.lseek(fd, size, os.SEEK_SET)
    rest = _read_capped(fd, READ_SLACK)  # grew meanwhile: what one read() to EOF would also have seen
    return [head, tail[0], rest] if rest else [head, tail[0]]


def _first_bytes(chunks: list[bytes]) -> bytes:
    start = b""
    for chunk in chunks:
        start += chunk[: HEAD - len(start)]
        if len(start) >= HEAD:
            break
    return start


def _last_bytes(chunks: list[bytes]) -> bytes:
    end = b""
    for chunk in reversed(chunks):
        end = chunk[-TAIL:] + end
        if len(end) >= TAIL:
            break
    return end[-TAIL:]


def load_file(path: str) -> LoadedFile | None:
    """Read and parse ``path``; ``None`` for an empty file. ``OSError`` propagates.

    Within the limits every reader keeps (``rpcd.store.reading``): a file over ``max_session_bytes()``
    is ``SessionFileTooLargeError``, read no further than its size; a line over ``max_line_bytes()`` is
    skipped as it streams past (never held) and named by a warning diagnostic."""
    fd = open_regular(path)
    try:
        info = os.fstat(fd)
        with collection.paused(info.st_size >= PAUSED_FROM_BYTES):
            chunks, too_long, state = _read_session(fd, path, info)
            loaded = parse_chunks(chunks, path, too_long=too_long)
    finally:
        os.close(fd)
    if loaded is not None:
        loaded.state = state
    return loaded


def _bounded_chunks(fd: int, cap: int, longest: int) -> tuple[list[bytes], list[int], int]:
    """The file as chunks of whole lines, each line over ``longest`` replaced by an unreadable stand-in
    (``_HOPELESS``); the numbers of those lines; how many bytes were read."""
    chunks: list[bytes] = []
    lines: list[bytes] = []
    held = 0
    too_long: list[int] = []
    for number, (line, ended) in enumerate(iter_lines(fd, cap=cap, max_line=longest), 1):
        if line is None:
            too_long.append(number)
            line = _HOPELESS
        lines.append(line + b"\n" if ended else line)
        held += len(line)
        if held >= _PARALLEL_READ_BYTES:
            chunks.append(b"".join(lines))
            lines, held = [], 0
    if lines:
        chunks.append(b"".join(lines))
    return chunks, too_long, os.lseek(fd, 0, os.SEEK_CUR)


def read_header(path: str, limit: int = 1 << 20) -> dict[str, Any] | None:
    """The header of ``path`` from at most ``limit`` bytes, or ``None`` if it has none.

    Used where Pi only peeks (``continueRecent``, listing): no full parse. A path that is not
    a regular file (a FIFO named ``*.jsonl``, a device) has no header; it is never read.
    """
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        chunk = os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)
    for value in parsed_lines(chunk):
        if isinstance(value, dict) and value.get("type") == E.SESSION and isinstance(value.get("id"), str):
            return value
        return None
    return None


def parsed_lines(data: bytes) -> Iterator[Any]:
    """Every line of ``data`` that parses, in order; blank and unparsable lines skipped, and so
    are lines parsing to ``null``/``false``/``0``/``""`` (Pi's ``parseSessionEntryLine`` rule)."""
    for line in data.split(b"\n"):
        value = parse_line(line)
        if value is not None:
            yield value


def parse_line(line: bytes) -> Any:
    """One line as Pi's ``parseSessionEntryLine`` reads it: the parsed value, or ``None`` for a blank
    or unparsable line and for one parsing to ``null``/``false``/``0``/``""``."""
    raw = line.strip(b" \t\r\n")
    if not raw:
        return None
    try:
        value = codec.loads(raw)
    except codec.LineError:
        return None
    return value if E.js_truthy(value) else None


def _lines(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:_MAX_LISTED_LINES])
    return shown + (", ..." if len(numbers) > _MAX_LISTED_LINES else "")


def _diagnostics(blank: list[int], bad: list[int], too_long: Sequence[int] = ()) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    if too_long:  # (their stand-ins were unreadable lines too: said once, as too long)
        skipped = frozenset(too_long)
        bad = [number for number in bad if number not in skipped]
        message = (f"Skipped {len(too_long)} line(s) longer than {max_line_bytes()} bytes in session file (set "
                   f"{MAX_LINE_BYTES_ENV} to read them): line {_lines(list(too_long))}")
        found.append(Diagnostic("warning", message))
    if bad:
        message = f"Skipped {len(bad)} unreadable line(s) in session file: line {_lines(bad)}"
        found.append(Diagnostic("warning", message))
    if blank:
        found.append(Diagnostic("info", f"Skipped {len(blank)} blank line(s) in session file: line {_lines(blank)}"))
    return found

