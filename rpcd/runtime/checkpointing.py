"""One session's file checkpoints: taken before a run first changes anything, listed from the
session's entries, restored (``rpcd.store.checkpoints`` does the snapshots and the restore).

When: the agent loop hands every batch of approved tool calls to ``before_tools`` before any of
them runs. If one may change something (``bash``, ``edit``, ``write``, and every tool not known to
be read-only: an extension's or an MCP server's tool unless it declares itself read-only), and the
run has no checkpoint yet, the project is snapshotted and a ``custom`` entry
(``customType: "rpcd.checkpoint"``, which Pi keeps and leaves out of the context) records it at
the leaf, with a ``checkpoint_created`` event — before the batch's ``tool_execution_start``, so it
never delays a tool that has started; once the calls are approved, an ``edit``/``write`` of a path the
project snapshot may not reach also gets its file copied first. When the run ends, the checkpoint takes its
``after`` snapshot. A checkpoint that cannot be taken (disk full, git failing) is a
``checkpoint_failed`` event and a log line; the tools still run (the user asked for the work; the
undo is what is missing, and the event says so).

Off: ``checkpoints.enabled: false`` in the settings, and for sessions that are not written
(``--in-memory`` writes nothing). Bounds come from ``checkpoints.*`` (``rpcd.store.checkpoints.Limits``).
"""

from __future__ import annotations

import builtins
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio.to_thread

from rpcd.core.errors import InvalidArgumentError, InvalidEntryError
from rpcd.core.jstext import content_text
from rpcd.core.values import CheckpointInfo, CheckpointListing, RestoredFile, RestoreOutcome
from rpcd.store import SessionManager
from rpcd.store import entries as E
from rpcd.tools.approval_facts import ToolProfile, describe_call, extension_profile
from rpcd.tools.seam import Prepared

__all__ = ["SessionCheckpoints"]

_log = logging.getLogger("rpcd.runtime.checkpointing")
SETTING = "checkpoints"
_LIMIT_KEYS = {"maxFiles": "max_files", "maxFileBytes": "max_file_bytes", "maxCopyBytes": "max_copy_bytes",
               "maxStoreBytes": "max_store_bytes", "maxAgeDays": "max_age_days"}


class CheckpointHost(Protocol):
    """What of the session the checkpoints need."""

    @property
    def cwd(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def session_file(self) -> str | None: ...
    session_manager: SessionManager

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str: ...
    def notify(self, event: dict[str, Any]) -> None: ...


class SessionCheckpoints:
    def __init__(self, host: CheckpointHost, agent_dir: str | None, settings: Callable[[str], Any],
                 profiles: Callable[[], Mapping[str, ToolProfile]] = dict) -> None:
        self._host = host
        self._agent_dir = agent_dir
        self._settings = settings
        self._profiles = profiles
        """How each active tool is classified (the session's tool set: read-only or not)."""
        self._store: Any = None
        self._run: Any = None
        """The checkpoint of the run in progress (``rpcd.store.checkpoints.Record``)."""

    # -- taking them ----------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        section = self._settings(SETTING)
        on = section.get("enabled", True) if isinstance(section, Mapping) else True
        return on is not False and self._agent_dir is not None and self._host.session_manager.is_persisted()

    def store(self) -> Any:
        """The agent dir's checkpoint store (imported on first use: most sessions never restore)."""
        if self._store is None:
            from rpcd.store.checkpoints import CheckpointStore, Limits

            section = self._settings(SETTING)
            given = section if isinstance(section, Mapping) else {}
            bounds = {attr: given[key] for key, attr in _LIMIT_KEYS.items()
                      if isinstance(given.get(key), int | float) and not isinstance(given.get(key), bool)
                      and given[key] > 0}
            assert self._agent_dir is not None
            self._store = CheckpointStore(self._agent_dir, Limits(**bounds))
        return self._store

    def _profile(self, name: str) -> ToolProfile:
        return self._profiles().get(name) or extension_profile()

    def _may_change(self, name: str) -> bool:
        return not self._profile(name).read_only

    async def before_tool_calls(self, names: Sequence[str]) -> None:
        """The agent loop's hook before a batch of calls is prepared: the project is snapshotted
        when one of them may change something and the run has no checkpoint yet (before their
        ``tool_execution_start``: nothing of the batch has started, and an abort sent on seeing a
        tool start finds the tool running, as in Pi)."""
        if self._run is not None or not any(self._may_change(n) for n in names) or not self.enabled:
            return
        host, store = self._host, self.store()
        try:
            record = await anyio.to_thread.run_sync(
                lambda: store.begin(host.cwd, session_id=host.session_id, session_file=host.session_file))
        except OSError as exc:
            _log.warning("checkpoint failed: %s", exc)
            host.notify({"type": "checkpoint_failed", "message": str(exc)})
            return
        self._run = record
        entry_id = host.append_custom_entry(E.CHECKPOINT_CUSTOM_TYPE, record.entry_data())
        event: dict[str, Any] = {"type": "checkpoint_created", "entryId": entry_id, "checkpointId": record.id,
                                 "kind": record.kind, "root": record.root}
        if record.partial:
            event["partial"] = record.partial
        host.notify(event)

    async def before_tools(self, prepared: Sequence[Prepared]) -> None:
        """The agent loop's hook once the calls are prepared (approved, their arguments final): the
        files an ``edit``/``write`` names are copied before their first change in the run, for where
        the project snapshot may not reach (outside the project, ignored by git)."""
        run = self._run
        if run is None:
            return
        host = self._host
        paths = []
        for item in prepared:
            name = item.call.tool_name
            if name in ("edit", "write") and self._may_change(name):
                facts = describe_call(name, item.call.args, cwd=host.cwd, profile=self._profile(name))
                if facts.path is not None:
                    paths.append(facts.path)
        if not paths:
            return
        store = self.store()
        try:
            await anyio.to_thread.run_sync(lambda: store.cover(run, paths))
        except OSError as exc:
            _log.warning("checkpoint copy failed: %s", exc)
            host.notify({"type": "checkpoint_failed", "message": str(exc)})

    async def end_run(self) -> None:
        """The run ended: its checkpoint takes the ``after`` snapshot."""
        run, self._run = self._run, None
        if run is None:
            return
        store = self.store()
        try:
            await anyio.to_thread.run_sync(lambda: store.finish(run))
        except OSError as exc:
            _log.warning("checkpoint could not be finished: %s", exc)
            self._host.notify({"type": "checkpoint_failed", "message": str(exc)})

    # -- reading them ----------------------------------------------------------------------------

    def _entries(self) -> list[dict[str, Any]]:
        return [e for e in self._host.session_manager.get_entries()
                if e.get("type") == E.CUSTOM and e.get("customType") == E.CHECKPOINT_CUSTOM_TYPE
                and isinstance(e.get("data"), Mapping) and isinstance(e["data"].get("id"), str)]

    def listing(self, *, files: bool = False) -> CheckpointListing:
        """Every checkpoint of the session, oldest first (file order), and what ``undo`` restores."""
        return CheckpointListing(tuple(self._infos(files)), self.latest_to_undo())

    def _infos(self, files: bool) -> builtins.list[CheckpointInfo]:
        entries = self._entries()
        if not entries:
            return []
        store = self.store() if self._agent_dir is not None else None
        sm = self._host.session_manager
        found = []
        for entry in entries:
            data = entry["data"]
            record = store.load(data["id"]) if store is not None else None
            prompt_id, prompt = _prompt_of(sm, str(entry["id"]))
            changed = None
            if files and record is not None:
                changed = _changed_files(store, record)
            found.append(CheckpointInfo(
                entry_id=str(entry["id"]), checkpoint_id=data["id"], kind=str(data.get("kind", "")),
                root=str(data.get("root", "")), created_at=str(entry.get("timestamp", "")),
                reason=str(data.get("reason", "run")), available=record is not None,
                finished=record is not None and record.after is not None,
                restored_to=data.get("restoredTo") if isinstance(data.get("restoredTo"), str) else None,
                partial=record.partial if record is not None else data.get("partial"),
                prompt_entry_id=prompt_id, prompt=prompt, changed=changed))
        return found

    def chain(self, entry_id: str) -> list[Any]:
        """The records from the checkpoint of ``entry_id`` on (file order). ``entry_id`` may be a
        checkpoint entry, or any entry: then the first checkpoint recorded after it."""
        sm = self._host.session_manager
        entries = sm.get_entries()
        index = next((i for i, e in enumerate(entries) if e.get("id") == entry_id), None)
        if index is None:
            raise InvalidEntryError(f"Entry not found: {entry_id}", entry_id=entry_id,
                                    session_path=sm.get_session_file())
        ids = {id(e) for e in self._entries()}
        chain = [e for e in entries[index:] if id(e) in ids]
        if not chain:
            raise InvalidEntryError(f"No file checkpoint at or after entry {entry_id}: no file was changed since",
                                    entry_id=entry_id, session_path=sm.get_session_file())
        store = self.store()
        records: builtins.list[Any] = []
        for entry in chain:
            record = store.load(entry["data"]["id"])
            if record is None and not records:
                raise InvalidEntryError(
                    f"The checkpoint of entry {entry['id']} is no longer in the store (pruned, or written by "
                    f"another agent dir)", entry_id=str(entry["id"]), session_path=sm.get_session_file())
            if record is not None:
                records.append(record)
        return records

    def first_after(self, entry_id: str) -> str | None:
        """The first checkpoint entry recorded after ``entry_id`` (file order), if any."""
        entries = self._host.session_manager.get_entries()
        index = next((i for i, e in enumerate(entries) if e.get("id") == entry_id), None)
        if index is None:
            return None
        ids = {id(e) for e in self._entries()}
        return next((str(e["id"]) for e in entries[index + 1:] if id(e) in ids), None)

    def latest_to_undo(self) -> str | None:
        """What ``undo`` restores: the newest run checkpoint not undone yet (a restore of a run
        checkpoint marks it and every later one undone; restoring a restore is a redo)."""
        entries = self._entries()
        undone: set[str] = set()
        position = {str(e["data"]["id"]): i for i, e in enumerate(entries)}
        for i, entry in enumerate(entries):
            target = entry["data"].get("restoredTo")
            if entry["data"].get("reason") == "restore" and isinstance(target, str) and target in position:
                undone.update(str(e["data"]["id"]) for e in entries[position[target]:i])
        for entry in reversed(entries):
            data = entry["data"]
            if data.get("reason") == "run" and data["id"] not in undone:
                return str(entry["id"])
        return None

    # -- restoring ------------------------------------------------------------------------------

    async def restore(self, entry_id: str | None, *, files: Sequence[str] | None = None, force: bool = False,
                      dry_run: bool = False) -> RestoreOutcome:
        """Restore the checkpoint of ``entry_id`` (``None``: what ``undo`` would restore)."""
        from rpcd.store.checkpoints import restore

        if self._agent_dir is None:
            raise InvalidArgumentError("This session keeps no file checkpoints (it is not written)", param="entryId")
        if entry_id is None:
            entry_id = self.latest_to_undo()
            if entry_id is None:
                raise InvalidEntryError("Nothing to undo: no run of this session changed files (or all were undone)",
                                        session_path=self._host.session_file)
        chain = self.chain(entry_id)
        host, store = self._host, self.store()
        result = await anyio.to_thread.run_sync(lambda: restore(
            store, chain, files=files, force=force, dry_run=dry_run, session_id=host.session_id,
            session_file=host.session_file))
        restore_entry = None
        if result.record is not None:
            restore_entry = host.append_custom_entry(E.CHECKPOINT_CUSTOM_TYPE, result.record.entry_data())
            host.notify({"type": "checkpoint_created", "entryId": restore_entry, "checkpointId": result.record.id,
                         "kind": result.record.kind, "root": result.record.root})
        target = chain[0]
        entry = next((e for e in self._entries() if e["data"]["id"] == target.id), None)
        changes = tuple(RestoredFile(path=c.path, action=c.action, applied=c.applied, restorable=c.restorable,
                                     conflict=c.conflict, diff=c.diff, binary=c.binary) for c in result.changes)
        return RestoreOutcome(entry_id=str(entry["id"]) if entry is not None else entry_id, checkpoint_id=target.id,
                              dry_run=dry_run, files=changes, unchanged=result.plan.unchanged,
                              notes=result.plan.notes, restore_entry_id=restore_entry)


def _prompt_of(sm: SessionManager, entry_id: str) -> tuple[str | None, str | None]:
    """The user message nearest above ``entry_id`` on its branch, and its text (shortened)."""
    for entry in reversed(sm.get_branch(entry_id)):
        message = entry.get("message")
        if entry.get("type") == E.MESSAGE and isinstance(message, Mapping) and message.get("role") == "user":
            text = " ".join(content_text(message.get("content"), " ").split())
            return str(entry["id"]), (text[:117] + "…") if len(text) > 120 else text
    return None, None


def _changed_files(store: Any, record: Any) -> tuple[str, ...] | None:
    try:
        backend = store.backend_of(record)
        before = backend.tree(record.before)
        if record.after is None:
            return None  # the run did not finish: what it changed is not known
        after = backend.tree(record.after)
    except OSError:
        return None
    paths = {os.path.join(record.root, p) for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    paths |= {p for p, extra in record.extras.items() if extra.before != extra.after}
    return tuple(sorted(paths))
