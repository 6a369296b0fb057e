"""Human-readable output for the CLI and the demo: results, tables, trees, live events.

Kept apart from the CLI's control flow so the demo and ``chat`` print the same way.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from rpcd.clients.errors import RpcError
from rpcd.protocol.names import HOST_STATUS, PROGRESS, SESSION_DIAGNOSTICS, SESSION_EVENT, SESSION_LIFECYCLE, UI_NOTIFY

HINTS = {
    ("fork", "INVALID_ENTRY"): "fork takes the id of a user message (Pi forks before a prompt): `rpcctl tree` "
                               "shows the ids, `/fork` without an ID in chat lists the candidates",
    ("resume", "NOT_A_SESSION"): "resume takes a .jsonl session file: `rpcctl sessions` lists them",
}


def rpc_error(exc: RpcError) -> str:
    """``exc.describe()`` plus what to do about it, where the daemon's (Pi's) message is terse."""
    hint = HINTS.get((exc.method or "", exc.name))
    return exc.describe() + (f"\n  hint: {hint}" if hint else "")


def short(text: Any, width: int = 60) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def message_text(message: Mapping[str, Any]) -> str:
    """The text parts of a Pi message (``content`` is a string or a list of typed parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping):
                if part.get("type") == "text":
                    parts.append(str(part.get("text", "")))
                elif part.get("type") == "toolCall":
                    parts.append(f"[tool call {part.get('name', '?')}]")
        return " ".join(parts)
    return ""


def replacement(result: Mapping[str, Any], label: str) -> str:
    if result.get("cancelled"):
        return f"{label}: cancelled (the previous session stays current)"
    lines = [f"{label}: session {result.get('sessionId')} (generation {result.get('generation')})"]
    lines.append(f"  cwd:  {result.get('cwd')}")
    lines.append(f"  file: {result.get('sessionFile', '(in memory)')}")
    if "selectedText" in result:
        lines.append(f"  selected text: {result['selectedText']!r}")
    return "\n".join(lines)


def state(result: Mapping[str, Any]) -> str:
    model = result.get("model")
    rows = [
        ("session", result.get("sessionId")),
        ("status", result.get("status")),
        ("generation", result.get("generation")),
        ("name", result.get("name", "-")),
        ("cwd", result.get("cwd")),
        ("file", result.get("sessionFile", "(in memory)")),
        ("leaf", result.get("leafId") or "-"),
        ("model", f"{model.get('provider')}/{model.get('modelId')}" if isinstance(model, Mapping) else "-"),
        ("thinking", result.get("thinkingLevel", "-")),
        ("streaming", result.get("isStreaming")),
        ("messages", result.get("messageCount")),
        ("approval", result.get("approvalPolicy", "-")),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


APPROVAL_PREVIEW_CHARS = 400
"""Characters of each argument shown in an approval question (the daemon already cut at 2000)."""


def approval_question(params: Mapping[str, Any]) -> str:
    """A ``tool/authorize`` request for a person: the title, the kind, each argument (long ones
    shortened, multi-line ones indented) and the paths it touches."""
    lines = [f"[approval] {params.get('title')}  ({params.get('kind', 'other')})"]
    arguments = params.get("arguments")
    for key, value in (arguments.items() if isinstance(arguments, Mapping) else ()):
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(text) > APPROVAL_PREVIEW_CHARS:
            text = f"{text[:APPROVAL_PREVIEW_CHARS]}… [{len(text) - APPROVAL_PREVIEW_CHARS} more characters]"
        first, *rest = text.split("\n")
        lines.append(f"  {key}: {first}")
        lines += [f"  {' ' * len(str(key))}  {line}" for line in rest[:20]]
        if len(rest) > 20:
            lines.append(f"  {' ' * len(str(key))}  … [{len(rest) - 20} more lines]")
    locations = params.get("locations")
    for location in (locations if isinstance(locations, list) else []):
        if isinstance(location, Mapping):
            lines.append(f"  touches: {location.get('path')}")
    return "\n".join(lines)


def approval_rules(result: Mapping[str, Any]) -> str:
    rules = result.get("rules") or []
    notes = [f"warning: {d.get('message')}" for d in result.get("diagnostics") or [] if isinstance(d, Mapping)]
    if not rules:
        return "\n".join([*notes, "no approval rules"])
    rows = [(r.get("id"), r.get("decision"), r.get("toolName"),
             r.get("command") or r.get("path") or "(every call)", r.get("project")) for r in rules]
    return "\n".join([*notes, table(("id", "decision", "tool", "matches", "project"), rows)])


def model(result: Mapping[str, Any]) -> str:
    return f"model: {result.get('provider')}/{result.get('modelId')}"


def models(result: Mapping[str, Any]) -> str:
    """``getAvailableModels`` as a table, the session's current model marked ``*``."""
    current = result.get("current")
    here = (current.get("provider"), current.get("modelId")) if isinstance(current, Mapping) else None
    rows = [("*" if (m.get("provider"), m.get("id")) == here else "", m.get("provider"), m.get("id"), m.get("name"),
             "yes" if m.get("reasoning") else "", m.get("contextWindow"))
            for m in result.get("models") or () if isinstance(m, Mapping)]
    if not rows:
        return "no models usable: no provider has credentials (see `rpcctl doctor`)"
    return table(("", "provider", "model", "name", "reasoning", "context"), rows)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def sessions(result: Mapping[str, Any]) -> str:
    items = result.get("sessions") or []
    if not items:
        return "no sessions"
    rows = [
        (s.get("updatedAt", ""), s.get("messageCount", ""), short(s.get("title", ""), 40), s.get("sessionFile", ""))
        for s in items
    ]
    text = table(("updated", "msgs", "title", "file"), rows)
    if result.get("nextCursor"):
        text += f"\n(more: --cursor {result['nextCursor']})"
    return text


def deleted(result: Mapping[str, Any]) -> str:
    if result.get("method") == "trash":
        return f"moved to the trash: {result.get('trashPath')}"
    return "deleted (no trash available)"


def entry_summary(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type", "?")
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        message = entry["message"]
        return f"{message.get('role', '?')}: {short(message_text(message), 50)}"
    if kind == "session_info" and "name" in entry:
        return f"name: {entry['name']}"
    return str(kind)


def tree(result: Mapping[str, Any]) -> str:
    entries = [e for e in result.get("entries") or [] if isinstance(e, Mapping) and "id" in e]
    if not entries:
        return "(empty tree)"
    leaf = result.get("leafId")
    labels = result.get("labels") or {}
    children: dict[Any, list[Mapping[str, Any]]] = {}
    ids = {e["id"] for e in entries}
    for entry in entries:
        parent = entry.get("parentId")
        children.setdefault(parent if parent in ids else None, []).append(entry)
    lines: list[str] = []
    stack: list[tuple[Mapping[str, Any], int]] = [(e, 0) for e in reversed(children.get(None, []))]
    while stack:
        entry, depth = stack.pop()
        marker = " <- leaf" if entry["id"] == leaf else ""
        label = f" [{labels[entry['id']]}]" if entry["id"] in labels else ""
        lines.append(f"{'  ' * depth}{entry['id']}  {entry_summary(entry)}{label}{marker}")
        kids = children.get(entry["id"], [])
        step = 1 if len(kids) > 1 else 0  # a chain stays flat; branches indent
        stack += [(kid, depth + step) for kid in reversed(kids)]
    return "\n".join(lines)


def messages(result: Mapping[str, Any]) -> str:
    items = result.get("messages") or []
    if not items:
        return "(no messages)"
    return "\n".join(f"{m.get('role', '?'):>10}: {message_text(m)}" for m in items if isinstance(m, Mapping))


def text_delta(params: Mapping[str, Any]) -> str | None:
    """The assistant text a ``session/event`` carries, if it is a ``text_delta``."""
    event = params.get("event")
    if not isinstance(event, Mapping) or event.get("type") != "message_update":
        return None
    delta = event.get("assistantMessageEvent")
    if isinstance(delta, Mapping) and delta.get("type") == "text_delta":
        return str(delta.get("delta", ""))
    return None


def thinking_delta(params: Mapping[str, Any]) -> str | None:
    """The reasoning text a ``session/event`` carries, if it is a ``thinking_delta``."""
    event = params.get("event")
    if not isinstance(event, Mapping) or event.get("type") != "message_update":
        return None
    delta = event.get("assistantMessageEvent")
    if isinstance(delta, Mapping) and delta.get("type") == "thinking_delta":
        return str(delta.get("delta", ""))
    return None


def diagnostic_lines(params: Any, *, include_info: bool = False) -> list[str]:
    """``session/diagnostics`` for a person: ``[startup] warning: …`` per item (info only if asked)."""
    if not isinstance(params, Mapping):
        return []
    operation = params.get("operation", "?")
    return [f"[{operation}] {d.get('type')}: {d.get('message')}" for d in params.get("diagnostics") or ()
            if isinstance(d, Mapping) and (include_info or d.get("type") != "info")]


def _result_head(event: Mapping[str, Any], limit: int = 72) -> str:
    """The first line of a tool result's text, shortened (what a human wants to see go by)."""
    result = event.get("result")
    content = result.get("content") if isinstance(result, Mapping) else None
    texts = [b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"]
    first = " ".join(texts).strip().splitlines()[0] if any(t.strip() for t in texts) else "(no text)"
    return json.dumps(first if len(first) <= limit else first[: limit - 1] + "…", ensure_ascii=False)


def event_line(method: str, params: Any) -> str | None:
    """One labelled line for a notification (None for text deltas, which stream inline)."""
    if not isinstance(params, Mapping):
        return f"[{method}]"
    if method == SESSION_EVENT:
        if text_delta(params) is not None:
            return None
        event = params.get("event") or {}
        kind = event.get("type", "?")
        if kind == "message_update":
            return None  # thinking/toolcall deltas and text_start/end: too chatty for humans
        detail = ""
        if kind in ("message_start", "message_end") and isinstance(event.get("message"), Mapping):
            message = event["message"]
            detail = f" {message.get('role', '')}"
            if kind == "message_end" and message.get("stopReason") in ("error", "aborted"):
                detail += f" ({message.get('stopReason')}: {message.get('errorMessage') or 'no reason given'})"
        elif kind == "tool_execution_start":
            detail = f" {event.get('toolName', '')} {json.dumps(event.get('args', {}), ensure_ascii=False)}"
        elif kind == "tool_execution_end":
            detail = f" {event.get('toolName', '')}{' (error)' if event.get('isError') else ''}: {_result_head(event)}"
        elif kind.startswith("tool_execution"):
            detail = f" {event.get('toolName', '')}"
        elif kind == "auto_retry_start":
            detail = (f" attempt {event.get('attempt')}/{event.get('maxAttempts')} in {event.get('delayMs')} ms:"
                      f" {event.get('errorMessage', '')}")
        elif kind == "auto_retry_end":
            detail = f" {'succeeded' if event.get('success') else 'gave up: ' + str(event.get('finalError', ''))}"
        elif kind == "extension_error":
            detail = f" {event.get('extensionPath', '')} ({event.get('event', '')}): {event.get('error', '')}"
        return f"[event g{params.get('generation')}#{params.get('seq')}] {kind}{detail}"
    if method == SESSION_LIFECYCLE:
        event = params.get("event") or {}
        extra = {k: v for k, v in event.items() if k != "type"}
        suffix = f" {json.dumps(extra)}" if extra else ""
        return f"[lifecycle g{params.get('generation')}#{params.get('seq')}] {event.get('type')}{suffix}"
    if method == SESSION_DIAGNOSTICS:
        diagnostics = params.get("diagnostics") or []
        count = f"{len(diagnostics)} item(s)" if diagnostics else "nothing to report"
        head = f"[diagnostics g{params.get('generation')}] {params.get('operation')}: {count}"
        return "\n".join([head, *(f"    {d.get('type')}: {d.get('message')}" for d in diagnostics)])
    if method == HOST_STATUS:
        return f"[host] status={params.get('status')} generation={params.get('generation')}"
    if method == PROGRESS:
        value = params.get("value") or {}
        pct = f" {value['percentage']}%" if "percentage" in value else ""
        return f"[progress] {value.get('kind')} {value.get('title', '')} {value.get('message', '')}{pct}".rstrip()
    if method == UI_NOTIFY:
        return f"[notify] {params.get('message')}"
    return f"[{method}]"


class ProgressDisplay:
    """One line that updates in place on a terminal; plain begin/end lines otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._title = ""

    def __call__(self, value: Mapping[str, Any]) -> None:
        kind = value.get("kind")
        if kind == "begin":
            self._title = str(value.get("title", "working"))
        pct = f" {value['percentage']:>3}%" if isinstance(value.get("percentage"), int | float) else ""
        # the end says how it ended (done / failed / cancelled): never "done" before an error
        outcome = f" {value.get('message') or 'done'}" if kind == "end" else ""
        message = "" if kind == "end" else value.get("message", "")
        text = f"{self._title}{pct} {message}".rstrip()
        if self._tty:
            end = "\n" if kind == "end" else ""
            self._stream.write(f"\r\x1b[K{text}{outcome}{end}")
        elif kind in ("begin", "end"):
            self._stream.write(f"{text} ...{outcome}\n")
        self._stream.flush()
