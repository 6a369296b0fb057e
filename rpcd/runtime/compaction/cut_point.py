"""Where a compaction cuts: Pi 0.85.0's ``findCutPoint`` over a root->leaf path.

Walk back from the newest entry adding ``estimate_tokens`` of what each entry contributes to
the context until ``keepRecentTokens`` is reached, then cut at the closest valid cut point at
or after that entry. Valid cut points are entries that put a user, assistant,
``bashExecution``, custom or summary message into the context — never a tool result, so a
tool call always stays with its result. Metadata entries just before the cut (model or
thinking changes, labels, custom entries) are kept with it. A cut that lands on an assistant
message splits a turn: the turn's start (its user-like message) is returned too.

The path is a list of store records (``rpcd.store.records.Record``): type, role and id are
read without parsing an entry, so only the entries the decision needs are parsed.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any, Final

import attrs

from rpcd.runtime.compaction.tokens import estimate_tokens
from rpcd.store import entries as E
from rpcd.store.context import entry_to_message
from rpcd.store.records import Record

CUT_POINT_ROLES: Final = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary",
                                    "compactionSummary"})
TURN_START_ROLES: Final = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


@attrs.frozen
class CutPoint:
    """Pi's ``CutPointResult``."""

    first_kept_entry_index: int
    turn_start_index: int
    """The entry that starts the split turn, ``-1`` when the cut is at a turn boundary."""
    is_split_turn: bool


def _has_branch_summary_message(record: Record) -> bool:
    return E.js_truthy(record.entry.get("summary"))


def _role_is(record: Record, roles: frozenset[str]) -> bool:
    """Whether the entry's context messages include one of ``roles`` (compactions never count)."""
    kind = record.type
    if kind == E.MESSAGE:
        return record.role in roles
    if kind == E.CUSTOM_MESSAGE:
        return "custom" in roles
    if kind == E.BRANCH_SUMMARY:
        return _has_branch_summary_message(record)
    return False


def is_turn_start(record: Record) -> bool:
    return _role_is(record, TURN_START_ROLES)


def is_context_visible(record: Record) -> bool:
    """``sessionEntryToContextMessages(entry).length > 0``."""
    kind = record.type
    if kind in (E.MESSAGE, E.CUSTOM_MESSAGE, E.COMPACTION):
        return True
    if kind == E.BRANCH_SUMMARY:
        return _has_branch_summary_message(record)
    return False


def entry_tokens(record: Record) -> int:
    """The estimate of what one entry adds to the context (an older compaction: its summary)."""
    message = entry_to_message(record)
    return estimate_tokens(message) if message is not None else 0


def find_valid_cut_points(path: Sequence[Record], start: int, end: int) -> list[int]:
    found: list[int] = []
    append = found.append
    message, custom_message, branch_summary = E.MESSAGE, E.CUSTOM_MESSAGE, E.BRANCH_SUMMARY
    for i in range(start, end):
        record = path[i]
        kind = record.type
        if kind == message:
            if record.role in CUT_POINT_ROLES:
                append(i)
        elif kind == custom_message or (kind == branch_summary and _has_branch_summary_message(record)):
            append(i)
    return found


def find_turn_start_index(path: Sequence[Record], entry_index: int, start: int) -> int:
    """The user-like message that starts the turn holding ``entry_index`` (``-1``: none)."""
    for i in range(entry_index, start - 1, -1):
        record = path[i]
        if record.type != E.COMPACTION and is_turn_start(record):
            return i
    return -1


def find_cut_point(path: Sequence[Record], start: int, end: int, keep_recent_tokens: float) -> CutPoint:
    """Pi's ``findCutPoint`` over ``path[start:end]``."""
    cut_points = find_valid_cut_points(path, start, end)
    if not cut_points:
        return CutPoint(start, -1, False)
    accumulated = 0
    cut_index = cut_points[0]
    for i in range(end - 1, start - 1, -1):
        tokens = entry_tokens(path[i])
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            at = bisect.bisect_left(cut_points, i)
            if at < len(cut_points):
                cut_index = cut_points[at]
            break
    while cut_index > start:
        previous = path[cut_index - 1]
        if previous.type == E.COMPACTION or is_context_visible(previous):
            break
        cut_index -= 1
    starts_turn = is_turn_start(path[cut_index]) if path[cut_index].type != E.COMPACTION else False
    turn_start = -1 if starts_turn else find_turn_start_index(path, cut_index, start)
    return CutPoint(cut_index, turn_start, not starts_turn and turn_start != -1)


def message_for_compaction(record: Record) -> dict[str, Any] | None:
    """Pi's ``getMessageFromEntryForCompaction``: an entry's context message; compactions give none."""
    if record.type == E.COMPACTION:
        return None
    return entry_to_message(record)
