"""Entry shapes: one builder per entry type, keys in the order Pi 0.85.0 writes them.

Entries are plain ``dict`` objects in Pi's shape (they go to the wire and into the file
as they are). Dict insertion order is the key order on disk, so each builder lists keys
exactly as Pi's object literals do; optional keys that are unset are left out, as
``JSON.stringify`` drops ``undefined``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from rpcd.core.jstext import JS_WHITESPACE as JS_WHITESPACE
from rpcd.core.jstext import content_text
from rpcd.core.jstext import js_trim as js_trim
from rpcd.core.jstext import js_truthy as js_truthy

SESSION: Final = "session"
MESSAGE: Final = "message"
MODEL_CHANGE: Final = "model_change"
THINKING_LEVEL_CHANGE: Final = "thinking_level_change"
COMPACTION: Final = "compaction"
BRANCH_SUMMARY: Final = "branch_summary"
CUSTOM: Final = "custom"
CUSTOM_MESSAGE: Final = "custom_message"
LABEL: Final = "label"
SESSION_INFO: Final = "session_info"
CHECKPOINT_CUSTOM_TYPE: Final = "rpcd.checkpoint"
"""The ``customType`` of rpcd's file checkpoints (``rpcd.store.checkpoints``): a ``custom`` entry,
which Pi keeps and leaves out of the context."""

KNOWN_ENTRY_TYPES: Final = frozenset(
    {
        MESSAGE,
        MODEL_CHANGE,
        THINKING_LEVEL_CHANGE,
        COMPACTION,
        BRANCH_SUMMARY,
        CUSTOM,
        CUSTOM_MESSAGE,
        LABEL,
        SESSION_INFO,
    }
)
"""Types Pi 0.85.0 writes. Anything else (``usage``, ``context_edit`` from newer Pi) is kept
verbatim and ignored by context building, as Pi 0.85.0 ignores it."""

MESSAGE_ROLES: Final = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom"})
CURRENT_SESSION_VERSION: Final = 3

def compact(entry: dict[str, Any]) -> dict[str, Any]:
    """Drop keys whose value is ``None`` where Pi would have ``undefined``."""
    return {k: v for k, v in entry.items() if v is not None}


def header(session_id: str, timestamp: str, cwd: str, parent_session: str | None = None) -> dict[str, Any]:
    return compact(
        {
            "type": SESSION,
            "version": CURRENT_SESSION_VERSION,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": cwd,
            "parentSession": parent_session,
        }
    )


def base(kind: str, entry_id: str, parent_id: str | None, timestamp: str) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}


def message(entry_id: str, parent_id: str | None, timestamp: str, msg: dict[str, Any]) -> dict[str, Any]:
    return {**base(MESSAGE, entry_id, parent_id, timestamp), "message": msg}


def model_change(entry_id: str, parent_id: str | None, timestamp: str, provider: str, model_id: str) -> dict[str, Any]:
    return {**base(MODEL_CHANGE, entry_id, parent_id, timestamp), "provider": provider, "modelId": model_id}


def thinking_level_change(entry_id: str, parent_id: str | None, timestamp: str, level: str) -> dict[str, Any]:
    return {**base(THINKING_LEVEL_CHANGE, entry_id, parent_id, timestamp), "thinkingLevel": level}


def compaction(
    entry_id: str,
    parent_id: str | None,
    timestamp: str,
    summary: str,
    first_kept_entry_id: str | None,
    tokens_before: int,
    details: Any = None,
    usage: Any = None,
    from_hook: bool | None = None,
) -> dict[str, Any]:
    # ``firstKeptEntryId: null`` ("keep nothing before the summary") is written as Pi 0.85.0
    # writes it; only the truly optional keys are omitted when unset.
    body = {
        "summary": summary,
        "firstKeptEntryId": first_kept_entry_id,
        "tokensBefore": tokens_before,
        **compact({"details": details, "usage": usage, "fromHook": from_hook}),
    }
    return {**base(COMPACTION, entry_id, parent_id, timestamp), **body}


def branch_summary(
    entry_id: str,
    parent_id: str | None,
    timestamp: str,
    from_id: str,
    summary: str,
    details: Any = None,
    usage: Any = None,
    from_hook: bool | None = None,
) -> dict[str, Any]:
    body = {"fromId": from_id, "summary": summary, "details": details, "usage": usage, "fromHook": from_hook}
    return {**base(BRANCH_SUMMARY, entry_id, parent_id, timestamp), **compact(body)}


def custom(entry_id: str, parent_id: str | None, timestamp: str, custom_type: str, data: Any = None) -> dict[str, Any]:
    head = compact({"type": CUSTOM, "customType": custom_type, "data": data})
    return {**head, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}


def custom_message(
    entry_id: str,
    parent_id: str | None,
    timestamp: str,
    custom_type: str,
    content: Any,
    display: bool,
    details: Any = None,
) -> dict[str, Any]:
    head = compact(
        {"type": CUSTOM_MESSAGE, "customType": custom_type, "content": content, "display": display, "details": details}
    )
    return {**head, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}


def label(entry_id: str, parent_id: str | None, timestamp: str, target_id: str, text: str | None) -> dict[str, Any]:
    return {**base(LABEL, entry_id, parent_id, timestamp), **compact({"targetId": target_id, "label": text})}


def session_info(entry_id: str, parent_id: str | None, timestamp: str, name: str) -> dict[str, Any]:
    return {**base(SESSION_INFO, entry_id, parent_id, timestamp), "name": name}


def first_user_text(entries: Iterable[Mapping[str, Any]]) -> str:
    """The text of the first user message among ``entries`` that has any (``""``: none): what an
    export shows as the title of a session without a name."""
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") == MESSAGE and isinstance(message, Mapping) and message.get("role") == "user":
            text = content_text(message.get("content"), " ")
            if text.strip():
                return text
    return ""
