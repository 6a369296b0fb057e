"""The full-text index of session files: SQLite FTS5 (trigram) under ``<agentDir>/rpcd/search/``.

Why an index: reading and parsing every session for each query (``search.search_files``) costs
what the files weigh — about 2-6 s for a thousand 90 KB sessions here (``scripts/bench search``),
most of it JSON and text folding. The index answers the same query in milliseconds once built,
and is kept current incrementally.

What it holds: one row per session file (its identity: device, inode, size, mtime, the bytes
around the end of what was indexed; and its facts: the state of the listing's
``SessionInfoBuilder``) and one row per searchable piece of text (``search.Unit``: entry id, kind,
text with whitespace folded), with an FTS5 ``trigram`` index over the text (``detail=none``:
the index only says which rows contain a trigram, about the size of the text itself).

Kept current, never trusted blindly: every query stats the files it covers and compares them
with their rows. Unchanged (device, inode, size, mtime) → used as is. Grown, with the same start
and the same bytes just before the indexed end → only the new complete lines are indexed (our
own appends and Pi's are append-only, so a session being written is re-read from where the
index stopped). Anything else (rewritten by a migration, truncated, replaced) → indexed again
from scratch. Files gone from a directory the query covers lose their rows; ``forget`` drops a
file at once (a deleted session's text must not outlive it in the index).

The index is a filter, not the judge: a query asks it which sessions contain every word and
phrase (``LIKE '%needle%'`` on the trigram index; ``_`` and ``%`` in a needle only widen the set),
and ``search.match_session`` then decides on the stored text with the exact rules. A needle
shorter than three characters, a regular expression, or a needle without an ASCII run of three
characters cannot be filtered: those sessions are checked on their stored text (still no JSON
parsing). So the index can make a query slower or faster, never its answer different.

Failure: SQLite without FTS5, a locked or unwritable index → ``IndexUnavailable`` (the caller
searches the files directly); a corrupt index file is moved aside and rebuilt. Privacy: the
index holds transcript text, so its directory is 0700 and its files 0600, like the sessions.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final

import attrs

from rpcd.core.files import open_regular
from rpcd.store.listing import SessionInfo, SessionInfoBuilder, recency_key
from rpcd.store.loader import parse_line
from rpcd.store.paths import make_private_dirs
from rpcd.store.search import (
    RecencyKey,
    SearchPage,
    SearchQuery,
    SessionHit,
    SessionText,
    Unit,
    entry_units,
    header_unit,
    match_session,
    search_files,
)

__all__ = ["INDEX_DIR", "IndexUnavailable", "SearchIndex", "forget_session", "index_for", "search_sessions"]

INDEX_DIR: Final = os.path.join("rpcd", "search")
INDEX_FILE: Final = "index.sqlite3"
SCHEMA_VERSION: Final = 3
"""Bumped whenever what is stored changes: an index of another version is rebuilt (3: the entries
of a version-1 file, without ids, are stored too)."""
BUSY_TIMEOUT_MS: Final = 10_000
RACY_NS: Final = 2_000_000_000
"""A file modified this close to when it was indexed may have changed again within the same mtime
tick (git's "racy" files): its matching stat is not trusted, it is read again."""
BATCH: Final = 200
"""Files (re)indexed per transaction."""
EDGE: Final = 64
"""Bytes kept from the start of the file and from just before the indexed end (the append check)."""
_MIN_NEEDLE: Final = 3

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS file(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    indexed INTEGER NOT NULL,     -- bytes read (up to the last complete line)
    indexed_at INTEGER NOT NULL DEFAULT 0,  -- when (ns): an mtime that close to it proves nothing
    head BLOB NOT NULL, tail BLOB NOT NULL,
    state TEXT                    -- the SessionInfoBuilder state (NULL: not a session)
);
CREATE TABLE IF NOT EXISTS unit(
    id INTEGER PRIMARY KEY,
    file INTEGER NOT NULL,
    entry TEXT, kind TEXT NOT NULL, text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS unit_file ON unit(file);
CREATE VIRTUAL TABLE IF NOT EXISTS unit_fts USING fts5(
    text, content='unit', content_rowid='id', tokenize='trigram', detail='none');
CREATE TRIGGER IF NOT EXISTS unit_ai AFTER INSERT ON unit BEGIN
    INSERT INTO unit_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS unit_ad AFTER DELETE ON unit BEGIN
    INSERT INTO unit_fts(unit_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
"""

_log = logging.getLogger("rpcd.store.search_index")


class IndexUnavailable(Exception):
    """The index cannot answer (no FTS5, locked, unwritable): search the files instead."""


@attrs.frozen
class _Stat:
    dev: int
    ino: int
    size: int
    mtime_ns: int


def _stat(path: str) -> _Stat | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return _Stat(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _builder_state(builder: SessionInfoBuilder) -> str | None:
    if builder.header is None:
        return None
    return json.dumps({"header": builder.header, "messages": builder.message_count, "first": builder.first_message,
                       "name": builder.name, "activity": builder.last_activity}, ensure_ascii=False, default=str)


def _builder_from(state: str) -> SessionInfoBuilder:
    data = json.loads(state)
    builder = SessionInfoBuilder()
    builder.header = data["header"]
    builder.message_count = data["messages"]
    builder.first_message = data["first"]
    builder.name = data["name"]
    builder.last_activity = data["activity"]
    return builder


def _needles(query: SearchQuery) -> tuple[list[str], list[str]]:
    """What SQLite can filter on, per token: its longest ASCII run when that has 3+ characters (the
    trigram index); else an ASCII needle as a whole (a scan, still in SQLite); else nothing."""
    if query.regex is not None:
        return [], []
    indexed: list[str] = []
    scanned: list[str] = []
    for token in query.tokens:
        needle = token.needle
        runs = "".join(ch if ch.isascii() else "\0" for ch in needle).split("\0")
        run = max(runs, key=len)
        if len(run) >= _MIN_NEEDLE:
            indexed.append(run)
        elif needle and needle.isascii():
            scanned.append(needle)
    return indexed, scanned


class SearchIndex:
    """The index of one agent dir; thread-safe (one connection, used under a lock)."""

    def __init__(self, agent_dir: str) -> None:
        self.directory = os.path.join(agent_dir, INDEX_DIR)
        self.path = os.path.join(self.directory, INDEX_FILE)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- the connection -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        try:
            make_private_dirs(self.directory)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            os.close(fd)
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                 check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise IndexUnavailable(f"cannot open the search index: {exc}") from exc
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                db.close()
                self._discard(f"schema version {version}")
                return self._connect()
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            db.close()
            if "fts5" in str(exc).lower() or "tokenizer" in str(exc).lower():
                raise IndexUnavailable(f"SQLite has no FTS5 trigram tokenizer: {exc}") from exc
            if isinstance(exc, sqlite3.OperationalError):  # locked, read-only, disk full
                raise IndexUnavailable(f"search index unusable: {exc}") from exc
            self._discard(str(exc))
            return self._connect()
        self._db = db
        return db

    def _discard(self, why: str) -> None:
        """Move a corrupt or foreign index aside (never delete what we do not understand)."""
        _log.warning("search index %s is unusable (%s); rebuilding it", self.path, why)
        aside = f"{self.path}.broken"
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.replace(self.path + suffix, aside + suffix)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- queries --------------------------------------------------------------------------------

    def search(self, files: Sequence[str], query: SearchQuery, *, directories: Sequence[str] = (),
               after: RecencyKey | None = None, limit: int = 20, max_snippets: int = 5) -> SearchPage:
        """One page of hits among ``files``, newest first (``listing.recency_key``), after ``after``:
        refresh their rows, filter by the index, then judge candidates on their text, newest first,
        until the page is full (so a query every session matches costs a page, not every session).
        ``directories``: where ``files`` were listed from (rows of files gone from them are dropped)."""
        with self._lock:
            try:
                db = self._connect()
                ids = self._refresh(db, files, directories)
                candidates = self._candidates(db, query, ids)
                ordered: list[tuple[RecencyKey, int, SessionInfo]] = []
                for path, file_id in ids.items():
                    if file_id not in candidates:
                        continue
                    info = self._info(db, file_id, path)
                    if info is not None and (after is None or recency_key(info) < after):
                        ordered.append((recency_key(info), file_id, info))
                ordered.sort(key=lambda item: item[0], reverse=True)
                hits: list[SessionHit] = []
                for _, file_id, info in ordered:
                    hit = match_session(self._session(db, file_id, info), query, max_snippets)
                    if hit is None:
                        continue
                    if len(hits) == limit:
                        return SearchPage(hits, more=True)
                    hits.append(hit)
                return SearchPage(hits, more=False)
            except sqlite3.Error as exc:
                self._reset_after(exc)
                raise IndexUnavailable(f"search index failed: {exc}") from exc

    def forget(self, path: str) -> None:
        """Drop ``path``'s rows now (its session was deleted or moved)."""
        with self._lock:
            try:
                db = self._connect()
                with _transaction(db):
                    row = db.execute("SELECT id FROM file WHERE path = ?", (path,)).fetchone()
                    if row is not None:
                        self._drop(db, row[0])
            except (sqlite3.Error, IndexUnavailable) as exc:
                _log.warning("could not drop %s from the search index: %s", path, exc)

    def _reset_after(self, exc: sqlite3.Error) -> None:
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            if self._db is not None:
                self._db.close()
                self._db = None
            self._discard(str(exc))

    def _candidates(self, db: sqlite3.Connection, query: SearchQuery, ids: dict[str, int]) -> set[int]:
        """The files among ``ids`` that may match: every needle the trigram index can look up is in
        one of their units; ASCII needles too short for it by a scan in SQLite; a regex by one pass
        over the stored text (no session is built for a file without a hit)."""
        wanted = set(ids.values())
        indexed, scanned = _needles(query)
        for needle in indexed:
            if not wanted:
                return wanted
            rows = db.execute("SELECT DISTINCT unit.file FROM unit_fts JOIN unit ON unit.id = unit_fts.rowid "
                              "WHERE unit_fts.text LIKE ?", (f"%{needle}%",))
            wanted &= {row[0] for row in rows}
        for needle in scanned:
            if not wanted:
                return wanted
            rows = db.execute("SELECT DISTINCT file FROM unit WHERE text LIKE ?", (f"%{needle}%",))
            wanted &= {row[0] for row in rows}
        if query.regex is not None and wanted:
            search = query.regex.search
            found: set[int] = set()
            for file_id, text in db.execute("SELECT file, text FROM unit"):
                if file_id in wanted and file_id not in found and search(text):
                    found.add(file_id)
            wanted = found
        return wanted

    def _info(self, db: sqlite3.Connection, file_id: int, path: str) -> SessionInfo | None:
        row = db.execute("SELECT state, mtime_ns FROM file WHERE id = ?", (file_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        return _builder_from(row[0]).finish(path, row[1] / 1e9)

    def _session(self, db: sqlite3.Connection, file_id: int, info: SessionInfo) -> SessionText:
        units = [Unit(entry, kind, text) for entry, kind, text in
                 db.execute("SELECT entry, kind, text FROM unit WHERE file = ? ORDER BY id", (file_id,))]
        return SessionText(info, tuple(units))

    # -- keeping it current ---------------------------------------------------------------------

    def _refresh(self, db: sqlite3.Connection, files: Sequence[str], directories: Sequence[str]) -> dict[str, int]:
        """Bring the rows of ``files`` up to date; ``{path: file id}`` of those that are sessions."""
        columns = "id, dev, ino, size, mtime_ns, state, indexed_at"
        known = {row[0]: row[1:] for row in db.execute(
            f"SELECT path, {columns} FROM file")} if len(files) > 50 else {}
        ids: dict[str, int] = {}
        present = set(files)
        stale: list[tuple[str, _Stat]] = []
        for path in files:
            now = _stat(path)
            if now is None:
                continue
            row = known.get(path) if known else db.execute(
                f"SELECT {columns} FROM file WHERE path = ?", (path,)).fetchone()
            if row is not None and (row[1], row[2], row[3], row[4]) == (now.dev, now.ino, now.size, now.mtime_ns) \
                    and now.mtime_ns < row[6] - RACY_NS:
                if row[5] is not None:
                    ids[path] = row[0]
                continue
            stale.append((path, now))
        for at in range(0, len(stale), BATCH):
            with _transaction(db):  # one commit per batch: a first build of 1,000 files is not 1,000 commits
                for path, now in stale[at:at + BATCH]:
                    file_id = self._index_file(db, path, now)
                    if file_id is not None:
                        ids[path] = file_id
        if directories:
            self._drop_missing(db, directories, present)
        return ids

    def _drop_missing(self, db: sqlite3.Connection, directories: Sequence[str], present: set[str]) -> None:
        dirs = {os.path.normpath(d) for d in directories}
        stale = [file_id for file_id, path in db.execute("SELECT id, path FROM file")
                 if os.path.dirname(path) in dirs and path not in present]
        if stale:
            with _transaction(db):
                for file_id in stale:
                    self._drop(db, file_id)

    def _drop(self, db: sqlite3.Connection, file_id: int) -> None:
        db.execute("DELETE FROM unit WHERE file = ?", (file_id,))
        db.execute("DELETE FROM file WHERE id = ?", (file_id,))

    def _index_file(self, db: sqlite3.Connection, path: str, now: _Stat) -> int | None:
        """(Re)index ``path`` (in the caller's transaction): from where it stopped when the file only
        grew, else from its start."""
        row = db.execute("SELECT id, dev, ino, indexed, head, tail, state FROM file WHERE path = ?",
                         (path,)).fetchone()
        try:
            fd = open_regular(path)
        except OSError:
            if row is not None:
                self._drop(db, row[0])
            return None
        try:
            start, builder = 0, SessionInfoBuilder()
            if row is not None and row[6] is not None and self._only_grew(fd, row, now):
                start, builder = row[3], _builder_from(row[6])
                file_id = row[0]
            else:
                if row is not None:
                    self._drop(db, row[0])
                file_id = db.execute(
                    "INSERT INTO file(path, dev, ino, size, mtime_ns, indexed, head, tail) "
                    "VALUES (?, 0, 0, 0, 0, 0, x'', x'')", (path,)).lastrowid
                assert file_id is not None
            indexed, units, session = self._read(fd, start, now.size, builder)
            head = os.pread(fd, EDGE, 0)
            tail = os.pread(fd, min(EDGE, indexed), indexed - min(EDGE, indexed))
        finally:
            os.close(fd)
        state = _builder_state(builder) if session else None
        db.execute("UPDATE file SET dev = ?, ino = ?, size = ?, mtime_ns = ?, indexed = ?, head = ?, tail = ?, "
                   "state = ?, indexed_at = ? WHERE id = ?",
                   (now.dev, now.ino, now.size, now.mtime_ns, indexed, head, tail, state, time.time_ns(),
                    file_id))
        if session:
            db.executemany("INSERT INTO unit(file, entry, kind, text) VALUES (?, ?, ?, ?)",
                           [(file_id, u.entry_id, u.kind, u.text) for u in units])
        else:
            db.execute("DELETE FROM unit WHERE file = ?", (file_id,))
        return file_id if session else None

    @staticmethod
    def _only_grew(fd: int, row: Any, now: _Stat) -> bool:
        _, dev, ino, indexed, head, tail, _ = row
        if (dev, ino) != (now.dev, now.ino) or now.size <= indexed or indexed < len(head):
            return False
        return bool(os.pread(fd, len(head), 0) == head and os.pread(fd, len(tail), indexed - len(tail)) == tail)

    @staticmethod
    def _read(fd: int, start: int, size: int, builder: SessionInfoBuilder) -> tuple[int, list[Unit], bool]:
        """Parse the complete lines of ``fd`` in ``[start, size)``: (end of the last complete line,
        the units, whether the file is a session). A last line without its newline that does not
        parse is left for the next refresh (it may be half written); one that parses is read, as Pi
        reads it."""
        units: list[Unit] = []
        offset = start
        for line, end, complete in _lines(fd, start, size):
            entry = parse_line(line)
            if not complete and entry is None:
                break  # a torn append in progress: read again next time
            offset = end
            if entry is not None:
                first = builder.header is None
                if not builder.add(entry):
                    return end, [], False
                if first and builder.header is not None:
                    units.append(header_unit(builder.header))  # stored: the index can filter on it
                elif isinstance(entry, dict):
                    units.extend(entry_units(entry))
        return offset, units, builder.header is not None


def _lines(fd: int, start: int, size: int, chunk: int = 1 << 20) -> Iterator[tuple[bytes, int, bool]]:
    """``(line, offset after it, ended by a newline)`` for the bytes of ``fd`` in ``[start, size)``."""
    position = start
    carry = b""
    carry_start = start
    while position < size:
        piece = os.pread(fd, min(chunk, size - position), position)
        if not piece:
            break
        position += len(piece)
        data = carry + piece
        begin = 0
        while True:
            newline = data.find(b"\n", begin)
            if newline < 0:
                break
            yield data[begin:newline], carry_start + newline + 1, True
            begin = newline + 1
        carry_start += begin
        carry = data[begin:]
    if carry:
        yield carry, carry_start + len(carry), False


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


_INDEXES: dict[str, SearchIndex] = {}
_INDEXES_LOCK = threading.Lock()


def index_for(agent_dir: str) -> SearchIndex:
    """The process's index of ``agent_dir`` (one connection per agent dir)."""
    key = os.path.abspath(agent_dir)
    with _INDEXES_LOCK:
        found = _INDEXES.get(key)
        if found is None:
            found = _INDEXES[key] = SearchIndex(key)
        return found


def search_sessions(files: Sequence[str], query: SearchQuery, *, agent_dir: str | None,
                    directories: Sequence[str] = (), after: RecencyKey | None = None, limit: int = 20,
                    max_snippets: int = 5) -> SearchPage:
    """One page of hits among ``files``: through the index of ``agent_dir``, or, when there is none
    (``agent_dir`` is ``None``) or it cannot answer, by reading the files (the same answer, slower)."""
    if agent_dir is not None:
        try:
            return index_for(agent_dir).search(files, query, directories=directories, after=after, limit=limit,
                                               max_snippets=max_snippets)
        except IndexUnavailable as exc:
            _log.warning("searching without the index: %s", exc)
    return search_files(files, query, after=after, limit=limit, max_snippets=max_snippets)


def forget_session(agent_dir: str, path: str) -> None:
    """Drop a deleted session's text from the index (if the index exists)."""
    if os.path.exists(os.path.join(agent_dir, INDEX_DIR, INDEX_FILE)):
        index_for(agent_dir).forget(os.path.abspath(path))
