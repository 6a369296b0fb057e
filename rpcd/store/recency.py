"""The facts the listing orders sessions by, kept between lookups, so ``--continue`` (the most recent
session, ``find_most_recent_session``) reads only what changed since the last lookup.

"Most recent" has one definition (``listing.recency_key``: a session's last user/assistant activity),
which needs every message of every file: a thousand sessions of ~90 KB were a second or more of
reading and parsing per lookup, where Pi's ``findMostRecentSession`` takes the newest mtime (a few ms,
but a different order than its own picker's). Here the facts of each file (``SessionInfoBuilder``'s
state: header, message count, first message, name, last activity) are kept with the file's identity
in ``<agentDir>/rpcd/listing/facts.json``, and a lookup stats every file and compares:

* unchanged (device, inode, size, mtime) and not modified within ``RACY_NS`` of when it was read
  (a change within the same mtime tick would not show) → its facts as they are;
* grown, with the same first bytes and the same bytes just before where it was read → only the new
  complete lines are read (sessions are appended to: this is the one being written, by rpcd or Pi);
* anything else (rewritten, truncated, replaced), or no entry → read from the start, as the listing
  reads it (``listing.build_session_info``: the same line limits, an unterminated last line counted
  when it parses but read again next time).

The result is the listing's, never an approximation: ``tests/store/test_recency.py`` checks it
against the listing after random appends, rewrites, truncations, deletions and torn lines. The cache
is a cache: a missing, unreadable or foreign file is ignored and written anew; it is replaced
atomically (temporary file + rename, 0600 in a 0700 directory: it holds first messages); processes
racing to write it are harmless (each entry is checked against the file's stat before use). Files
too large to open (``reading.max_session_bytes``) are not cached: the listing reads their header only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple

from rpcd.core import codec
from rpcd.core.durable import create_temporary
from rpcd.core.files import open_regular
from rpcd.store.listing import SessionInfo, SessionInfoBuilder, _filters_by_cwd, _jsonl_files
from rpcd.store.loader import parse_line
from rpcd.store.paths import get_agent_dir, make_private_dirs
from rpcd.store.reading import max_line_bytes, max_session_bytes

CACHE_DIR: Final = os.path.join("rpcd", "listing")
CACHE_FILE: Final = "facts.json"
VERSION: Final = 1
RACY_NS: Final = 2_000_000_000
"""A file modified this close to when it was read may have changed again within the same mtime tick."""
EDGE: Final = 64
"""Bytes kept from the start of the file and from just before where it was read (the append check)."""
_BLOCK: Final = 1 << 20
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
_FIELDS: Final = 11


class Recency(NamedTuple):
    """What ``listing.recency_key`` orders a session by: its ``modified`` time as whole milliseconds
    (the listing's datetimes hold whole milliseconds, so the order is the same), and its header's cwd."""

    modified_ms: int
    cwd: str


def _recency(info: SessionInfo) -> Recency:
    return Recency((info.modified - _EPOCH) // _MS, info.cwd)


def _state(builder: SessionInfoBuilder) -> dict[str, Any]:
    return {"header": builder.header, "messages": builder.message_count, "first": builder.first_message,
            "name": builder.name, "activity": builder.last_activity}


def _builder(state: dict[str, Any]) -> SessionInfoBuilder:
    builder = SessionInfoBuilder()
    builder.header = state["header"]
    builder.message_count = state["messages"]
    builder.first_message = state["first"]
    builder.name = state["name"]
    builder.last_activity = state["activity"]
    return builder


def _lines(fd: int, start: int, end: int) -> Iterator[tuple[bytes | None, int, bool]]:
    """``(line, offset after it, ended by a newline)`` for the bytes of ``fd`` in ``[start, end)``; a line
    longer than ``max_line_bytes()`` is ``None`` (read past, never held), as ``reading.iter_lines`` has it."""
    longest = max_line_bytes()
    position = start
    pending: list[bytes] = []
    held = 0
    too_long = False
    while position < end:
        block = os.pread(fd, min(_BLOCK, end - position), position)
        if not block:
            break
        begin = 0
        while True:
            newline = block.find(b"\n", begin)
            if newline < 0:
                break
            piece = block[begin:newline]
            line = None if too_long or held + len(piece) > longest else b"".join([*pending, piece])
            yield line, position + newline + 1, True
            pending, held, too_long = [], 0, False
            begin = newline + 1
        rest = block[begin:]
        if rest and not too_long:
            held += len(rest)
            if held > longest:
                pending, too_long = [], True
            else:
                pending.append(rest)
        position += len(block)
    if pending or too_long:
        yield (None if too_long else b"".join(pending)), position, False


class _Read:
    """What reading one file (or the new part of it) found."""

    __slots__ = ("builder", "read_to", "session", "torn")

    def __init__(self, builder: SessionInfoBuilder, read_to: int) -> None:
        self.builder = builder
        self.read_to = read_to
        self.session = True
        self.torn: Any = None
        """An unterminated last line that parses (counted now, read again next time)."""


def _read(fd: int, start: int, end: int, builder: SessionInfoBuilder) -> _Read:
    found = _Read(builder, start)
    for line, after, complete in _lines(fd, start, end):
        entry = parse_line(line) if line is not None else None
        if not complete:
            found.torn = entry
            break
        found.read_to = after
        if entry is not None and not builder.add(entry):
            found.session = False
            return found
    return found


def _finish(found: _Read, path: str, mtime_ns: int) -> SessionInfo | None:
    builder = found.builder
    if found.torn is not None:
        builder = _builder(_state(builder))  # the cached state stays at the last complete line
        if not builder.add(found.torn):
            return None
    return builder.finish(path, mtime_ns / 1e9)


class FactsCache:
    """The facts of one agent dir's session files (see the module doc). Not thread-safe: one lookup at a time."""

    def __init__(self, agent_dir: str) -> None:
        self.directory = os.path.join(agent_dir, CACHE_DIR)
        self.path = os.path.join(self.directory, CACHE_FILE)
        self._entries: dict[str, list[Any]] = {}
        self._changed = False
        self._max_bytes = 0

    def recency(self, paths: Sequence[str], directories: Iterable[str] = ()) -> dict[str, Recency]:
        """The ``Recency`` of each of ``paths`` that is a session; entries of files gone from
        ``directories`` are dropped. The cache file is rewritten when anything changed."""
        self._load()
        self._max_bytes = max_session_bytes()
        out: dict[str, Recency] = {}
        for path in paths:
            found = self._fact(path)
            if found is not None:
                out[path] = found
        gone_from = {os.path.normpath(d) for d in directories}
        if gone_from:
            present = set(paths)
            for path in [p for p in self._entries
                         if os.path.normpath(os.path.dirname(p)) in gone_from and p not in present]:
                del self._entries[path]
                self._changed = True
        if self._changed:
            self._save()
        return out

    # -- one file --------------------------------------------------------------------------------

    def _fact(self, path: str) -> Recency | None:
        try:
            info = os.stat(path)
        except OSError:
            self._forget(path)
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > self._max_bytes:
            self._forget(path)
            if stat.S_ISREG(info.st_mode):
                from rpcd.store.listing import build_session_info

                big = build_session_info(path)  # too large to open: the listing reads its header only
                return _recency(big) if big is not None else None
            return None
        entry = self._entries.get(path)
        identity = [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]
        if entry is not None and entry[:4] == identity and entry[4] == info.st_size \
                and info.st_mtime_ns < entry[5] - RACY_NS:
            return Recency(entry[9], entry[10]) if entry[8] is not None else None
        try:
            fd = open_regular(path)
        except OSError:
            self._forget(path)
            return None
        try:
            found = self._refresh(fd, path, entry, info)
            head = os.pread(fd, EDGE, 0)
            tail = os.pread(fd, min(EDGE, found.read_to), found.read_to - min(EDGE, found.read_to))
        except OSError:
            self._forget(path)
            return None
        finally:
            os.close(fd)
        state = _state(found.builder) if found.session and found.builder.header is not None else None
        finished = _finish(found, path, info.st_mtime_ns) if state is not None else None
        recency = _recency(finished) if finished is not None else None
        self._entries[path] = [*identity, found.read_to, time.time_ns(), head.hex(), tail.hex(),
                               state if finished is not None else None, *(recency or (0, ""))]
        self._changed = True
        return recency

    @staticmethod
    def _refresh(fd: int, path: str, entry: list[Any] | None, info: os.stat_result) -> _Read:
        """Read what is new when the file only grew since ``entry``, else all of it."""
        if entry is not None and entry[8] is not None and (entry[0], entry[1]) == (info.st_dev, info.st_ino):
            read_to, head, tail = entry[4], bytes.fromhex(entry[6]), bytes.fromhex(entry[7])
            if read_to <= info.st_size and len(head) <= read_to and os.pread(fd, len(head), 0) == head \
                    and os.pread(fd, len(tail), read_to - len(tail)) == tail:
                return _read(fd, read_to, info.st_size, _builder(entry[8]))
        return _read(fd, 0, info.st_size, SessionInfoBuilder())

    def _forget(self, path: str) -> None:
        if self._entries.pop(path, None) is not None:
            self._changed = True

    # -- the cache file ----------------------------------------------------------------------------

    def _load(self) -> None:
        self._changed = False
        try:
            with open(self.path, "rb") as handle:
                data = codec.loads(handle.read())
        except (OSError, ValueError):
            self._entries = {}
            return
        entries = data.get("files") if isinstance(data, dict) and data.get("version") == VERSION else None
        self._entries = {path: entry for path, entry in entries.items()
                         if isinstance(entry, list) and len(entry) == _FIELDS} if isinstance(entries, dict) else {}

    def _save(self) -> None:
        """Replace the cache file (a failure only means the next lookup reads more)."""
        with contextlib.suppress(OSError):
            make_private_dirs(self.directory)
            fd, temp = create_temporary(self.directory, ".facts-", ".tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(codec.dumps({"version": VERSION, "files": self._entries}))
                os.replace(temp, self.path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        self._changed = False


def find_most_recent_session(
    cwd: str, directory: str, *, custom_dir: bool = False, agent_dir: str | None = None
) -> str | None:
    """The session ``list_sessions`` would list first (``recency_key``), among files whose header is
    valid (and, in a custom dir, whose cwd matches). The facts come from the agent dir's facts cache
    (``rpcd.store.recency``: only what changed since the last lookup is read)."""
    filter_cwd = _filters_by_cwd(directory, cwd, custom_dir, agent_dir)
    cache = FactsCache(agent_dir if agent_dir is not None else get_agent_dir())
    facts = cache.recency(_jsonl_files(directory), [directory])
    candidates = [(fact.modified_ms, path) for path, fact in facts.items() if not (filter_cwd and fact.cwd != cwd)]
    return max(candidates)[1] if candidates else None
