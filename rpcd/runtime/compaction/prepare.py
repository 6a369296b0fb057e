"""What a compaction will summarize: Pi 0.85.0's ``prepareCompaction``.

The span starts at the previous compaction's kept boundary (its ``firstKeptEntryId``, or the
entry after it when that id is not on the path), so messages that survived the last
compaction are summarized again with the previous summary as context; it ends at the cut
point (``cut_point.find_cut_point``). A split turn's early part is summarized separately.
``tokensBefore`` is the estimate of the whole current context (``build_session_context``).
Nothing to do (``None``): the path ends with a compaction, or there is nothing before the cut.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from rpcd.runtime.compaction.cut_point import find_cut_point, message_for_compaction
from rpcd.runtime.compaction.serialize import FileOps, extract_file_ops_from_message
from rpcd.runtime.compaction.tokens import (
    CompactionSettings,
    assistant_usage,
    calculate_context_tokens,
    estimate_tokens,
)
from rpcd.store import entries as E
from rpcd.store.context import entry_to_message
from rpcd.store.records import Record


@attrs.frozen
class CompactionPreparation:
    """Pi's ``CompactionPreparation``."""

    first_kept_entry_id: str
    messages_to_summarize: list[dict[str, Any]]
    turn_prefix_messages: list[dict[str, Any]]
    is_split_turn: bool
    tokens_before: int
    previous_summary: Any
    """The previous compaction's ``summary`` (``None`` when there was none); used when truthy."""
    file_ops: FileOps
    settings: CompactionSettings

    def to_pi(self) -> dict[str, Any]:
        """The shape extensions see in ``session_before_compact`` (Pi's field names)."""
        out: dict[str, Any] = {
            "firstKeptEntryId": self.first_kept_entry_id,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
            "fileOps": self.file_ops.to_pi(),
            "settings": self.settings.to_pi(),
        }
        if self.previous_summary is not None:
            out["previousSummary"] = self.previous_summary
        return out


def last_compaction_index(path: Sequence[Record]) -> int:
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == E.COMPACTION:
            return index
    return -1


def summarized_span_start(path: Sequence[Record], previous_index: int) -> int:
    """Where the next summary starts: the previous compaction's kept boundary (else the entry
    after it), or the path's start when there was no compaction."""
    if previous_index < 0:
        return 0
    first_kept = path[previous_index].entry.get("firstKeptEntryId")
    found = next((i for i, record in enumerate(path) if record.id == first_kept), -1)
    return found if found >= 0 else previous_index + 1


def prepare_compaction(path: Sequence[Record], settings: CompactionSettings) -> CompactionPreparation | None:
    """Pi's ``prepareCompaction(pathEntries, settings)``."""
    if path and path[-1].type == E.COMPACTION:
        return None
    previous_index = last_compaction_index(path)
    previous_summary = path[previous_index].entry.get("summary") if previous_index >= 0 else None
    boundary_start = summarized_span_start(path, previous_index)
    boundary_end = len(path)
    tokens_before = context_tokens(path)
    cut = find_cut_point(path, boundary_start, boundary_end, settings.keep_recent_tokens)
    if cut.first_kept_entry_index >= len(path):
        return None
    first_kept_entry = path[cut.first_kept_entry_index]
    first_kept_id = first_kept_entry.id
    if not isinstance(first_kept_id, str) or not first_kept_id:
        return None  # Pi: "session needs migration"
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    found = FileOps()  # collected while the messages are at hand, then put after the previous summary's
    to_summarize = _messages(path, boundary_start, history_end, found)
    turn_prefix = _messages(path, cut.turn_start_index, cut.first_kept_entry_index, found) if cut.is_split_turn \
        else []
    if not to_summarize and not turn_prefix:
        return None
    ops = FileOps()
    if previous_index >= 0:
        previous_entry = path[previous_index].entry
        if not E.js_truthy(previous_entry.get("fromHook")) and E.js_truthy(previous_entry.get("details")):
            ops.add_details(previous_entry.get("details"))
    ops.merge(found)
    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=turn_prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
    )


def context_tokens(path: Sequence[Record]) -> int:
    """``estimateContextTokens(buildSessionContext(path).messages).tokens``, reading the context
    from its end: only the messages after the last valid usage are built and estimated."""
    compaction_index = last_compaction_index(path)
    if compaction_index < 0:
        order: Iterator[Record] = reversed(path)
    else:
        kept_from = summarized_span_start(path, compaction_index)
        if kept_from > compaction_index:  # its kept boundary is not on the path: nothing is kept
            kept_from = compaction_index
        order = itertools.chain(reversed(path[compaction_index + 1:]), reversed(path[kept_from:compaction_index]),
                                (path[compaction_index],))
    trailing = 0
    for record in order:
        message = entry_to_message(record)
        if message is None:
            continue
        usage = assistant_usage(message) if record.type == E.MESSAGE and record.role == "assistant" else None
        if usage is not None:
            return calculate_context_tokens(usage) + trailing
        trailing += estimate_tokens(message)
    return trailing


def _messages(path: Sequence[Record], start: int, end: int, ops: FileOps) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    append = out.append
    for index in range(start, end):
        record = path[index]
        message = message_for_compaction(record)
        if message is not None:
            append(message)
            if record.role == "assistant":
                extract_file_ops_from_message(message, ops)
    return out
