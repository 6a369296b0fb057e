"""A session's branch as readable Markdown: messages in order, tool calls folded.

What the document holds: a title (the session's name, else its first user message), the
header facts, then the entries of one branch (root -> leaf) in order: user and assistant text
as Markdown; every tool call folded in a ``<details>`` block (GitHub, GitLab, VS Code and most
renderers show it collapsed) with its arguments and its result (the ``toolResult`` message of the
same call, found by id, so a call and its outcome read together); thinking folded too; user
``bash`` runs, compaction and branch summaries, custom messages folded; model / thinking / name
changes and rpcd's file checkpoints as one-line notes. Images are described, not embedded.

Long tool output is cut (``MAX_RESULT_LINES`` / ``MAX_RESULT_CHARS``) with a note of what was
left out: the export is for reading; the session file keeps everything. Code fences are longer
than any backtick run inside them, so content never closes its own fence. The finished text is
redacted (``rpcd.core.redact``) before anyone sees it: an export is made to be shared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import attrs

from rpcd.core.redact import redact
from rpcd.store import entries as E

__all__ = ["MarkdownExport", "render_markdown"]

MAX_RESULT_LINES: Final = 200
MAX_RESULT_CHARS: Final = 20_000
SUMMARY_CHARS: Final = 100

_BACKTICKS = re.compile(r"`+")
_SPACE = re.compile(r"\s+")


@attrs.frozen
class MarkdownExport:
    """What the document shows: the header, and the branch's entries in order (root first)."""

    header: Mapping[str, Any]
    branch: Sequence[Mapping[str, Any]]
    name: str | None = None
    session_file: str | None = None
    labels: Mapping[str, str] = attrs.field(factory=dict)
    exported_at: str | None = None


def render_markdown(export: MarkdownExport) -> str:
    """The document as text (UTF-8 when written), redacted."""
    results = _tool_results(export.branch)
    parts = [f"# {_inline(_title(export))}", "", *_facts(export), ""]
    used: set[str] = set()
    for entry in export.branch:
        block = _entry(entry, results, used, export.labels)
        if block:
            parts.extend(["---", "", block, ""])
    return redact("\n".join(parts).rstrip("\n") + "\n")


# -- the document's parts -------------------------------------------------------------------


def _title(export: MarkdownExport) -> str:
    if export.name:
        return export.name
    return _one_line(E.first_user_text(export.branch), 80) or f"Session {export.header.get('id', '')}"


def _facts(export: MarkdownExport) -> list[str]:
    header = export.header
    facts = [
        ("Session", header.get("id")),
        ("Working directory", header.get("cwd")),
        ("Created", header.get("timestamp")),
        ("File", export.session_file),
        ("Parent session", header.get("parentSession")),
        ("Entries on this branch", len(export.branch)),
        ("Exported", export.exported_at or datetime.now(UTC).isoformat(timespec="seconds")),
    ]
    return [f"- **{key}:** {_code(str(value))}" for key, value in facts if value is not None]


def _tool_results(branch: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The ``toolResult`` messages of the branch by their call id (the first one of an id wins)."""
    found: dict[str, Mapping[str, Any]] = {}
    for entry in branch:
        message = entry.get("message")
        if entry.get("type") == E.MESSAGE and isinstance(message, Mapping) and message.get("role") == "toolResult":
            call_id = message.get("toolCallId")
            if isinstance(call_id, str) and call_id not in found:
                found[call_id] = message
    return found


def _entry(entry: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]], used: set[str],
           labels: Mapping[str, str]) -> str:
    kind = entry.get("type")
    entry_id = entry.get("id")
    label = labels.get(entry_id) if isinstance(entry_id, str) else None
    tag = f" 🏷 {_inline(label)}" if label else ""
    stamp = _when(entry.get("timestamp"))
    if kind == E.MESSAGE and isinstance(entry.get("message"), Mapping):
        return _message(entry["message"], results, used, tag, stamp)
    if kind == E.COMPACTION:
        tokens = entry.get("tokensBefore")
        title = f"Compaction summary ({tokens} tokens before)" if tokens is not None else "Compaction summary"
        return _fold(title, str(entry.get("summary", "")))
    if kind == E.BRANCH_SUMMARY:
        return _fold("Summary of a branch left", str(entry.get("summary", "")))
    if kind == E.CUSTOM_MESSAGE:
        return _fold(f"Extension message: {entry.get('customType', '')}", _content_text(entry.get("content")))
    if kind == E.MODEL_CHANGE:
        model = f"{entry.get('provider')}/{entry.get('modelId')}"
        return f"_Model: {_code(model)}_{tag}"
    if kind == E.THINKING_LEVEL_CHANGE:
        return f"_Thinking level: {_code(str(entry.get('thinkingLevel')))}_{tag}"
    if kind == E.SESSION_INFO:
        name = entry.get("name")
        return f"_Session named {_inline(str(name))}_" if isinstance(name, str) and name else ""
    if kind == E.CUSTOM and entry.get("customType") == E.CHECKPOINT_CUSTOM_TYPE:
        return _checkpoint(entry.get("data"))
    return ""  # labels (shown on their entries), other extensions' state, unknown types


def _message(message: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]], used: set[str],
             tag: str, stamp: str) -> str:
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        return "\n".join([f"## 🧑 User{stamp}{tag}", "", _content_text(content, images=True)]).rstrip()
    if role == "assistant":
        return _assistant(message, results, used, tag, stamp)
    if role == "toolResult":
        call_id = message.get("toolCallId")
        if isinstance(call_id, str) and call_id in used:
            return ""  # shown with its call
        return _fold(f"Tool result: {message.get('toolName', '')}", _result_body(message))
    if role == "bashExecution":
        command = str(message.get("command", ""))
        body = [_fence(command, "sh"), "", _cut_fence(str(message.get("output", "")))]
        code = message.get("exitCode")
        state = "cancelled" if message.get("cancelled") else f"exit {code}" if code is not None else ""
        title = f"$ {_one_line(command, SUMMARY_CHARS)}" + (f" ({state})" if state else "")
        note = " (not sent to the model)" if message.get("excludeFromContext") else ""
        return f"**User shell command**{note}\n\n" + _fold(title, "\n".join(body), raw=True)
    return _fold(f"{role} message", _content_text(content))


def _assistant(message: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]], used: set[str],
               tag: str, stamp: str) -> str:
    where = "/".join(str(x) for x in (message.get("provider"), message.get("model")) if x)
    lines = [f"## 🤖 Assistant{f' · {_code(where)}' if where else ''}{stamp}{tag}", ""]
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] \
        if isinstance(content, str) else []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            lines.extend([block["text"].strip(), ""])
        elif kind == "thinking":
            thought = block.get("thinking")
            lines.extend([_fold("Thinking", thought if isinstance(thought, str) and thought else "(redacted)"), ""])
        elif kind == "toolCall":
            lines.extend([_tool_call(block, results, used), ""])
        elif kind == "image":
            lines.extend([_image_note(block), ""])
    stop = message.get("stopReason")
    if stop in ("error", "aborted", "length"):
        reason = message.get("errorMessage")
        lines.append(f"> ⚠️ Stopped: {stop}" + (f": {_inline(reason)}" if isinstance(reason, str) and reason else ""))
    return "\n".join(lines).rstrip()


def _tool_call(block: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]], used: set[str]) -> str:
    name = str(block.get("name", ""))
    arguments = block.get("arguments")
    args = arguments if isinstance(arguments, Mapping) else {}
    call_id = block.get("id")
    result = results.get(call_id) if isinstance(call_id, str) else None
    if result is not None and isinstance(call_id, str):
        used.add(call_id)
    failed = result is not None and result.get("isError") is True
    mark = "❌" if failed else "🔧"
    title = f"{mark} {name}: {_call_summary(name, args)}" if _call_summary(name, args) else f"{mark} {name}"
    body = [_call_arguments(name, args), ""]
    if result is None:
        body.append("_No result recorded._")
    else:
        body.extend([f"**Result{' (error)' if failed else ''}:**", "", _result_body(result)])
    return _fold(title, "\n".join(body), raw=True)


def _call_summary(name: str, args: Mapping[str, Any]) -> str:
    """One line for the folded title: the command, the path, or the arguments."""
    for key in ("command", "path", "pattern", "url", "query"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return _one_line(value, SUMMARY_CHARS)
    if not args:
        return ""
    return _one_line(_json(args), SUMMARY_CHARS)


def _call_arguments(name: str, args: Mapping[str, Any]) -> str:
    command = args.get("command")
    if name == "bash" and isinstance(command, str):
        rest = {k: v for k, v in args.items() if k != "command"}
        return _fence(command, "sh") + (f"\n\n{_fence(_json(rest), 'json')}" if rest else "")
    if name == "write" and isinstance(args.get("content"), str):
        return f"{_code(str(args.get('path', '')))}\n\n{_cut_fence(args['content'])}"
    return _fence(_json(dict(args)), "json")


def _result_body(message: Mapping[str, Any]) -> str:
    text = _content_text(message.get("content"), images=True, fenced=False)
    return _cut_fence(text) if text else "_(empty)_"


def _checkpoint(data: Any) -> str:
    if not isinstance(data, Mapping):
        return ""
    kind = "git tree" if data.get("kind") == "git" else "file copies"
    what = "before a restore" if data.get("reason") == "restore" else "before the agent changed files"
    return f"_📸 Checkpoint ({kind}) {what}: {_code(str(data.get('id', '')))}_"


# -- text helpers ---------------------------------------------------------------------------


def _content_text(content: Any, *, images: bool = False, fenced: bool = True) -> str:
    """A message's text blocks (and image notes); ``fenced=False`` keeps it plain for a fence."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "image" and images:
            parts.append(_image_note(block) if fenced else f"[image: {block.get('mimeType', 'unknown type')}]")
    return "\n\n".join(parts)


def _image_note(block: Mapping[str, Any]) -> str:
    data = block.get("data")
    size = f", {len(data) * 3 // 4 // 1024} KB" if isinstance(data, str) else ""
    return f"_[image: {block.get('mimeType', 'unknown type')}{size}]_"


def _fold(summary: str, body: str, *, raw: bool = False) -> str:
    """A ``<details>`` block: ``summary`` (HTML-escaped, one line) over ``body`` (Markdown)."""
    shown = body if raw else body.strip() or "_(empty)_"
    return f"<details>\n<summary>{_escape(_one_line(summary, 160))}</summary>\n\n{shown.rstrip()}\n\n</details>"


def _cut_fence(text: str) -> str:
    """``text`` in a plain fence, cut to ``MAX_RESULT_LINES`` / ``MAX_RESULT_CHARS`` with a note."""
    lines = text.split("\n")
    note = ""
    if len(lines) > MAX_RESULT_LINES:
        note = f"\n\n_… {len(lines) - MAX_RESULT_LINES} more lines not shown._"
        text = "\n".join(lines[:MAX_RESULT_LINES])
    if len(text) > MAX_RESULT_CHARS:
        note = f"\n\n_… {len(text) - MAX_RESULT_CHARS} more characters not shown._"
        text = text[:MAX_RESULT_CHARS]
    return _fence(text) + note


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def _code(text: str) -> str:
    """Inline code that no backtick inside can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _inline(text: str) -> str:
    """One line of text for a heading or a note: whitespace folded, Markdown/HTML specials escaped."""
    return re.sub(r"([\\`*_{}\[\]<>#|])", r"\\\1", _one_line(text, 10_000))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _one_line(text: str, limit: int) -> str:
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _when(stamp: Any) -> str:
    if not isinstance(stamp, str) or len(stamp) < 16:
        return ""
    return f" · {stamp[:10]} {stamp[11:16]} UTC" if stamp.endswith("Z") else ""
