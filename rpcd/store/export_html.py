"""A session as one self-contained HTML page (Pi's ``/export``; our own page, no script at all).

What the page holds: the session's header facts; its whole tree (every entry, one row each,
indented at branch points, the current branch marked and the leaf named ``current``); the
current branch's entries in order — user and assistant messages, thinking and tool calls
collapsed (``<details>``), tool results, bash executions, custom messages, compaction and
branch summaries, model/thinking/name changes — with images inline as ``data:`` URIs; and,
collapsed, the system prompt and the tools of the session when the caller gives them.

Safety: every piece of session text is HTML-escaped; an image is inlined only with an image
MIME type we know and base64 data, else replaced by a note; the page loads nothing (a
``Content-Security-Policy`` of ``default-src 'none'`` with ``data:`` images and inline styles) and
runs no script, so opening it makes no request and cannot execute session content.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from rpcd.core.jstext import content_text
from rpcd.store import codec
from rpcd.store import entries as E

__all__ = ["HtmlExport", "render_html"]

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64 = re.compile(rb"[A-Za-z0-9+/=\r\n]*")
_SNIPPET = 80
_MAX_DEPTH = 24


@attrs.frozen
class HtmlExport:
    """What the page shows; ``entries`` in file order, ``leaf_id`` as the file has it."""

    header: Mapping[str, Any]
    entries: Sequence[Mapping[str, Any]]
    leaf_id: Any
    labels: Mapping[str, str] = attrs.field(factory=dict)
    name: str | None = None
    session_file: str | None = None
    system_prompt: str | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    exported_at: str | None = None


def _e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


class _Tree:
    """Parent/child structure of the entries (by position), the current branch, row labels."""

    def __init__(self, entries: Sequence[Mapping[str, Any]], leaf_id: Any) -> None:
        self.entries = entries
        by_id: dict[Any, int] = {}
        for index, entry in enumerate(entries):
            key = entry.get("id")
            if _hashable(key):
                by_id[key] = index  # a later duplicate wins, as in Pi's Map
        self.parent: list[int | None] = []
        for index, entry in enumerate(entries):
            parent = entry.get("parentId")
            found = by_id.get(parent) if _hashable(parent) and parent else None
            self.parent.append(found if found is not None and found != index else None)
        self.children: list[list[int]] = [[] for _ in entries]
        for index, parent_index in enumerate(self.parent):
            if parent_index is not None:
                self.children[parent_index].append(index)
        self.leaf: int | None = None
        if leaf_id is not None and entries:
            self.leaf = by_id.get(leaf_id) if _hashable(leaf_id) else None
            if self.leaf is None:
                self.leaf = len(entries) - 1
        self.branch: list[int] = []
        seen: set[int] = set()
        current = self.leaf
        while current is not None and current not in seen:
            seen.add(current)
            self.branch.append(current)
            current = self.parent[current]
        self.branch.reverse()
        self.on_branch = set(self.branch)

    def rows(self) -> Iterator[tuple[int, int]]:
        """``(index, depth)`` depth-first from each root; depth grows only where a node has siblings."""
        roots = [i for i, p in enumerate(self.parent) if p is None]
        stack: list[tuple[int, int]] = [(root, 0) for root in reversed(roots)]
        seen: set[int] = set()
        while stack:
            index, depth = stack.pop()
            if index in seen:
                continue
            seen.add(index)
            yield index, depth
            kids = self.children[index]
            child_depth = depth + 1 if len(kids) > 1 else depth
            stack.extend((kid, child_depth) for kid in reversed(kids))


def _text_of(content: Any) -> str:
    return content_text(content, " ")


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET else flat[: _SNIPPET - 1] + "…"


def _row_label(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    if kind == E.MESSAGE:
        message = entry.get("message")
        if not isinstance(message, Mapping):
            return "message"
        role = str(message.get("role", "message"))
        content = message.get("content")
        text = _text_of(content)
        if role == "assistant" and not text and isinstance(content, list):
            calls = [b.get("name") for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"]
            if calls:
                return f"assistant: [tool call: {', '.join(str(c) for c in calls)}]"
        if role == "toolResult":
            return f"tool result: {message.get('toolName', '')}"
        if role == "bashExecution":
            return f"bash: {_snippet(str(message.get('command', '')))}"
        return f"{role}: {_snippet(text)}" if text else role
    if kind == E.COMPACTION:
        return "compaction summary"
    if kind == E.BRANCH_SUMMARY:
        return "branch summary"
    if kind == E.MODEL_CHANGE:
        return f"model: {entry.get('provider')}/{entry.get('modelId')}"
    if kind == E.THINKING_LEVEL_CHANGE:
        return f"thinking: {entry.get('thinkingLevel')}"
    if kind == E.SESSION_INFO:
        return f"name: {_snippet(str(entry.get('name', '')))}"
    if kind == E.LABEL:
        return f"label: {_snippet(str(entry.get('label') or '(cleared)'))}"
    if kind == E.CUSTOM_MESSAGE:
        return f"custom message: {entry.get('customType')}"
    if kind == E.CUSTOM:
        return f"custom: {entry.get('customType')}"
    return str(kind)


def _image(block: Mapping[str, Any]) -> str:
    mime = block.get("mimeType")
    data = block.get("data")
    if isinstance(mime, str) and mime in _IMAGE_TYPES and isinstance(data, str):
        raw = data.encode("ascii", "replace")
        if _BASE64.fullmatch(raw):
            return f'<img class="image" alt="image ({_e(mime)})" src="data:{mime};base64,{_e(data)}">'
    return '<p class="note">[image omitted: not an inline image]</p>'


def _text_block(text: str, css: str = "text") -> str:
    return f'<div class="{css}">{_e(text)}</div>'


def _content(content: Any) -> str:
    """A message's content: text blocks, images inline, anything else noted."""
    if isinstance(content, str):
        return _text_block(content)
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_text_block(str(block.get("text", ""))))
        elif kind == "image":
            parts.append(_image(block))
        elif kind == "thinking":
            text = block.get("thinking")
            shown = text if isinstance(text, str) and text else "(redacted thinking)"
            parts.append(f'<details class="thinking"><summary>Thinking</summary>{_text_block(shown)}</details>')
        elif kind == "toolCall":
            arguments = codec.dumps(block.get("arguments", {})).decode("utf-8", "replace")
            parts.append(
                f'<details class="tool-call"><summary>Tool call: {_e(block.get("name", ""))}'
                f' <span class="id">{_e(block.get("id", ""))}</span></summary><pre>{_e(arguments)}</pre></details>'
            )
        else:
            parts.append(f'<p class="note">[{_e(kind)} block]</p>')
    return "".join(parts)


def _message(message: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(css class, heading, body)`` of a message entry."""
    role = str(message.get("role", "message"))
    content = message.get("content")
    if role == "user":
        return "user", "User", _content(content)
    if role == "assistant":
        where = "/".join(str(x) for x in (message.get("provider"), message.get("model")) if x)
        heading = f"Assistant <span class=\"meta\">{_e(where)}</span>" if where else "Assistant"
        body = _content(content)
        stop = message.get("stopReason")
        if stop in ("error", "aborted"):
            reason = message.get("errorMessage")
            body += f'<p class="note stop">{_e(stop)}{": " + _e(reason) if isinstance(reason, str) else ""}</p>'
        return "assistant", heading, body
    if role == "toolResult":
        css = "tool-result error" if message.get("isError") else "tool-result"
        return css, f"Tool result: {_e(message.get('toolName', ''))}", _content(content)
    if role == "bashExecution":
        body = f"<pre class=\"command\">$ {_e(message.get('command', ''))}</pre>"
        body += _text_block(str(message.get("output", "")), "text output")
        code = message.get("exitCode")
        if code is not None:
            body += f'<p class="note">exit code {_e(code)}</p>'
        return "bash", "Bash", body
    return "custom", _e(role), _content(content)


def _entry(entry: Mapping[str, Any], anchor: str, labels: Mapping[str, str]) -> str:
    kind = entry.get("type")
    entry_id = entry.get("id")
    label = labels.get(entry_id) if isinstance(entry_id, str) else None
    tag = f' <span class="label">{_e(label)}</span>' if label else ""
    if kind == E.MESSAGE and isinstance(entry.get("message"), Mapping):
        css, heading, body = _message(entry["message"])
    elif kind == E.COMPACTION:
        tokens = entry.get("tokensBefore")
        extra = f' <span class="meta">{_e(tokens)} tokens before</span>' if tokens is not None else ""
        css, heading, body = "compaction", f"Compaction summary{extra}", _text_block(str(entry.get("summary", "")))
    elif kind == E.BRANCH_SUMMARY:
        css, heading, body = "branch-summary", "Branch summary", _text_block(str(entry.get("summary", "")))
    elif kind == E.CUSTOM_MESSAGE:
        css, heading = "custom", f"Custom message: {_e(entry.get('customType', ''))}"
        body = _content(entry.get("content"))
    else:
        return f'<p class="note entry-note" id="{anchor}">{_e(_row_label(entry))}{tag}</p>'
    return f'<article class="entry {css}" id="{anchor}"><h3>{heading}{tag}</h3>{body}</article>'


def _tree_html(tree: _Tree, anchors: Mapping[int, str], labels: Mapping[str, str]) -> str:
    rows: list[str] = []
    for index, depth in tree.rows():
        entry = tree.entries[index]
        classes = ["node"]
        text = _e(_row_label(entry))
        entry_id = entry.get("id")
        label = labels.get(entry_id) if isinstance(entry_id, str) else None
        if label:
            text += f' <span class="label">{_e(label)}</span>'

        if index in tree.on_branch:
            classes.append("on-branch")
            text = f'<a href="#{anchors[index]}">{text}</a>'
        current = ""
        if index == tree.leaf:
            classes.append("current")
            current = ' <span class="marker" aria-current="true">◀ current</span>'
        rows.append(
            f'<li class="{" ".join(classes)}" style="padding-left:{min(depth, _MAX_DEPTH) * 1.2:.1f}em">'
            f"{text}{current}</li>"
        )
    return f'<ol class="tree">{"".join(rows)}</ol>'


def _title(export: HtmlExport) -> str:
    if export.name:
        return export.name
    return _snippet(E.first_user_text(export.entries)) or f"Session {export.header.get('id', '')}"


def render_html(export: HtmlExport) -> str:
    """The whole page as text (UTF-8 when written)."""
    tree = _Tree(export.entries, export.leaf_id)
    anchors = {index: f"e{position}" for position, index in enumerate(tree.branch)}
    title = _title(export)
    header = export.header
    facts = [
        ("Session", header.get("id")),
        ("Working directory", header.get("cwd")),
        ("Created", header.get("timestamp")),
        ("File", export.session_file),
        ("Parent session", header.get("parentSession")),
        ("Entries", f"{len(export.entries)} ({len(tree.branch)} on the current branch)"),
        ("Exported", export.exported_at or datetime.now(UTC).isoformat(timespec="seconds")),
    ]
    facts_html = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts if v is not None)
    conversation = "".join(_entry(export.entries[i], anchors[i], export.labels) for i in tree.branch)
    extras = ""
    if export.system_prompt:
        prompt = _text_block(export.system_prompt)
        extras += f'<details class="system"><summary>System prompt</summary>{prompt}</details>'
    if export.tools:
        items = "".join(
            f"<li><b>{_e(tool.get('name', ''))}</b>: {_e(tool.get('description', ''))}</li>" for tool in export.tools
        )
        extras += f'<details class="tools"><summary>Tools ({len(export.tools)})</summary><ul>{items}</ul></details>'
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="rpcd">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{_e(title)}</h1><dl class="facts">{facts_html}</dl>{extras}</header>'
        f'<div class="layout"><nav id="tree"><h2>Session tree</h2>{_tree_html(tree, anchors, export.labels)}</nav>'
        f'<main id="conversation"><h2>Current branch</h2>{conversation}</main></div>'
        "</body></html>\n"
    )


_CSS = """
:root{color-scheme:light;--fg:#1d1f24;--muted:#666b75;--line:#d9dce3;--user:#e8f0fe;--assistant:#f6f7f9;
--tool:#f3f8ee;--error:#fdecec;--summary:#fff6dd;--accent:#2456c7}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:#fff}header{padding:16px 24px;border-bottom:1px solid var(--line)}h1{font-size:20px;margin:0 0 8px}
h2{font-size:15px;margin:0 0 12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
h3{font-size:14px;margin:0 0 6px}.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0;
font-size:13px}.facts dt{color:var(--muted)}.facts dd{margin:0;word-break:break-all}
.layout{display:flex;align-items:flex-start}nav{flex:0 0 340px;max-height:100vh;overflow:auto;position:sticky;top:0;
padding:16px;border-right:1px solid var(--line);font-size:13px}main{flex:1;min-width:0;padding:16px 24px}
.tree{list-style:none;margin:0;padding:0}.node{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;
color:var(--muted);padding:1px 0}.node.on-branch{color:var(--fg);font-weight:600}.node a{color:inherit;
text-decoration:none}.node.current{background:#fff3c4}.marker{color:var(--accent);font-weight:700}
.entry{border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:0 0 12px}
.entry.user{background:var(--user)}.entry.assistant{background:var(--assistant)}
.entry.tool-result,.entry.bash{background:var(--tool)}.entry.error{background:var(--error)}
.entry.compaction,.entry.branch-summary{background:var(--summary)}.text{white-space:pre-wrap;word-wrap:break-word}
pre{white-space:pre-wrap;word-break:break-all;background:#0000000a;padding:6px 8px;border-radius:4px;margin:4px 0;
font-size:12.5px}details{margin:6px 0}summary{cursor:pointer;color:var(--muted)}.meta,.id{color:var(--muted);
font-weight:400;font-size:12px}.note{color:var(--muted);font-size:12.5px;margin:4px 0 10px}
.label{background:var(--accent);color:#fff;border-radius:4px;padding:0 6px;font-size:11px;margin-left:6px}
.image{max-width:100%;border:1px solid var(--line);border-radius:4px;margin:4px 0}
"""
