"""Core values -> wire shapes for the session methods rpcd adds to Pi's (file checkpoints, restores,
spending caps): one conversion, used by every handler that answers with them."""

from __future__ import annotations

from typing import Any, cast

from rpcd.core.values import CheckpointInfo, LimitsState, RestoreOutcome
from rpcd.protocol import types as t


def checkpoint_summary(info: CheckpointInfo) -> t.CheckpointSummary:
    return t.CheckpointSummary(
        entry_id=info.entry_id, checkpoint_id=info.checkpoint_id, kind=cast(Any, info.kind), root=info.root,
        created_at=info.created_at, reason=cast(Any, info.reason), available=info.available, finished=info.finished,
        restored_to=info.restored_to, partial=info.partial, prompt_entry_id=info.prompt_entry_id, prompt=info.prompt,
        changed_files=list(info.changed) if info.changed is not None else None)


def restore_result(outcome: RestoreOutcome) -> t.RestoreCheckpointResult:
    """A restore on the wire (``restoreCheckpoint``, and ``navigateTree {restoreFiles}``'s ``restore``)."""
    return t.RestoreCheckpointResult(
        entry_id=outcome.entry_id, checkpoint_id=outcome.checkpoint_id, dry_run=outcome.dry_run,
        files=[t.RestoredFile(path=f.path, action=cast(Any, f.action), applied=f.applied, restorable=f.restorable,
                              conflict=f.conflict, diff=f.diff, binary=True if f.binary else None)
               for f in outcome.files],
        unchanged=list(outcome.unchanged), notes=list(outcome.notes), restore_entry_id=outcome.restore_entry_id)


def limits_info(state: LimitsState | None) -> t.LimitsInfo | None:
    """The caps on the wire (``getState.limits``, ``setLimits``); ``None`` when no cap is set."""
    if state is None:
        return None

    def whole(name: str) -> int | None:
        cap = state.cap(name)
        return None if cap is None else int(cap)

    return t.LimitsInfo(
        cost=state.cost, tokens=state.tokens, max_cost=state.cap("maxCost"), max_tokens=whole("maxTokens"),
        max_cost_per_day=state.cap("maxCostPerDay"), max_tokens_per_day=whole("maxTokensPerDay"),
        cost_today=state.cost_today, tokens_today=state.tokens_today, reached=cast(Any, state.reached))
