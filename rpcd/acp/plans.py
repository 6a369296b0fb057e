"""ACP ``plan`` updates from what a session already says about its to-do list.

A plan is found in three places, each a list of to-do items under ``todos`` (or ``plan``):

* an extension's ``appendEntry(customType, data)`` (Pi's API; an ``entry_appended`` event) whose
  ``data`` holds the list — what Pi's ``plan-mode`` example extension persists
  (``{todos: [{step, text, completed}]}``), so plan-mode extensions drive the editor's plan view
  unchanged, in Python (``pi.append_entry``) and TypeScript alike;
* the arguments of a todo-style tool call (Claude Code's ``TodoWrite {todos: [{content, status}]}``,
  Codex's ``update_plan {plan: [{step, status}]}``, Gemini's ``write_todos {todos: [{description,
  status}]}``), when the call starts;
* a tool result's ``details`` (Pi's ``todo`` example tool keeps ``{todos: [{id, text, done}]}`` there),
  when the call ends.

An item's text is the first string of ``content``, ``text``, ``description``, ``title``, ``step``; its
status ``status`` (``pending``/``in_progress``/``completed``; ``cancelled`` counts as completed), else
``completed``/``done`` booleans, else ``pending``; its ``priority`` is kept when it is ACP's
(``high``/``medium``/``low``), else ``medium``. A list with an item that has no text is no plan (a
tool's own unrelated ``todos``/``plan`` field is left alone). An empty list clears the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from acp.schema import AgentPlanUpdate, PlanEntry, PlanEntryPriority, PlanEntryStatus

LIST_KEYS: Final = ("todos", "plan")
TEXT_KEYS: Final = ("content", "text", "description", "title", "step")
STATUSES: Final[Mapping[str, PlanEntryStatus]] = {
    "pending": "pending", "in_progress": "in_progress", "completed": "completed", "cancelled": "completed",
}
PRIORITIES: Final[frozenset[PlanEntryPriority]] = frozenset({"high", "medium", "low"})
ENTRY_CHARS: Final = 500


def plan_in(value: Any) -> list[PlanEntry] | None:
    """The plan ``value`` holds (a mapping with a ``todos``/``plan`` list), or ``None``."""
    if not isinstance(value, Mapping):
        return None
    for key in LIST_KEYS:
        items = value.get(key)
        if isinstance(items, Sequence) and not isinstance(items, str):
            return _entries(items)
    return None


def _entries(items: Sequence[Any]) -> list[PlanEntry] | None:
    entries: list[PlanEntry] = []
    for item in items:
        if not isinstance(item, Mapping):
            return None
        text = next((item[key] for key in TEXT_KEYS if isinstance(item.get(key), str) and item[key].strip()), None)
        if text is None:
            return None
        priority = item.get("priority")
        entries.append(PlanEntry(content=text.strip()[:ENTRY_CHARS], status=_status(item),
                                 priority=priority if priority in PRIORITIES else "medium"))
    return entries


def _status(item: Mapping[str, Any]) -> PlanEntryStatus:
    status = item.get("status")
    if isinstance(status, str) and status in STATUSES:
        return STATUSES[status]
    if item.get("completed") is True or item.get("done") is True:
        return "completed"
    return "pending"


class PlanTracker:
    """The plan last sent to one session's editor: an update only when it changed."""

    def __init__(self) -> None:
        self._sent: list[PlanEntry] | None = None

    def update(self, entries: list[PlanEntry] | None) -> AgentPlanUpdate | None:
        if entries is None or entries == self._sent:
            return None
        self._sent = entries
        return AgentPlanUpdate(session_update="plan", entries=list(entries))
