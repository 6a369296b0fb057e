"""The branch being left by a tree navigation: Pi 0.85.0's ``collectEntriesForBranchSummary``
and ``prepareBranchEntries`` (``compaction/branch-summarization.ts``).

Collect: the entries from the old leaf back to the deepest entry both the old leaf and the
target have on their paths (compactions included: their summaries become context).
Prepare: newest to oldest, messages until the token budget is spent (a summary entry that
does not fit still goes in while less than 90% of the budget is used); tool results are left
out (the assistant's tool calls carry their context); file operations come from every entry's
tool calls and from earlier branch summaries' ``details``, whatever the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from rpcd.runtime.compaction.serialize import FileOps, extract_file_ops_from_message
from rpcd.runtime.compaction.tokens import estimate_tokens
from rpcd.store import SessionManager
from rpcd.store import entries as E
from rpcd.store.context import branch_summary_message, entry_message
from rpcd.store.records import Record


@attrs.frozen
class BranchEntries:
    """Pi's ``collectEntriesForBranchSummary`` result."""

    entries: list[dict[str, Any]]
    common_ancestor_id: str | None


def collect_entries_for_branch_summary(sm: SessionManager, old_leaf_id: str | None, target_id: str) -> BranchEntries:
    if not old_leaf_id:
        return BranchEntries([], None)
    old_path = set(sm.read_branch(_ids, old_leaf_id))
    common: str | None = None
    for entry_id in reversed(sm.read_branch(_ids, target_id)):
        if entry_id in old_path:
            common = entry_id
            break
    collected: list[dict[str, Any]] = []
    current: Any = old_leaf_id
    while current and current != common:
        entry = sm.get_entry(current) if isinstance(current, str) else None
        if entry is None:
            break
        collected.append(entry)
        current = entry.get("parentId")
    collected.reverse()
    return BranchEntries(collected, common)


def _ids(path: list[Record]) -> list[Any]:
    return [record.id for record in path]


def branch_entry_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    """``getMessageFromEntry`` of branch summarization: tool results left out, every summary kept."""
    kind = entry.get("type")
    if kind == E.MESSAGE:
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") == "toolResult":
            return None
        return message
    if kind == E.BRANCH_SUMMARY:
        return branch_summary_message(entry)
    if kind in (E.CUSTOM_MESSAGE, E.COMPACTION):
        return entry_message(entry)
    return None


@attrs.frozen
class PreparedBranch:
    messages: list[dict[str, Any]]
    file_ops: FileOps
    total_tokens: int


def prepare_branch_entries(entries: Sequence[dict[str, Any]], token_budget: float = 0) -> PreparedBranch:
    """Pi's ``prepareBranchEntries(entries, tokenBudget)`` (``0``: no limit)."""
    ops = FileOps()
    for entry in entries:
        if entry.get("type") == E.BRANCH_SUMMARY and not E.js_truthy(entry.get("fromHook")) \
                and E.js_truthy(entry.get("details")):
            ops.add_details(entry.get("details"))
    kept: list[dict[str, Any]] = []
    total = 0
    for entry in reversed(entries):
        message = branch_entry_message(entry)
        if message is None:
            continue
        extract_file_ops_from_message(message, ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.get("type") in (E.COMPACTION, E.BRANCH_SUMMARY) and total < token_budget * 0.9:
                kept.append(message)
                total += tokens
            break
        kept.append(message)
        total += tokens
    kept.reverse()
    return PreparedBranch(kept, ops, total)
