"""A checkpoint's record: which snapshots it took, of what, for which session (``<store>/records/``).

One record per checkpoint, a small JSON file replaced atomically as the run goes on: the
snapshot before the run's first change (``before``), the one when the run ended (``after``;
``None`` while the run goes on, or when the daemon died first), and the file copies of paths the
project snapshot does not cover (``extras``: an ``edit``/``write`` outside the project or of an
ignored file, each copied before the first time the run touched it, and again at the end).

The session file holds, for each checkpoint, one ``custom`` entry (``entry_data``): Pi keeps it
and leaves it out of the context; it names the record, so the conversation says where each run
began to change files, and the record says what was there.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from rpcd.core.durable import replace_file
from rpcd.store._ids import iso_now, uuid7
from rpcd.store.checkpoints.model import Entry, Kind
from rpcd.store.paths import make_private_dirs

__all__ = ["ExtraFile", "Reason", "Record", "RecordStore"]

RECORD_VERSION: Final = 1
Reason = Literal["run", "restore"]


@attrs.define
class ExtraFile:
    """A file kept by copy: what was there before the run first touched it, and at the end."""

    before: Entry | None
    after: Entry | None = None
    finished: bool = False


@attrs.define
class Record:
    id: str
    kind: Kind
    root: str
    before: str
    created_at: str
    reason: Reason = "run"
    session_id: str | None = None
    session_file: str | None = None
    after: str | None = None
    partial: str | None = None
    extras: dict[str, ExtraFile] = attrs.field(factory=dict)
    restored_to: str | None = None
    """For a restore's own checkpoint: the checkpoint it restored."""

    @classmethod
    def new(cls, kind: Kind, root: str, before: str, *, reason: Reason, partial: str | None,
            session_id: str | None, session_file: str | None, restored_to: str | None = None) -> Record:
        return cls(id=uuid7(), kind=kind, root=root, before=before, created_at=iso_now(), reason=reason,
                   session_id=session_id, session_file=session_file, partial=partial, restored_to=restored_to)

    def entry_data(self) -> dict[str, Any]:
        """The ``data`` of the checkpoint's ``custom`` session entry."""
        data: dict[str, Any] = {"id": self.id, "kind": self.kind, "root": self.root, "before": self.before,
                                "reason": self.reason}
        if self.restored_to is not None:
            data["restoredTo"] = self.restored_to
        if self.partial is not None:
            data["partial"] = self.partial
        return data

    def to_json(self) -> bytes:
        def entry(e: Entry | None) -> list[Any] | None:
            return None if e is None else [e.mode, e.oid]

        body = {
            "version": RECORD_VERSION, "id": self.id, "kind": self.kind, "root": self.root, "before": self.before,
            "after": self.after, "createdAt": self.created_at, "reason": self.reason, "sessionId": self.session_id,
            "sessionFile": self.session_file, "partial": self.partial, "restoredTo": self.restored_to,
            "extras": {path: {"before": entry(x.before), "after": entry(x.after), "finished": x.finished}
                       for path, x in self.extras.items()},
        }
        return json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8", "surrogateescape")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        def entry(raw: Any) -> Entry | None:
            return None if raw is None else Entry(int(raw[0]), raw[1])

        extras = {path: ExtraFile(entry(x.get("before")), entry(x.get("after")), bool(x.get("finished")))
                  for path, x in (data.get("extras") or {}).items()}
        return cls(id=str(data["id"]), kind=data["kind"], root=str(data["root"]), before=str(data["before"]),
                   created_at=str(data.get("createdAt", "")), reason=data.get("reason", "run"),
                   session_id=data.get("sessionId"), session_file=data.get("sessionFile"), after=data.get("after"),
                   partial=data.get("partial"), extras=extras, restored_to=data.get("restoredTo"))


class RecordStore:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _path(self, record_id: str) -> str:
        if not record_id or "/" in record_id or record_id.startswith("."):
            raise ValueError(f"not a checkpoint id: {record_id!r}")
        return os.path.join(self.directory, f"{record_id}.json")

    def save(self, record: Record) -> None:
        make_private_dirs(self.directory)
        replace_file(self._path(record.id), record.to_json())

    def load(self, record_id: str) -> Record | None:
        try:
            with open(self._path(record_id), "rb") as raw:
                data = json.loads(raw.read(1 << 24))
            return Record.from_json(data)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None

    def all(self) -> list[Record]:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        found = []
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                record = self.load(name[:-5])
                if record is not None:
                    found.append(record)
        return found

    def remove(self, record_id: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self._path(record_id))
