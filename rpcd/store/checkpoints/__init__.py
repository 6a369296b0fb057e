"""File checkpoints: snapshots of a project before an agent run changes it, and their restore.

``store`` takes and keeps them (git trees in a git worktree, file copies elsewhere: ``git``,
``files``), ``records`` says what each checkpoint holds, ``restore`` brings files back without
losing what the user changed since. docs/checkpoints.md has the whole story.
"""

from __future__ import annotations

from rpcd.store.checkpoints.model import Entry, Limits, Snapshot
from rpcd.store.checkpoints.records import Record
from rpcd.store.checkpoints.restore import FileChange, RestorePlan, RestoreResult, plan_restore, restore
from rpcd.store.checkpoints.store import STORE_DIR, CheckpointError, CheckpointStore

__all__ = [
    "STORE_DIR",
    "CheckpointError",
    "CheckpointStore",
    "Entry",
    "FileChange",
    "Limits",
    "Record",
    "RestorePlan",
    "RestoreResult",
    "Snapshot",
    "plan_restore",
    "restore",
]
