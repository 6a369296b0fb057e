"""``SessionManager``: one session as an append-only tree, persisted the way Pi 0.85.0 does.

Invariants kept by every operation (and checked by the property tests):
- ``parentId`` of a new entry is the leaf at the time it was appended; the leaf then moves to it.
- the file is append-only once it exists; lines we did not write are never rewritten
  (except Pi's own v1/v2 migration) and never overwritten; new files use exclusive create.
- a failed write leaves memory as it was before the call (entry removed, leaf restored)
  and raises ``SessionWriteError``.
- nothing is on disk for a new session before its first assistant message; then all buffered
  lines are written at once (Pi 0.85.0's flush rule); an opened existing file counts as flushed.
- while ``defer_sync`` is on (an agent run), an append returns once written and its fsync overlaps
  what follows; every later mutation, ``settle`` and ``synced`` wait for it first, so at most one entry
  is not yet durable and nothing is built on it: a failed fsync undoes that entry (file cut back,
  memory as before it) and raises ``SessionWriteError`` there.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
import re
import weakref
from collections.abc import Callable, Container, Iterable
from typing import Any, Concatenate, Final, Literal, ParamSpec, TypeVar

import attrs

from rpcd.core import collection
from rpcd.core.errors import (
    InvalidEntryError,
    MissingSessionCwdError,
    SessionFileNotFoundError,
    SessionNotSavedError,
    SessionWriteError,
    StoreError,
)
from rpcd.core.files import NotARegularFileError
from rpcd.core.jstext import content_text
from rpcd.core.values import Diagnostic, ModelRef
from rpcd.store import _fs, codec, writer_lock
from rpcd.store import entries as E
from rpcd.store._ids import file_timestamp, iso_now, js_date_ms, new_entry_id, uuid7, validate_session_id
from rpcd.store.context import SessionContext, build_session_context
from rpcd.store.listing import SessionInfo, list_sessions
from rpcd.store.loader import LoadedFile, load_file, not_a_session
from rpcd.store.paths import default_session_dir, make_private_dirs
from rpcd.store.recency import find_most_recent_session
from rpcd.store.records import (
    UNDEFINED,
    CorruptRecordError,
    EntryKey,
    Record,
    json_of_key,
    key_is_truthy,
    key_of,
)

T = TypeVar("T")
P = ParamSpec("P")
PAUSED_FROM_RECORDS: Final = 10_000
"""A context built over this many records parses thousands of bodies: with the cyclic collector paused
(``rpcd.core.collection``), as a big file is read (``rpcd.store.loader.PAUSED_FROM_BYTES``)."""
_NEWLINES_RE = re.compile(r"[\r\n]+")
NOT_SAVED_MESSAGE = (
    "This session has not been saved yet. Wait for the first assistant response before cloning or forking it."
)


class _LockSlot:
    """The writer lock a manager holds (at most one file at a time); released when replaced,
    on ``close()`` and, as a safety net, when the manager is garbage-collected."""

    __slots__ = ("lock",)

    def __init__(self) -> None:
        self.lock: writer_lock.WriterLock | None = None

    def set(self, lock: writer_lock.WriterLock | None) -> None:
        previous, self.lock = self.lock, lock
        if previous is not None and previous is not lock:
            previous.release()

    def release(self) -> None:
        self.set(None)


@attrs.frozen
class _Undo:
    """What an append changed besides adding its record: enough to take it back."""

    record: Record
    leaf: EntryKey | None
    has_assistant: bool
    label: tuple[str, str | None, str | None] | None
    """For a label entry: its target, and that target's label and timestamp before it."""
    file_state: _fs.FileState | None
    needs_newline: bool


@attrs.frozen
class _Unsynced:
    """The last append, written but not yet durable (``defer_sync``)."""

    pending: _fs.PendingSync
    undo: _Undo


def _settles(method: Callable[Concatenate[SessionManager, P], T]) -> Callable[Concatenate[SessionManager, P], T]:
    """A mutator: the last append's fsync is awaited first (``settle``), so nothing is built on an
    entry that may yet be undone."""

    @functools.wraps(method)
    def settled_first(self: SessionManager, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if self._unsynced is not None:
            self.settle()
        return method(self, *args, **kwargs)

    return settled_first


@attrs.frozen
class ForkPoint:
    """Where a fork/clone of an entry branches: the new leaf (``None``: an empty session whose parent is
    this one) and, for a fork before a user message, that message's text."""

    leaf_id: str | None
    selected_text: str | None = None


@attrs.frozen
class ForkResult:
    """Where a fork/clone landed. ``session_file`` is ``None`` for in-memory sessions."""

    session_file: str | None
    selected_text: str | None = None


class SessionManager:
    """Pi's ``SessionManager`` (0.85.0 semantics), with snake_case names."""

    def __init__(self, cwd: str, session_dir: str, persist: bool) -> None:
        """Use the ``create``/``open``/``in_memory``/... constructors."""
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._session_file: str | None = None
        self._session_id = ""
        self._header: dict[str, Any] = {}
        self._header_raw: bytes | None = None
        self._records: builtins.list[Record] = []
        self._by_id: dict[str, Record] = {}
        self._labels: dict[str, str] = {}
        self._label_timestamps: dict[str, str] = {}
        self._leaf_id: EntryKey | None = None
        """The last entry's key (Pi: ``leafId``), ``None`` before any entry or after ``reset_leaf``."""
        self._flushed = False
        self._has_assistant = False
        self._needs_newline = False
        self._file_state: _fs.FileState | None = None
        """The file we hold (identity, size, tail); every append checks it is still that file."""
        self._defer_sync = False
        self._unsynced: _Unsynced | None = None
        self._tree_epoch = 0
        """Counts the changes that can alter an existing record's ancestry (a record dropped or taken
        back, an id taken over by a later duplicate, new contents): what ``_branch_compaction`` knew
        holds only within one epoch. Appending a new id changes no ancestry."""
        self._branch_compaction: tuple[int, Record, Record | None] | None = None
        """(epoch, a leaf record, the latest compaction on its branch) from the last ``latest_compaction``."""
        self.load_diagnostics: builtins.list[Diagnostic] = []
        self._locks = _LockSlot()
        weakref.finalize(self, self._locks.release)
        if persist and session_dir:
            self._make_dirs(session_dir)

    # -- constructors ------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        cwd: str,
        session_dir: str | None = None,
        *,
        agent_dir: str | None = None,
        session_id: str | None = None,
    ) -> SessionManager:
        """A new persisted session for ``cwd`` (no file until the first assistant message)."""
        directory = session_dir if session_dir is not None else default_session_dir(cwd, agent_dir)
        manager = cls(cwd, os.path.abspath(directory), persist=True)
        manager.new_session(session_id=session_id)
        return manager

    @classmethod
    def in_memory(cls, cwd: str) -> SessionManager:
        manager = cls(cwd, "", persist=False)
        manager.new_session()
        return manager

    @classmethod
    def open(
        cls,
        path: str,
        session_dir: str | None = None,
        cwd_override: str | None = None,
        *,
        must_exist: bool = False,
    ) -> SessionManager:
        """Open ``path``. Pi semantics: a missing path starts a new session that will be written
        there; an empty file gets a fresh header; a non-session file is refused, untouched.

        ``must_exist=True`` raises ``SessionFileNotFoundError`` for a missing path instead.
        """
        path = os.path.abspath(path)
        directory = os.path.abspath(session_dir) if session_dir is not None else os.path.dirname(path)
        # The writer lock comes before the first byte is read: a file another rpcd process holds
        # is refused untouched (not even the final newline or a migration is written).
        lock = writer_lock.acquire(path)
        try:
            try:
                loaded = load_file(path)
                exists = True
            except FileNotFoundError:
                if must_exist:
                    raise SessionFileNotFoundError(f"File not found: {path}", session_path=path) from None
                loaded, exists = None, False
            except (IsADirectoryError, NotARegularFileError):
                raise not_a_session(path) from None
            except OSError as exc:
                raise StoreError(f"Could not read session file: {exc.strerror}", session_path=path) from exc
            header_cwd = loaded.header.get("cwd") if loaded is not None else None
            stored_cwd = header_cwd if isinstance(header_cwd, str) else os.getcwd()
            cwd = cwd_override if cwd_override is not None else stored_cwd
            manager = cls(cwd, directory, persist=True)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        manager._locks.set(lock)
        try:
            if loaded is None:
                manager.new_session()
                manager._session_file = path
                if exists:
                    manager._initialise_empty_file()
            else:
                manager._adopt(loaded, path)
        except BaseException:
            manager.close()
            raise
        return manager

    @classmethod
    def continue_recent(
        cls, cwd: str, session_dir: str | None = None, *, agent_dir: str | None = None
    ) -> SessionManager:
        """The most recently modified session of ``cwd`` in the directory, else a new one."""
        directory = session_dir if session_dir is not None else default_session_dir(cwd, agent_dir)
        recent = find_most_recent_session(cwd, directory, custom_dir=session_dir is not None, agent_dir=agent_dir)
        if recent is not None:
            return cls.open(recent, directory)
        return cls.create(cwd, directory)

    @classmethod
    def fork_from(
        cls,
        source_path: str,
        target_cwd: str,
        session_dir: str | None = None,
        *,
        agent_dir: str | None = None,
        session_id: str | None = None,
    ) -> SessionManager:
        """Copy a whole session (all entries, same ids) into a new file for ``target_cwd``, written now."""
        source_path = os.path.abspath(source_path)
        try:
            loaded = load_file(source_path)
        except FileNotFoundError:
            raise SessionFileNotFoundError(f"File not found: {source_path}", session_path=source_path) from None
        except (IsADirectoryError, NotARegularFileError):
            raise not_a_session(source_path) from None
        except OSError as exc:
            raise StoreError(f"Could not read session file: {exc.strerror}", session_path=source_path) from exc
        except StoreError as exc:
            raise type(exc)(
                f"Cannot fork: source session has no header: {source_path}", session_path=source_path
            ) from exc
        if loaded is None:
            raise StoreError(
                f"Cannot fork: source session file is empty or invalid: {source_path}", session_path=source_path
            )
        directory = session_dir if session_dir is not None else default_session_dir(target_cwd, agent_dir)
        directory = os.path.abspath(directory)
        new_id = validate_session_id(session_id) if session_id is not None else uuid7()
        timestamp = iso_now()
        header = E.header(new_id, timestamp, target_cwd, source_path)
        path = os.path.join(directory, f"{file_timestamp(timestamp)}_{new_id}.jsonl")
        cls._make_dirs(directory)
        body = [codec.dumps(header), *(record.raw for record in loaded.records)]
        try:
            _fs.create_exclusive(path, b"\n".join(body) + b"\n")
        except OSError as exc:
            raise _write_error(exc, path) from exc
        return cls.open(path, directory, cwd_override=target_cwd)

    @classmethod
    def list(
        cls, cwd: str, session_dir: str | None = None, *, agent_dir: str | None = None
    ) -> builtins.list[SessionInfo]:
        """``SessionInfo`` of every session of ``cwd``, most recently modified first."""
        return list_sessions(cwd, session_dir, agent_dir=agent_dir)

    # -- accessors -----------------------------------------------------------------------

    def close(self) -> None:
        """Let go of the session file: release its writer lock (another rpcd process may now take it).

        The last append is made durable first (or undone, if its fsync fails: nobody was told of it,
        the run that wrote it ended without an answer). The manager stays readable; the runtime
        closes a session's manager when it disposes the session. Idempotent.
        """
        self._defer_sync = False
        with contextlib.suppress(SessionWriteError):
            self.settle()
        self._locks.release()

    # -- durability --------------------------------------------------------------------------

    def defer_sync(self, on: bool) -> None:
        """Appends return once written while ``on`` (an agent run: the user message's fsync overlaps the
        model request, a tool result's the next one); turning it off settles the last append."""
        self._defer_sync = on
        if not on:
            self.settle()

    def settle(self) -> None:
        """Wait until the last append is durable. If its fsync failed, it is undone (the file was cut
        back, memory is as before it) and ``SessionWriteError`` says so."""
        unsynced, self._unsynced = self._unsynced, None
        if unsynced is None:
            return
        try:
            unsynced.pending.wait()
        except OSError as exc:
            self._undo(unsynced.undo)
            raise _write_error(exc, unsynced.pending.path) from exc

    def sync_now(self) -> None:
        """Make the last append durable now, not once the loop next runs (``PendingSync.finish_now``: a
        run's end is on the client's way and its answer waits for this); ``settle``/``synced`` then
        find it done, or say how it failed."""
        unsynced = self._unsynced
        if unsynced is not None:
            unsynced.pending.finish_now()

    async def synced(self) -> None:
        """``settle`` without blocking the event loop while the fsync runs (a run's end, before its answer)."""
        unsynced = self._unsynced
        if unsynced is None:
            return
        await unsynced.pending.durable()
        if self._unsynced is unsynced:
            self.settle()

    def holds_writer_lock(self) -> bool:
        return self._locks.lock is not None

    def is_persisted(self) -> bool:
        return self._persist

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_session_id(self) -> str:
        return self._session_id

    def get_session_file(self) -> str | None:
        return self._session_file

    def get_header(self) -> dict[str, Any]:
        return self._header

    def is_flushed(self) -> bool:
        """True once the session file exists with every entry so far (always False in memory)."""
        return self._persist and self._flushed

    def get_entries(self) -> builtins.list[dict[str, Any]]:
        return self._entries_of(builtins.list(self._records))

    def get_entry_count(self) -> int:
        return len(self._records)

    def entries_since(self, index: int, types: Container[str],
                      roles: Container[str | None] | None = None) -> builtins.list[dict[str, Any]]:
        """The entries from position ``index`` on (append order) whose type is in ``types`` (and, for
        messages, whose role is in ``roles``); the others are not parsed (what a running total needs
        after each append)."""
        return self._entries_of([record for record in self._records[index:] if record.type in types
                                 and (roles is None or record.type != E.MESSAGE or record.role in roles)])

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        record = self._by_id.get(entry_id)
        if record is None:
            return None
        try:
            return record.entry
        except CorruptRecordError:
            self._drop(record)
            return None

    def get_leaf_id(self) -> str | None:
        """The leaf's id; ``None`` also when a hand-edited leaf has no string id (see ``get_leaf_json_id``)."""
        leaf = self._leaf_id
        return leaf if isinstance(leaf, str) else None

    def get_leaf_ref(self) -> str | float | None:
        """The leaf's id as clients see it (Pi's ``getLeafId()``): a string, or the number a
        hand-edited file has; ``None`` for none (or an id of another JSON type)."""
        leaf = self._leaf_id
        if isinstance(leaf, str) or (isinstance(leaf, (int, float)) and not isinstance(leaf, bool)):
            return leaf
        return None

    def get_leaf_json_id(self) -> Any:
        """The leaf's id as the file has it (a number in a hand-edited file; ``None`` for none)."""
        return _json_id(self._leaf_id)

    def get_leaf_entry(self) -> dict[str, Any] | None:
        leaf = self._leaf_id
        return self.get_entry(leaf) if isinstance(leaf, str) and leaf else None

    def get_branch(self, from_id: str | None = None) -> builtins.list[dict[str, Any]]:
        """Root -> ``from_id`` (default: leaf); empty if unknown (or, as in Pi, if the leaf has no id)."""
        start = from_id if from_id is not None else self._leaf_id
        if not key_is_truthy(start):
            return []
        return [record.entry for record in self._valid_path(start)]

    def read_branch(self, reader: Callable[[builtins.list[Record]], T], from_id: str | None = None) -> T:
        """``reader`` over root -> ``from_id`` (default: the leaf) as records, whose bodies are
        parsed only when ``reader`` touches them (type, role and id need no parse). A line that
        turns out unparsable is dropped, as Pi drops it on load, and ``reader`` runs again."""
        start = from_id if from_id is not None else self._leaf_id
        while True:
            path = self._path(start) if key_is_truthy(start) else []
            try:
                return reader(path)
            except CorruptRecordError as exc:
                self._drop(exc.record)

    def latest_compaction(self) -> dict[str, Any] | None:
        """The latest ``compaction`` entry on the leaf's branch (Pi: ``getLatestCompactionEntry(getBranch())``).

        Every prompt's compaction check asks this twice, and a long session's branch is 200,000 records
        (~46 ms to walk, as Pi's ``getBranch`` takes): the walk goes up from the leaf only until it meets
        the leaf of the last answer, whose own answer then holds (``_branch_compaction``) — the records
        appended since, for a session that only grows. A leaf moved elsewhere walks its branch once."""
        while True:
            record = self._latest_compaction_record()
            if record is None:
                return None
            try:
                return record.entry
            except CorruptRecordError:
                self._drop(record)  # Pi skips the line on load: the one before it is the latest

    def _latest_compaction_record(self) -> Record | None:
        leaf_key = self._leaf_id
        if leaf_key is None or not key_is_truthy(leaf_key):
            return None
        get = self._by_id.get
        known = self._branch_compaction
        stop = known[1] if known is not None and known[0] == self._tree_epoch else None
        leaf = current = get(leaf_key)
        found: Record | None = None
        # A branch without a cycle has at most one record per id: one more step reaches its root's
        # parent (none). A walk that outlasts that went round a cycle holding no compaction.
        for _ in range(len(self._by_id) + 1):
            if current is None:
                break
            if current is stop:
                found = known[2] if known is not None else None
                break
            if current.type == E.COMPACTION:
                found = current
                break
            parent = current.parent_id
            current = get(parent) if parent is not None else None
        if leaf is not None:
            self._branch_compaction = (self._tree_epoch, leaf, found)
        return found

    def get_children(self, entry_id: str) -> builtins.list[dict[str, Any]]:
        """Entries whose ``parentId`` is ``entry_id`` (Pi compares the values: ``5`` is not ``"5"``)."""
        key = key_of(entry_id)
        return self._entries_of([r for r in self._by_id.values() if r.tree_parent == key])

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def get_labels(self) -> dict[str, str]:
        return dict(self._labels)

    def get_session_name(self) -> str | None:
        """Latest ``session_info`` in file order (any branch); an empty name clears it."""
        for record in reversed(self._records):
            if record.type == E.SESSION_INFO:
                try:
                    name = record.entry.get("name")
                except CorruptRecordError:
                    self._drop(record)
                    return self.get_session_name()
                return E.js_trim(name) or None if isinstance(name, str) else None
        return None

    def build_session_context(self) -> SessionContext:
        # A long path parses thousands of bodies: with the collector paused, as its file was read.
        with collection.paused(len(self._records) >= PAUSED_FROM_RECORDS):
            while True:
                try:
                    return build_session_context(self._context_path())
                except CorruptRecordError as exc:
                    self._drop(exc.record)

    def build_context_entries(self) -> builtins.list[dict[str, Any]]:
        """Pi's ``buildContextEntries``: the entries the context is built from — the path to the leaf,
        or, after a compaction, the compaction, the entries it kept and everything after it."""
        while True:
            try:
                path = self._context_path()
                last = next((i for i in range(len(path) - 1, -1, -1) if path[i].type == E.COMPACTION), None)
                if last is None:
                    return [record.entry for record in path]
                compaction = path[last]
                first_kept = key_of(compaction.entry.get("firstKeptEntryId"))
                kept_from = next((i for i in range(last) if path[i].id == first_kept), last)
                return [compaction.entry, *(r.entry for r in path[kept_from:last]), *(r.entry for r in path[last + 1:])]
            except CorruptRecordError as exc:
                self._drop(exc.record)

    def get_model(self) -> ModelRef | None:
        return self.build_session_context().model

    def get_tree(self) -> builtins.list[dict[str, Any]]:
        """Pi's ``getTree()``: every entry as ``{entry, children, label?, labelTimestamp?}`` under its
        parent (entries without a known parent are roots), children oldest first. Built without
        recursion, so a long session is no problem here (its nesting is, for a JSON encoder)."""
        records = [r for r in builtins.list(self._records) if self._entry_or_none(r) is not None]
        nodes: dict[Any, dict[str, Any]] = {}
        for record in records:
            node: dict[str, Any] = {"entry": record.entry, "children": []}
            if isinstance(record.id, str) and record.id in self._labels:
                node["label"] = self._labels[record.id]
                node["labelTimestamp"] = self._label_timestamps.get(record.id)
            nodes[record.id] = node
        roots: builtins.list[dict[str, Any]] = []
        for record in records:
            node = nodes[record.id]
            parent = record.tree_parent
            if parent is None or parent == record.id:
                roots.append(node)
            elif parent in nodes:
                nodes[parent]["children"].append(node)
            else:
                roots.append(node)
        by_time = functools.cmp_to_key(_timestamp_order)
        stack = list(roots)
        while stack:
            node = stack.pop()
            children = node["children"]
            if len(children) > 1:
                children.sort(key=by_time)
            stack.extend(children)
        return roots

    def _entry_or_none(self, record: Record) -> dict[str, Any] | None:
        try:
            return record.entry
        except CorruptRecordError:
            self._drop(record)
            return None

    def get_roots(self) -> builtins.list[Any]:
        """Ids of the entries without a (known) parent, file order: Pi's ``getTree()`` roots."""
        return [
            _json_id(r.id)
            for r in self._by_id.values()
            if r.tree_parent is None or r.tree_parent == r.id or r.tree_parent not in self._by_id
        ]

    # -- navigation (in memory only, as in Pi) ---------------------------------------------

    @_settles
    def branch(self, entry_id: str) -> None:
        if self.get_entry(entry_id) is None:
            raise InvalidEntryError(f"Entry {entry_id} not found", entry_id=entry_id, session_path=self._session_file)
        self._leaf_id = entry_id

    @_settles
    def reset_leaf(self) -> None:
        self._leaf_id = None

    # -- appends -------------------------------------------------------------------------

    @_settles
    def append_message(self, message: dict[str, Any]) -> str:
        entry_id = self._new_id()
        return self._append(E.message(entry_id, self._leaf_id, iso_now(), message))

    @_settles
    def append_model_change(self, provider: str, model_id: str) -> str:
        return self._append(E.model_change(self._new_id(), self._leaf_id, iso_now(), provider, model_id))

    @_settles
    def append_thinking_level_change(self, level: str) -> str:
        return self._append(E.thinking_level_change(self._new_id(), self._leaf_id, iso_now(), level))

    @_settles
    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Any = None,
    ) -> str:
        entry_id = self._new_id()
        entry = E.compaction(
            entry_id, self._leaf_id, iso_now(), summary, first_kept_entry_id, tokens_before, details, usage, from_hook
        )
        return self._append(entry)

    @_settles
    def branch_with_summary(
        self,
        from_id: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Any = None,
    ) -> str:
        """Move the leaf to ``from_id`` (``None``: a new root) and append a ``branch_summary``.

        ``fromId`` records the leaf being left (``"root"`` if none), as Pi 0.85.0 does.
        """
        if from_id is not None and from_id not in self._by_id:
            raise InvalidEntryError(f"Entry {from_id} not found", entry_id=from_id, session_path=self._session_file)
        previous_leaf = self._leaf_id
        entry = E.branch_summary(
            self._new_id(), from_id, iso_now(), previous_leaf or "root", summary, details, usage, from_hook
        )
        self._leaf_id = from_id
        try:
            return self._append(entry)
        except SessionWriteError:
            self._leaf_id = previous_leaf
            raise

    @_settles
    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._append(E.custom(self._new_id(), self._leaf_id, iso_now(), custom_type, data))

    @_settles
    def append_custom_message_entry(self, custom_type: str, content: Any, display: bool, details: Any = None) -> str:
        entry = E.custom_message(self._new_id(), self._leaf_id, iso_now(), custom_type, content, display, details)
        return self._append(entry)

    @_settles
    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        if target_id not in self._by_id:
            raise InvalidEntryError(f"Entry {target_id} not found", entry_id=target_id, session_path=self._session_file)
        return self._append(E.label(self._new_id(), self._leaf_id, iso_now(), target_id, label))

    @_settles
    def append_session_info(self, name: str) -> str:
        normalized = E.js_trim(_NEWLINES_RE.sub(" ", name))
        return self._append(E.session_info(self._new_id(), self._leaf_id, iso_now(), normalized))

    # -- new sessions, forks -------------------------------------------------------------

    @_settles
    def new_session(self, *, parent_session: str | None = None, session_id: str | None = None) -> str | None:
        """Start an empty session (new id, nothing written yet); returns its future file path."""
        new_id = validate_session_id(session_id) if session_id is not None else uuid7()
        timestamp = iso_now()
        self._locks.release()  # a new session has no file yet: the old one is no longer ours to write
        self._set_contents(E.header(new_id, timestamp, self._cwd, parent_session), [])
        self._flushed = False
        self._needs_newline = False
        self._file_state = None
        self._session_file = (
            os.path.join(self._session_dir, f"{file_timestamp(timestamp)}_{new_id}.jsonl") if self._persist else None
        )
        return self._session_file

    @_settles
    def create_branched_session(self, leaf_id: str) -> str | None:
        """A new session holding only root -> ``leaf_id``; this manager switches to it.

        Pi 0.85.0: label entries are dropped from the copied path and the following entries
        re-parented; labels on the path are re-emitted at the end with their original
        timestamps; the file is written now if the path has an assistant message.
        """
        path = self._valid_path(leaf_id)
        if not path:
            raise InvalidEntryError(f"Entry {leaf_id} not found", entry_id=leaf_id, session_path=self._session_file)
        kept = _without_labels(path)
        kept_ids = {record.id for record in kept}
        taken = set(kept_ids)
        parent = kept[-1].id if kept else None
        label_records: builtins.list[Record] = []
        for target_id, text in self._labels.items():
            if target_id not in kept_ids:
                continue
            label_id = new_entry_id(taken)
            taken.add(label_id)
            timestamp = self._label_timestamps.get(target_id) or iso_now()
            label_records.append(Record.from_entry(E.label(label_id, parent, timestamp, target_id, text)))
            parent = label_id
        new_id = uuid7()
        timestamp = iso_now()
        parent_session = self._session_file if self._persist else None
        header = E.header(new_id, timestamp, self._cwd, parent_session)
        records = kept + label_records
        new_file: str | None = None
        write_now = False
        if self._persist:
            new_file = os.path.join(self._session_dir, f"{file_timestamp(timestamp)}_{new_id}.jsonl")
            write_now = any(r.type == E.MESSAGE and r.role == "assistant" for r in records)
            if write_now:
                self._write_new_file(new_file, header, records)
        self._locks.set(self._writer_lock(new_file) if write_now and new_file else None)
        self._set_contents(header, records)
        self._session_file = new_file
        self._flushed = write_now
        self._needs_newline = False
        if not write_now:
            self._file_state = None
        return new_file

    def fork_point(self, entry_id: str, position: Literal["before", "at"] = "before") -> ForkPoint:
        """Validate a fork/clone target (the one place this is decided; Pi 0.85.0 ``runtime.fork``).

        ``before`` needs a user message and branches at its parent (``selected_text`` = its text);
        ``at`` branches at the entry itself. Raises ``InvalidEntryError`` otherwise; changes nothing.
        """
        record = self._by_id.get(entry_id) if self.get_entry(entry_id) is not None else None
        if record is None or (position == "before" and not (record.type == E.MESSAGE and record.role == "user")):
            raise InvalidEntryError(
                "Invalid entry ID for forking", entry_id=entry_id, session_path=self._session_file, cwd=self._cwd
            )
        if position == "at":
            return ForkPoint(entry_id)
        message = record.entry.get("message") or {}
        return ForkPoint(record.parent_id, content_text(message.get("content"), ""))

    @classmethod
    def fork_file(cls, source: str, session_dir: str | None, entry_id: str | None,
                  position: Literal["before", "at"] = "before") -> tuple[SessionManager, ForkResult]:
        """The one fork of a saved session file, for every caller (the runtime's fork of its current
        session, a front's fork of any session): open ``source`` (its writer lock first) and branch
        it into a new session file (``fork``); without ``entry_id``, a clone at the file's leaf (an
        empty session whose parent is ``source`` when it has no entries). ``source`` itself is never
        changed; on a refusal the manager is closed."""
        manager = cls.open(source, session_dir, must_exist=True)
        try:
            target = entry_id if entry_id is not None else manager.get_leaf_id()
            if target is None:
                return manager, ForkResult(manager.new_session(parent_session=source))
            return manager, manager.fork(target, position if entry_id is not None else "at")
        except BaseException:
            manager.close()
            raise

    @_settles
    def fork(self, entry_id: str, position: Literal["before", "at"] = "before") -> ForkResult:
        """Pi 0.85.0 ``runtime.fork`` on the store side: validate (``fork_point``), then branch into a
        new session. Errors leave this manager untouched.
        """
        point = self.fork_point(entry_id, position)
        if point.leaf_id is None:
            parent_session = self._session_file if self._persist else None
            return ForkResult(self.new_session(parent_session=parent_session), point.selected_text)
        if self._persist and not self._flushed:
            raise SessionNotSavedError(NOT_SAVED_MESSAGE, session_path=self._session_file, entry_id=entry_id)
        return ForkResult(self.create_branched_session(point.leaf_id), point.selected_text)

    # -- internals -----------------------------------------------------------------------

    @staticmethod
    def _make_dirs(directory: str) -> None:
        try:
            make_private_dirs(directory)
        except OSError as exc:
            raise SessionWriteError(f"Could not create session directory: {exc.strerror}", cwd=None) from exc

    def _new_id(self) -> str:
        return new_entry_id(self._by_id)

    def _context_path(self) -> builtins.list[Record]:
        """The path ``buildSessionContext`` walks (Pi's ``buildSessionPath``): none after
        ``reset_leaf`` (or a leaf whose id is ``null``); from the last entry when the leaf id
        is missing, falsy or unknown; else from the leaf."""
        leaf = self._leaf_id
        if leaf is None:
            return []
        start = self._by_id.get(leaf) if key_is_truthy(leaf) else None
        if start is None:
            if not self._records:
                return []
            start = self._records[-1]
        return self._path(start.id) if self._by_id.get(start.id) is start else [start]

    def _path(self, leaf_id: EntryKey | None) -> builtins.list[Record]:
        """Root -> ``leaf_id`` by ``parentId``; a cycle (hand-edited file) ends the walk."""
        by_id = self._by_id
        get = by_id.get
        path: builtins.list[Record] = []
        append = path.append
        current = get(leaf_id) if leaf_id is not None else None
        # A path without a cycle visits each record at most once: no ``seen`` set needed
        # unless the walk outlasts the number of records.
        for _ in range(len(by_id)):
            if current is None:
                break
            append(current)
            parent = current.parent_id
            current = get(parent) if parent is not None else None
        else:
            if current is not None:
                return self._path_with_cycle(leaf_id)
        path.reverse()
        return path

    def _path_with_cycle(self, leaf_id: str | None) -> builtins.list[Record]:
        path: builtins.list[Record] = []
        seen: set[str] = set()
        current = self._by_id.get(leaf_id) if leaf_id is not None else None
        while current is not None and current.id not in seen:
            seen.add(current.id)
            path.append(current)
            current = self._by_id.get(current.parent_id) if current.parent_id is not None else None
        path.reverse()
        return path

    def _valid_path(self, leaf_id: str | None) -> builtins.list[Record]:
        """``_path`` with every body parsed; lines that fail are dropped and the walk redone."""
        while True:
            path = self._path(leaf_id)
            try:
                for record in path:
                    record.entry  # noqa: B018 - parse now
            except CorruptRecordError as exc:
                self._drop(exc.record)
                continue
            return path

    def _entries_of(self, records: builtins.list[Record]) -> builtins.list[dict[str, Any]]:
        entries: builtins.list[dict[str, Any]] = []
        for record in records:
            try:
                entries.append(record.entry)
            except CorruptRecordError:
                self._drop(record)
        return entries

    def _drop(self, record: Record) -> None:
        """Forget a line that turned out unparsable, as if Pi had skipped it on load."""
        self._tree_epoch += 1
        self._records.remove(record)
        if self._by_id.get(record.id) is record:
            del self._by_id[record.id]
            for other in reversed(self._records):
                if other.id == record.id:
                    self._by_id[other.id] = other
                    break
        if self._leaf_id == record.id and record.id not in self._by_id:
            self._leaf_id = self._records[-1].id if self._records else None
        self.load_diagnostics.append(Diagnostic("warning", "Skipped 1 unreadable line in session file"))

    def _set_contents(self, header: dict[str, Any], records: builtins.list[Record]) -> None:
        self._header = header
        self._header_raw = None
        self._session_id = str(header.get("id"))
        self._tree_epoch += 1
        self._records = list(records)
        self._labels = {}
        self._label_timestamps = {}
        # What ``_index`` does per record, done in bulk (a resume indexes every line):
        # later duplicates of an id win, the leaf is the last record.
        self._by_id = {record.id: record for record in self._records}
        self._leaf_id = self._records[-1].id if self._records else None
        self._has_assistant = any(r.role == "assistant" and r.type == E.MESSAGE for r in self._records)
        for record in [r for r in self._records if r.type == E.LABEL]:
            self._index_label(record)

    def _index(self, record: Record) -> None:
        if record.id in self._by_id:
            self._tree_epoch += 1  # a later duplicate takes the id over: its children's ancestry changes
        self._by_id[record.id] = record
        self._leaf_id = record.id
        if record.type == E.MESSAGE and record.role == "assistant":
            self._has_assistant = True
        elif record.type == E.LABEL:
            self._index_label(record)

    def _index_label(self, record: Record) -> None:
        entry = record.entry
        target, text = entry.get("targetId"), entry.get("label")
        if isinstance(target, str):
            if text:
                self._labels[target] = str(text)
                self._label_timestamps[target] = str(entry.get("timestamp", ""))
            else:
                self._labels.pop(target, None)
                self._label_timestamps.pop(target, None)

    def _adopt(self, loaded: LoadedFile, path: str) -> None:
        self._set_contents(loaded.header, loaded.records)
        self._session_file = path
        self._flushed = True
        self._file_state = loaded.state
        self.load_diagnostics = list(loaded.diagnostics)
        while self._records:  # the leaf must be a real entry: validate from the end
            try:
                self._records[-1].entry  # noqa: B018 - parse now
                break
            except CorruptRecordError as exc:
                self._drop(exc.record)
                self._leaf_id = self._records[-1].id if self._records else None
        if loaded.migrated:
            self._rewrite_migrated(path, loaded.rewrite or [])
        elif loaded.missing_final_newline:
            self._needs_newline = True
            try:
                self._file_state = _fs.append(path, b"\n", self._file_state)
                self._needs_newline = False
            except OSError:
                self.load_diagnostics.append(
                    Diagnostic("warning", "Session file lacks a final newline; it will be added before the next append")
                )

    def _rewrite_migrated(self, path: str, lines: builtins.list[bytes]) -> None:
        """Pi's ``_rewriteFile`` after a migration (every parsed line re-serialised), but atomic."""
        body = [codec.dumps(self._header), *lines]
        try:
            self._file_state = _fs.replace_atomically(path, b"\n".join(body) + b"\n")
        except OSError as exc:
            raise _write_error(exc, path) from exc
        if self._locks.lock is not None:  # the rename made a new file: hold that one now
            self._locks.set(self._writer_lock(path))
        self.load_diagnostics.append(Diagnostic("info", "Session file migrated to version 3 and rewritten"))

    def _initialise_empty_file(self) -> None:
        """Pi writes a fresh header into an empty existing file; we only do so while it is still empty."""
        assert self._session_file is not None
        try:
            if os.path.getsize(self._session_file) == 0:
                self._file_state = _fs.append(self._session_file, codec.dumps(self._header) + b"\n")
                self._flushed = True
        except OSError as exc:
            raise _write_error(exc, self._session_file) from exc
        if not self._flushed:
            raise not_a_session(self._session_file)

    @staticmethod
    def _writer_lock(path: str) -> writer_lock.WriterLock | None:
        """The lock of a file this process has just created (nobody else can hold it yet; a
        process that found it first would make us back off, which only means no lock)."""
        try:
            return writer_lock.acquire(path)
        except StoreError:
            return None

    def _write_new_file(self, path: str, header: dict[str, Any], records: Iterable[Record]) -> None:
        body = [codec.dumps(header), *(record.raw for record in records)]
        try:
            make_private_dirs(os.path.dirname(path))
            self._file_state = _fs.create_exclusive(path, b"\n".join(body) + b"\n")
        except OSError as exc:
            raise _write_error(exc, path) from exc

    def _append(self, entry: dict[str, Any]) -> str:
        try:
            record = Record.from_entry(entry)
        except codec.JsonValueError as exc:  # nothing changed yet: memory and file stay as they were
            raise SessionWriteError(
                f"Could not write session file: the entry is not JSON ({exc.reason} at {exc.path})",
                session_path=self._session_file,
            ) from None
        label = None
        if record.type == E.LABEL:
            target = str(entry.get("targetId"))
            label = (target, self._labels.get(target), self._label_timestamps.get(target))
        undo = _Undo(record, self._leaf_id, self._has_assistant, label, self._file_state, self._needs_newline)
        self._records.append(record)
        self._index(record)
        try:
            pending = self._persist_record(record)
        except OSError as exc:
            self._undo(undo)
            raise _write_error(exc, self._session_file) from exc
        if pending is not None:
            self._unsynced = _Unsynced(pending, undo)
        return str(record.id)  # ids we create are strings

    def _undo(self, undo: _Undo) -> None:
        """Take back the last append (its record is still the last one: every mutation settles first)."""
        record = undo.record
        assert self._records and self._records[-1] is record
        self._tree_epoch += 1
        self._records.pop()
        del self._by_id[record.id]
        self._leaf_id = undo.leaf
        self._has_assistant = undo.has_assistant
        self._file_state = undo.file_state
        self._needs_newline = undo.needs_newline
        if undo.label is not None:
            target, text, timestamp = undo.label
            self._labels.pop(target, None)
            self._label_timestamps.pop(target, None)
            if text is not None:
                self._labels[target] = text
                self._label_timestamps[target] = timestamp or ""

    def _persist_record(self, record: Record) -> _fs.PendingSync | None:
        """Write the record (the first flush writes the whole file); with ``defer_sync`` an append's
        fsync is left pending."""
        if not self._persist or not self._session_file:
            return None
        if not self._flushed:
            if not self._has_assistant:
                return None
            body = [codec.dumps(self._header), *(r.raw for r in self._records)]
            make_private_dirs(os.path.dirname(self._session_file))
            self._file_state = _fs.create_exclusive(self._session_file, b"\n".join(body) + b"\n")
            self._flushed = True
            self._locks.set(self._writer_lock(self._session_file))
            return None
        data = (b"\n" if self._needs_newline else b"") + record.raw + b"\n"
        pending = None
        if self._defer_sync:
            self._file_state, pending = _fs.append_deferred(self._session_file, data, self._file_state)
        else:
            self._file_state = _fs.append(self._session_file, data, self._file_state)
        self._needs_newline = False
        return pending


def _without_labels(path: builtins.list[Record]) -> builtins.list[Record]:
    """Drop label entries, re-chain parents, remap a compaction boundary that pointed at a label."""
    kept: builtins.list[Record] = []
    replaced_by: dict[str, str | None] = {}
    pending_labels: builtins.list[str] = []
    for record in path:
        if record.type == E.LABEL:
            pending_labels.append(record.id)
            continue
        for label_id in pending_labels:
            replaced_by[label_id] = record.id
        pending_labels.clear()
        parent = kept[-1].id if kept else None
        entry = record.entry
        changes: dict[str, Any] = {}
        if record.parent_id != parent or entry.get("parentId") != parent:
            changes["parentId"] = parent
        kept.append(record if not changes else Record.from_entry({**entry, **changes}))
    for label_id in pending_labels:
        replaced_by[label_id] = None
    if replaced_by:
        for index, record in enumerate(kept):
            if record.type == E.COMPACTION and record.entry.get("firstKeptEntryId") in replaced_by:
                target = replaced_by[record.entry["firstKeptEntryId"]]
                kept[index] = Record.from_entry({**record.entry, "firstKeptEntryId": target})
    return kept


def _timestamp_order(a: dict[str, Any], b: dict[str, Any]) -> int:
    """``new Date(a.entry.timestamp).getTime() - new Date(b...)``; NaN compares equal (as in ``sort``)."""
    left = js_date_ms(a["entry"].get("timestamp")) if "timestamp" in a["entry"] else None
    right = js_date_ms(b["entry"].get("timestamp")) if "timestamp" in b["entry"] else None
    if left is None or right is None:
        return 0
    return (left > right) - (left < right)


def _json_id(key: EntryKey | None) -> Any:
    value = json_of_key(key)
    return None if value is UNDEFINED else value


def _write_error(exc: OSError, path: str | None) -> SessionWriteError:
    reason = exc.strerror or type(exc).__name__
    return SessionWriteError(f"Could not write session file: {reason}", session_path=path)


def assert_session_cwd_exists(manager: SessionManager, fallback_cwd: str) -> None:
    """Pi's ``assertSessionCwdExists``: persisted sessions need their stored cwd to exist."""
    if manager.get_session_file() is None:
        return
    session_cwd = manager.get_cwd()
    if not session_cwd or os.path.exists(session_cwd):
        return
    message = f"Stored session working directory does not exist: {session_cwd}"
    if manager.get_session_file():
        message += f"\nSession file: {manager.get_session_file()}"
    message += f"\nCurrent working directory: {fallback_cwd}"
    raise MissingSessionCwdError(message, cwd=session_cwd, session_path=manager.get_session_file())
