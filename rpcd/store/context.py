"""What the model sees: Pi's ``buildSessionContext`` over a root->leaf path.

Only the entries that end up in the context (after the latest compaction on the path) and
the newest model/thinking settings are looked at in full; everything else is skeleton.
That is what keeps a resume of a long session cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from rpcd.core.values import ModelRef
from rpcd.store import entries as E
from rpcd.store._ids import js_date_ms
from rpcd.store.records import Record


@attrs.frozen
class SessionContext:
    """``{messages, thinkingLevel, model}``; messages are Pi's AgentMessage dicts (shared, read-only)."""

    messages: list[dict[str, Any]]
    thinking_level: str = "off"
    model: ModelRef | None = None


def _ms(entry: dict[str, Any]) -> int | None:
    """``new Date(entry.timestamp).getTime()``: a number stays itself, NaN is ``None`` (JSON null)."""
    return js_date_ms(entry["timestamp"]) if "timestamp" in entry else None


def _present(entry: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The keys ``entry`` has, with their values: Pi copies ``entry.x`` and ``undefined`` vanishes
    from JSON, while an explicit ``null`` stays."""
    return {key: entry[key] for key in keys if key in entry}


def _compaction_summary(entry: dict[str, Any]) -> dict[str, Any]:
    return {"role": "compactionSummary", **_present(entry, "summary", "tokensBefore"), "timestamp": _ms(entry)}


_CONTENT_ROLES = frozenset({"user", "assistant", "toolResult"})


_CONTEXT_TYPES = frozenset({E.COMPACTION, E.MESSAGE, E.CUSTOM_MESSAGE, E.BRANCH_SUMMARY})


def entry_to_message(record: Record) -> dict[str, Any] | None:
    """One entry's contribution to the context (``None``: it contributes nothing), as Pi's
    ``sessionEntryToContextMessages`` builds it (hand-edited files included). Entries of other
    types are not parsed.

    An older compaction inside the latest one's kept region is a summary message too.
    """
    if record.type not in _CONTEXT_TYPES:
        return None
    return entry_message(record.entry)


def entry_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    """``entry_to_message`` of a parsed entry."""
    kind = entry.get("type")
    if kind == E.MESSAGE:
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        if message.get("role") in _CONTENT_ROLES and message.get("content") is None:
            return {**message, "content": []}  # null or missing content reads as no blocks
        return message
    if kind == E.COMPACTION:
        return _compaction_summary(entry)
    if kind == E.CUSTOM_MESSAGE:
        content = entry.get("content")
        return {
            "role": "custom",
            **_present(entry, "customType"),
            "content": [] if content is None else content,
            **_present(entry, "display", "details"),
            "timestamp": _ms(entry),
        }
    if kind == E.BRANCH_SUMMARY:
        if not E.js_truthy(entry.get("summary")):
            return None
        return branch_summary_message(entry)
    return None


def branch_summary_message(entry: dict[str, Any]) -> dict[str, Any]:
    """Pi's ``createBranchSummaryMessage(entry.summary, entry.fromId, entry.timestamp)``."""
    return {"role": "branchSummary", **_present(entry, "summary", "fromId"), "timestamp": _ms(entry)}


def build_session_context(path: Sequence[Record]) -> SessionContext:
    """Pi 0.85.0's rules: settings from the whole path, messages from the latest compaction on."""
    if not path:
        return SessionContext(messages=[])
    thinking_level = "off"
    model: ModelRef | None = None
    compaction_index = -1
    found_thinking = found_model = False
    for index in range(len(path) - 1, -1, -1):
        record = path[index]
        kind = record.type
        if not found_thinking and kind == E.THINKING_LEVEL_CHANGE:
            level = record.entry.get("thinkingLevel")
            thinking_level = level if isinstance(level, str) else thinking_level
            found_thinking = True
        elif not found_model and kind == E.MODEL_CHANGE:
            model = ModelRef(str(record.entry.get("provider")), str(record.entry.get("modelId")))
            found_model = True
        elif not found_model and kind == E.MESSAGE and record.role == "assistant":
            message = record.entry.get("message") or {}
            model = ModelRef(str(message.get("provider")), str(message.get("model")))
            found_model = True
        elif compaction_index < 0 and kind == E.COMPACTION:
            compaction_index = index
        if found_thinking and found_model and compaction_index >= 0:
            break

    messages: list[dict[str, Any]] = []
    if compaction_index < 0:
        selected: Sequence[Record] = path
    else:
        compaction = path[compaction_index].entry
        messages.append(_compaction_summary(compaction))
        first_kept = compaction.get("firstKeptEntryId")
        start = compaction_index
        for index in range(compaction_index):
            if path[index].id == first_kept:
                start = index
                break
        selected = [*path[start:compaction_index], *path[compaction_index + 1 :]]
    for record in selected:
        message = entry_to_message(record)
        if message is not None:
            messages.append(message)
    return SessionContext(messages=messages, thinking_level=thinking_level, model=model)
