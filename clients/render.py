"""Human-readable output for the CLI and the demo: results, tables, trees, live events.

Kept apart from the CLI's control flow so the demo and ``chat`` print the same way.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from rpcd.clients.errors import RpcError
from rpcd.protocol.names import HOST_STATUS, PROGRESS, SESSION_DIAGNOSTICS, SESSION_EVENT, SESSION_LIFECYCLE, UI_NOTIFY

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]{0,127}$")
HINTS = {
    ("fork", "INVALID_ENTRY"): "fork takes the id of a user message (Pi forks before a prompt): `rpcctl tree` "
                               "shows the ids, `/fork` without an ID in chat lists the candidates",
    ("resume", "NOT_A_SESSION"): "resume takes a .jsonl session file: `rpcctl sessions` lists them",
}


def rpc_error(exc: RpcError) -> str:
    """``exc.describe()`` plus what to do about it, where the daemon's (Pi's) message is terse."""
    hint = HINTS.get((exc.method or "", exc.name))
    text = exc.describe()
    if exc.errors and exc.errors[0].get("type") == "SessionLocked":
        # restarting rpcctl changes nothing: the other process must let go, or another session be used
        text = text.replace("\n  the daemon's host is terminal: restart it to continue", "")
        hint = ("another rpcd process (the pid above: a chat, an editor) is writing this session; "
                "leave it there first, or work on another session (rpcctl sessions lists them)")
    return text + (f"\n  hint: {hint}" if hint else "")


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
    file = result.get("sessionFile", "(in memory)")
    lines.append(f"  file: {file if file else '(not saved)'}")
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
        ("sandbox", _sandbox(result.get("sandbox"))),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def _sandbox(sandbox: Any) -> str:
    """``getState.sandbox`` in one line: ``workspace-write (bwrap, no network)``, or why it cannot be enforced."""
    if not isinstance(sandbox, Mapping):
        return "-"
    mode = str(sandbox.get("mode", "-"))
    if mode == "off":
        return mode
    if sandbox.get("problem"):
        return f"{mode} (cannot be enforced: {sandbox['problem']})"
    network = "network" if sandbox.get("network") else "no network"
    return f"{mode} ({sandbox.get('mechanism', '?')}, {network})"


APPROVAL_PREVIEW_CHARS = 400
"""Characters of each argument shown in an approval question (the daemon already cut at 2000)."""


def approval_question(params: Mapping[str, Any], *, arguments: bool = True) -> str:
    """A ``tool/authorize`` request for a person: the title, the kind, each argument (long ones
    shortened, multi-line ones indented; left out when a diff already showed them) and the paths it
    touches."""
    lines = [f"[approval] {params.get('title')}  ({params.get('kind', 'other')})"]
    shown = params.get("arguments") if arguments else None
    for key, value in (shown.items() if isinstance(shown, Mapping) else ()):
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


def trust_decisions(result: Mapping[str, Any]) -> str:
    decisions = result.get("decisions") or []
    notes = [f"warning: {d.get('message')}" for d in result.get("diagnostics") or [] if isinstance(d, Mapping)]
    if not decisions:
        return "\n".join([*notes, "no saved trust decisions"])
    rows = [("trusted" if d.get("trusted") else "not trusted", d.get("directory")) for d in decisions]
    return "\n".join([*notes, table(("decision", "directory"), rows)])


def model(result: Mapping[str, Any]) -> str:
    return f"model: {result.get('provider')}/{result.get('modelId')}"


def models(result: Mapping[str, Any]) -> str:
    """``getAvailableModels`` as a table, the session's current model marked ``*``."""
    current = result.get("current")
    here = (current.get("provider"), current.get("modelId")) if isinstance(current, Mapping) else None
    rows = [("*" if (m.get("provider"), m.get("id")) == here else "", m.get("provider"), m.get("id"), m.get("name"),
             _tokens(m.get("contextWindow")), _tokens(m.get("maxTokens")), "yes" if m.get("reasoning") else "no",
             "yes" if "image" in (m.get("input") or ()) else "no")
            for m in result.get("models") or () if isinstance(m, Mapping)]
    if not rows:
        if result.get("search"):
            return f"no usable model matches {result['search']!r} (`rpcctl models` lists them all)"
        return "no models usable: no provider has credentials (see `rpcctl doctor`)"
    return table(("", "provider", "model", "name", "context", "max-out", "thinking", "images"), rows)


def _tokens(count: Any) -> str:
    """Pi's token counts: 200000 -> 200K, 1000000 -> 1M."""
    if not isinstance(count, int | float):
        return ""
    for size, unit in ((1_000_000, "M"), (1_000, "K")):
        if count >= size:
            value = count / size
            return f"{value:g}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return str(int(count))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def local_time(stamp: Any) -> str:
    """An ISO-8601 timestamp (UTC ``…Z``) in the local time zone, to the minute: ``2025-06-01 14:03``."""
    from datetime import datetime

    if not isinstance(stamp, str) or not stamp:
        return ""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M")
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def home_short(path: Any) -> str:
    """``/home/me/proj`` as ``~/proj``."""
    import os

    text = str(path or "")
    home = os.path.expanduser("~")
    return "~" + text[len(home):] if home != "/" and (text == home or text.startswith(home + "/")) else text


def sessions(result: Mapping[str, Any], *, every_project: bool = False) -> str:
    """``listSessions`` as a table: local times, the id's first characters (what ``--session`` and
    ``resume`` take), and for every project's listing the project of each."""
    items = result.get("sessions") or []
    if not items:
        return "no sessions"
    headers: tuple[str, ...] = ("updated", "id", "msgs", "title")
    ids = [str(s.get("sessionId", "")) for s in items]
    width = unique_prefix_length(ids)
    rows = []
    for s in items:
        row = [local_time(s.get("updatedAt")), str(s.get("sessionId", ""))[:width], s.get("messageCount", ""),
               short(s.get("title", ""), 40)]
        if every_project:
            row.append(home_short(s.get("cwd")))
        row.append(s.get("sessionFile", ""))
        rows.append(row)
    headers = (*headers, "cwd", "file") if every_project else (*headers, "file")
    text = table(headers, rows)
    if result.get("nextCursor"):
        text += f"\n(more: --cursor {result['nextCursor']})"
    return text


def unique_prefix_length(ids: Sequence[str], minimum: int = 8) -> int:
    """The shortest prefix length (at least ``minimum``) telling these ids apart — what to show and
    type (``--session``): uuidv7 ids made the same minute share their first characters."""
    distinct = sorted(set(ids))
    width = minimum
    for a, b in itertools.pairwise(distinct):
        common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        width = max(width, common + 1)
    return width


def turn_failure(outcome: Mapping[str, Any]) -> str:
    """A failed or aborted turn for a person: what went wrong, in the provider's words."""
    stop = outcome.get("stopReason")
    reason = str(outcome.get("errorMessage") or "no reason given")
    if stop == "aborted":  # Pi: "Operation aborted" unless the abort said more than that
        return "(turn aborted)" if reason in ("Request was aborted", "the turn was aborted") else f"aborted: {reason}"
    return f"error: the turn failed: {reason}"


def transcript_file_name(data: bytes) -> str:
    """The name Pi gives a session's file, from a transcript's header line: ``<timestamp>_<id>.jsonl``
    (``imported.jsonl`` when the first line is no session header)."""
    first = data.split(b"\n", 1)[0]
    try:
        header = json.loads(first)
    except ValueError:
        return "imported.jsonl"
    if not isinstance(header, Mapping) or header.get("type") != "session":
        return "imported.jsonl"
    session_id, stamp = header.get("id"), header.get("timestamp")
    if not isinstance(session_id, str) or not _SAFE_NAME.match(session_id):
        return "imported.jsonl"
    if isinstance(stamp, str) and _SAFE_NAME.match(stamp.replace(":", "-").replace(".", "-")):
        return f"{stamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
    return f"{session_id}.jsonl"


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
    return [f"[{operation}] {d.get('type')}: {d.get('message')}{_how_to_fix(str(d.get('message')), params)}"
            for d in params.get("diagnostics") or ()
            if isinstance(d, Mapping) and (include_info or d.get("type") != "info")]


def _how_to_fix(message: str, params: Mapping[str, Any]) -> str:
    """What rpcctl offers for a diagnostic the daemon words for every client."""
    if "is not trusted; ignoring its project resources" in message:
        return (f" (with rpcctl: `rpcctl trust add {params.get('cwd') or '.'}` once, `/trust` in chat, "
                "or --trust trust-once for one run)")
    return ""


def _result_head(event: Mapping[str, Any], limit: int = 72) -> str:
    """The first line of a tool result's text, shortened (what a human wants to see go by)."""
    result = event.get("result")
    content = result.get("content") if isinstance(result, Mapping) else None
    texts = [b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"]
    first = " ".join(texts).strip().splitlines()[0] if any(t.strip() for t in texts) else "(no text)"
    return json.dumps(first if len(first) <= limit else first[: limit - 1] + "…", ensure_ascii=False)


def human_event(event: Mapping[str, Any]) -> str | None:
    """The events shown to a person without ``-v``, in words (no protocol labels)."""
    kind = event.get("type")
    if kind == "auto_retry_start":
        seconds = (event.get("delayMs") or 0) / 1000
        return (f"retrying (attempt {event.get('attempt')}/{event.get('maxAttempts')}) in {seconds:g} s: "
                f"{event.get('errorMessage', '')}")
    if kind == "auto_retry_end":
        return "the retry succeeded" if event.get("success") else f"gave up retrying: {event.get('finalError', '')}"
    if kind == "extension_error":
        where = f"{event.get('extensionPath', '?')} ({event.get('event', '')})"
        return f"extension error in {where}: {event.get('error', '')}"
    if kind == "compaction_start":
        return f"compacting the context ({event.get('reason', '')})…"
    if kind == "compaction_end":
        if event.get("aborted"):
            return "compaction aborted"
        if event.get("errorMessage"):
            return f"compaction failed: {event['errorMessage']}"
        return "context compacted"
    return None


def event_line(method: str, params: Any, *, ids: bool = True) -> str | None:
    """One line for a notification (None for text deltas, which stream inline); ``ids=False``: in
    words for a person, without the generation and sequence labels."""
    if not isinstance(params, Mapping):
        return f"[{method}]"
    if not ids:
        if method == SESSION_EVENT and isinstance(params.get("event"), Mapping):
            return human_event(params["event"])
        if method == HOST_STATUS:
            return f"the daemon's session host is {params.get('status')}: later requests fail (the error says why)"
        if method == UI_NOTIFY:
            return str(params.get("message", ""))
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


def session_stats(result: Mapping[str, Any]) -> str:
    """``/session``: Pi's session facts — file, id, messages, tokens, cost, context."""
    tokens = result.get("tokens") or {}
    usage = result.get("contextUsage") or {}
    model = result.get("model")
    rows = [
        ("session", result.get("sessionId")),
        ("name", result.get("name") or "-"),
        ("file", result.get("sessionFile") or "(not saved yet)"),
        ("cwd", result.get("cwd")),
        ("model", f"{model.get('provider')}/{model.get('modelId')}" if isinstance(model, Mapping) else "-"),
        ("messages", f"{result.get('userMessages')} yours, {result.get('assistantMessages')} replies, "
                     f"{result.get('toolCalls')} tool calls ({result.get('totalMessages')} in all)"),
        ("tokens", f"{tokens.get('input', 0)} in, {tokens.get('output', 0)} out, {tokens.get('cacheRead', 0)} cache "
                   f"read, {tokens.get('cacheWrite', 0)} cache write ({tokens.get('total', 0)} in all)"),
        ("cost", f"${float(result.get('cost') or 0):.4f}"),
    ]
    if usage:
        percent = usage.get("percent")
        rows.append(("context", f"{usage.get('tokens') or '?'} of {usage.get('contextWindow')} tokens"
                                + (f" ({percent:.0f}%)" if isinstance(percent, int | float) else "")))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def bash_result(result: Mapping[str, Any], *, shown_to_model: bool) -> str:
    """A ``!command``'s output and how it ended."""
    output = str(result.get("output") or "").rstrip("\n")
    code = result.get("exitCode")
    end = "cancelled" if result.get("cancelled") else (f"exit {code}" if code is not None else "killed")
    tail = [f"(truncated; full output: {result['fullOutputPath']})"] if result.get("fullOutputPath") else []
    seen = "the model sees it with your next prompt" if shown_to_model else "not shown to the model"
    return "\n".join([*(f"  │ {line}" for line in output.split("\n") if output), *tail, f"  └ {end} ({seen})"])
