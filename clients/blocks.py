"""Tool calls as a person reads them: a block per call with its command or path, the output as it
streams, the exit code, and a unified diff for ``edit``/``write`` — shown when the call starts, so
before an approval question too.

Pure text work: each function returns :data:`Line`\\ s (segments of text with a style name), which
``clients/views.py`` prints plainly (off a terminal) or styled with rich (on one). The diff before
the call runs is computed here from its arguments and the file on disk (as Pi's edit would apply
them); after it ran, the daemon's own diff (``details.diff``, Pi's numbered lines) is what counts.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

Segment = tuple[str, str]
Line = list[Segment]
"""One screen line: ``(text, style)`` segments; styles are names ``views.STYLES`` maps."""

OUTPUT_LINES = 12
"""Lines of a tool's result shown once it ended (``read``, ``grep`` …); bash streams all of its output."""
DIFF_LINES = 80
"""Lines of a diff shown (the rest is counted)."""
PREVIEW_BYTES = 2 << 20
"""Files larger than this are not read for a preview diff."""
CONTEXT = 3
_EXIT = re.compile(r"(?:Command exited with code|exit code:?)\s*(-?\d+)\s*$", re.IGNORECASE)


def _arg(args: Mapping[str, Any], *names: str) -> str | None:
    for name in names:
        value = args.get(name)
        if isinstance(value, str):
            return value
    return None


def header(name: str, args: Any) -> Line:
    """``● bash  ls -la`` / ``● edit  src/a.py`` / ``● mcp_tool  {"q": 1}``."""
    args = args if isinstance(args, Mapping) else {}
    if name == "bash":
        detail = _arg(args, "command") or ""
    elif name in ("read", "edit", "write", "ls"):
        detail = _arg(args, "path", "file_path") or ""
        if name == "read" and (args.get("offset") or args.get("limit")):
            detail += f"  (lines {args.get('offset') or 1}…{'+' + str(args['limit']) if args.get('limit') else ''})"
    elif name in ("grep", "find"):
        detail = " ".join(x for x in (_arg(args, "pattern"), _arg(args, "path")) if x)
    else:
        detail = json.dumps(args, ensure_ascii=False) if args else ""
    first, *more = detail.split("\n")
    line: Line = [("● ", "tool.bullet"), (name, "tool.name")]
    if first:
        line.append(("  " + first, "tool.detail"))
    if more:
        line.append((f"  (+{len(more)} more lines)", "dim"))
    return line


def output_lines(text: str, *, limit: int | None = None) -> list[Line]:
    """Tool output, indented under its header (``limit``: keep the first lines and count the rest)."""
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    shown = lines if limit is None else lines[:limit]
    out: list[Line] = [[("  │ ", "dim"), (line, "tool.output")] for line in shown]
    if limit is not None and len(lines) > limit:
        out.append([("  │ ", "dim"), (f"… {len(lines) - limit} more lines", "dim")])
    return out


def result_text(result: Any) -> str:
    content = result.get("content") if isinstance(result, Mapping) else None
    return "\n".join(str(b.get("text", "")) for b in content or ()
                     if isinstance(b, Mapping) and b.get("type") == "text")


class ToolBlock:
    """One call's block: what has been printed of its streamed output."""

    def __init__(self, name: str, args: Any) -> None:
        self.name = name
        self.args = args if isinstance(args, Mapping) else {}
        self.printed: list[str] = []
        """The output lines already printed (bash streams snapshots of its whole, tail-truncated output)."""
        self.previewed = False
        """An exact diff was shown when the call started (its result does not repeat it)."""
        self.approximated = False
        """Each replacement's own diff was shown (for an approval question)."""

    def update(self, partial: Any) -> list[Line]:
        """New output lines of a ``tool_execution_update`` snapshot (only complete lines; bash only)."""
        if self.name != "bash":
            return []
        return self._advance(result_text(partial), final=False)

    def _advance(self, text: str, *, final: bool) -> list[Line]:
        """The lines of ``text`` (the whole output so far) not printed yet. The snapshot is the
        output's tail: when its start moved past what was printed, continue after the overlap."""
        lines = text.split("\n")
        if not final or lines[-1] == "":
            lines = lines[:-1]  # an unfinished line waits for the rest (or for the end)
        done = self.printed
        if lines[:len(done)] == done:
            new = lines[len(done):]
            marker: list[Line] = []
        else:
            overlap = next((k for k in range(min(len(done), len(lines)), 0, -1) if done[-k:] == lines[:k]), 0)
            new = lines[overlap:]
            marker = [] if overlap else [[("  │ ", "dim"), ("… (earlier output cut)", "dim")]]
        self.printed = [*done, *new][-200:] if len(done) + len(new) > 200 and lines[:len(done)] != done else lines
        return marker + [[("  │ ", "dim"), (line, "tool.output")] for line in new]

    def end(self, result: Any, is_error: bool) -> list[Line]:
        """The rest of the output and the footer: ``└ exit 0`` for bash, the diff for edit, the first
        lines for the others, the error text for a failed call."""
        text = result_text(result)
        details = result.get("details") if isinstance(result, Mapping) else None
        details = details if isinstance(details, Mapping) else {}
        if self.name == "bash":
            code = _exit_code(text, is_error)
            body = _EXIT.sub("", text).rstrip() if is_error and code is not None else text
            lines = self._advance(body, final=True)
            if details.get("fullOutputPath"):
                lines.append([("  │ ", "dim"), (f"(full output: {details['fullOutputPath']})", "dim")])
            if code is None:
                lines.append([("  └ ", "dim"), ("failed" if is_error else "done", "tool.error" if is_error else "ok")])
            else:
                lines.append([("  └ ", "dim"), (f"exit {code}", "ok" if code == 0 else "tool.error")])
            return lines
        if is_error:
            return [[("  └ ", "dim"), (line, "tool.error")] for line in (text.strip() or "failed").split("\n")[:20]]
        if self.name == "edit" and isinstance(details.get("diff"), str) and not self.previewed:
            return [*numbered_diff(details["diff"]), [("  └ ", "dim"), (text.strip(), "ok")]]
        if self.name == "edit":
            return [[("  └ ", "dim"), (text.strip(), "ok")]]
        if self.name == "write":
            return [[("  └ ", "dim"), (text.strip() or "written", "ok")]]
        if self.name == "read":
            count = len(text.split("\n")) if text else 0
            return [[("  └ ", "dim"), (f"{count} line{'s' if count != 1 else ''}", "dim")]]
        return output_lines(text, limit=OUTPUT_LINES)


def _exit_code(text: str, is_error: bool) -> int | None:
    if not is_error:
        return 0
    found = _EXIT.search(text.rstrip())
    return int(found.group(1)) if found else None


# -- diffs ------------------------------------------------------------------------------------------


def numbered_diff(diff: str, *, limit: int = DIFF_LINES) -> list[Line]:
    """Pi's display diff (``details.diff``: `` 12 text`` / ``-12 text`` / ``+12 text`` lines), coloured."""
    out: list[Line] = []
    lines = diff.split("\n")
    for raw in lines[:limit]:
        style = {"+": "diff.add", "-": "diff.del"}.get(raw[:1], "diff.context")
        out.append([("  ", ""), (raw, style)])
    if len(lines) > limit:
        out.append([("  ", ""), (f"… {len(lines) - limit} more diff lines", "dim")])
    return out


def unified(old: str, new: str, path: str, *, limit: int = DIFF_LINES) -> list[Line]:
    """A unified diff of two texts (``--- path`` / ``+++ path`` / hunks), coloured."""
    body = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"{path}", f"{path}", lineterm="",
                                     n=CONTEXT))
    out: list[Line] = []
    for raw in body[:limit]:
        if raw.startswith(("---", "+++")):
            style = "diff.file"
        elif raw.startswith("@@"):
            style = "diff.hunk"
        else:
            style = {"+": "diff.add", "-": "diff.del"}.get(raw[:1], "diff.context")
        out.append([("  ", ""), (raw, style)])
    if len(body) > limit:
        out.append([("  ", ""), (f"… {len(body) - limit} more diff lines", "dim")])
    return out


def preview(block: ToolBlock, cwd: str | None, *, approximate: bool = False) -> list[Line]:
    """The change an ``edit``/``write`` call asks for, as a diff against the file as it is now
    (what a person approves); nothing for other tools. Only the exact change is shown (the file
    read and every replacement found once: ``block.previewed``, and the result need not repeat it);
    ``approximate`` (an approval question) falls back to each replacement's own diff. A call that
    already ran when its start is drawn (no approval asked) shows the daemon's diff at its end."""
    lines, exact = _preview(block.name, block.args, cwd)
    block.previewed = block.previewed or exact
    block.approximated = block.approximated or bool(approximate and lines)
    return lines if exact or approximate else []


def _preview(name: str, args: Mapping[str, Any], cwd: str | None) -> tuple[list[Line], bool]:
    path = _arg(args, "path", "file_path") if name in ("edit", "write") else None
    if path is None:
        return [], False
    expanded = os.path.expanduser(path)
    current = _read(os.path.join(cwd, expanded) if cwd and not os.path.isabs(expanded) else expanded)
    if name == "write":
        content = _arg(args, "content")
        if content is None:
            return [], False
        return unified(current or "", content, path if current is not None else f"{path} (new file)"), True
    edits = args.get("edits")
    if not isinstance(edits, list):  # the older one-replacement shape
        edits = [{"oldText": args.get("oldText"), "newText": args.get("newText")}]
    pairs: list[tuple[str, str]] = []
    for edit in edits:
        old, new = (edit.get("oldText"), edit.get("newText")) if isinstance(edit, Mapping) else (None, None)
        if isinstance(old, str) and isinstance(new, str):
            pairs.append((old, new))
    if current is not None:
        applied = _apply(current, pairs)
        if applied is not None:
            return unified(current, applied, path), True
    out: list[Line] = []  # not found as written (Pi's edit also matches whitespace-tolerantly): each replacement
    for old, new in pairs:
        out += unified(old, new, path)
    return out, False


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > PREVIEW_BYTES or not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            return handle.read().removeprefix("\ufeff").replace("\r\n", "\n")
    except OSError:
        return None


def _apply(text: str, pairs: Sequence[tuple[str, str]]) -> str | None:
    """Each ``oldText`` found exactly once (as Pi's edit requires), replaced; None if any is not."""
    spans = []
    for old, new in pairs:
        old = old.replace("\r\n", "\n")
        if not old or text.count(old) != 1:
            return None
        start = text.index(old)
        spans.append((start, start + len(old), new.replace("\r\n", "\n")))
    out, at = [], 0
    for start, end, new in sorted(spans):
        if start < at:
            return None
        out += [text[at:start], new]
        at = end
    return "".join([*out, text[at:]])
