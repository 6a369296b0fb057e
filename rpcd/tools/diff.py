"""jsdiff 8.0's line diff and unified patch (``diffLines``, ``createTwoFilesPatch``), ported step
for step: Pi's ``edit`` puts both in ``details``, and a different (equally valid) diff would be a
different result. The Myers walk, its diagonal pruning and its tie-breaking are jsdiff's.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

_LINE_SPLIT = re.compile(r"(\n|\r\n)")


@attrs.define
class Change:
    """One ``{count, added, removed, value}`` change object."""

    count: int
    added: bool
    removed: bool
    value: str = ""


@attrs.define
class _Component:
    count: int
    added: bool
    removed: bool
    previous: _Component | None


@attrs.define
class _Path:
    old_pos: int
    last: _Component | None


def tokenize_lines(value: str) -> list[str]:
    """jsdiff's line tokenizer: each line keeps its ``\\n`` / ``\\r\\n``."""
    parts = _LINE_SPLIT.split(value)
    if parts and not parts[-1]:
        parts.pop()
    tokens: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            tokens[-1] += part
        else:
            tokens.append(part)
    return tokens


def _add_to_path(path: _Path, added: bool, removed: bool, old_inc: int) -> _Path:
    last = path.last
    if last is not None and last.added == added and last.removed == removed:
        return _Path(path.old_pos + old_inc, _Component(last.count + 1, added, removed, last.previous))
    return _Path(path.old_pos + old_inc, _Component(1, added, removed, last))


def _extract_common(path: _Path, new: list[str], old: list[str], diagonal: int) -> int:
    new_len, old_len = len(new), len(old)
    old_pos = path.old_pos
    new_pos = old_pos - diagonal
    common = 0
    while new_pos + 1 < new_len and old_pos + 1 < old_len and old[old_pos + 1] == new[new_pos + 1]:
        new_pos += 1
        old_pos += 1
        common += 1
    if common:
        path.last = _Component(common, False, False, path.last)
    path.old_pos = old_pos
    return new_pos


def _build(last: _Component | None, new: list[str], old: list[str]) -> list[Change]:
    components: list[_Component] = []
    while last is not None:
        components.append(last)
        last = last.previous
    components.reverse()
    out: list[Change] = []
    new_pos = old_pos = 0
    for component in components:
        if not component.removed:
            value = "".join(new[new_pos:new_pos + component.count])
            new_pos += component.count
            if not component.added:
                old_pos += component.count
        else:
            value = "".join(old[old_pos:old_pos + component.count])
            old_pos += component.count
        out.append(Change(component.count, component.added, component.removed, value))
    return out


def diff_lines(old_str: str, new_str: str) -> list[Change]:
    """``Diff.diffLines(old, new)``."""
    old = [t for t in tokenize_lines(old_str) if t]
    new = [t for t in tokenize_lines(new_str) if t]
    new_len, old_len = len(new), len(old)
    max_edit = new_len + old_len
    best: dict[int, _Path | None] = {0: _Path(-1, None)}
    start = best[0]
    assert start is not None
    new_pos = _extract_common(start, new, old, 0)
    if start.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
        return _build(start.last, new, old)
    min_diag, max_diag = -(10**18), 10**18
    edit_length = 1
    while edit_length <= max_edit:
        diagonal = max(min_diag, -edit_length)
        top = min(max_diag, edit_length)
        while diagonal <= top:
            remove_path = best.get(diagonal - 1)
            add_path = best.get(diagonal + 1)
            if remove_path is not None:
                best[diagonal - 1] = None
            can_add = False
            if add_path is not None:
                add_new_pos = add_path.old_pos - diagonal
                can_add = 0 <= add_new_pos < new_len
            can_remove = remove_path is not None and remove_path.old_pos + 1 < old_len
            if not can_add and not can_remove:
                best[diagonal] = None
                diagonal += 2
                continue
            if not can_remove or (can_add and remove_path is not None and add_path is not None
                                  and remove_path.old_pos < add_path.old_pos):
                assert add_path is not None
                base = _add_to_path(add_path, True, False, 0)
            else:
                assert remove_path is not None
                base = _add_to_path(remove_path, False, True, 1)
            new_pos = _extract_common(base, new, old, diagonal)
            if base.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
                return _build(base.last, new, old)
            best[diagonal] = base
            if base.old_pos + 1 >= old_len:
                max_diag = min(max_diag, diagonal - 1)
            if new_pos + 1 >= new_len:
                min_diag = max(min_diag, diagonal + 1)
            diagonal += 2
        edit_length += 1
    return []  # unreachable: the walk always ends by max_edit


def _split_lines(text: str) -> list[str]:
    has_trailing = text.endswith("\n")
    result = [line + "\n" for line in text.split("\n")]
    if has_trailing:
        result.pop()
    else:
        result[-1] = result[-1][:-1]
    return result


def structured_patch(old_str: str, new_str: str, context: int = 4) -> list[dict[str, Any]]:
    """The hunks of ``structuredPatch`` (before formatting)."""
    changes: list[dict[str, Any]] = [
        {"value": c.value, "added": c.added, "removed": c.removed} for c in diff_lines(old_str, new_str)
    ]
    changes.append({"value": "", "lines": [], "added": False, "removed": False})
    hunks: list[dict[str, Any]] = []
    old_range_start = new_range_start = 0
    cur: list[str] = []
    old_line = new_line = 1
    for index, current in enumerate(changes):
        lines = current.get("lines")
        if lines is None:
            lines = _split_lines(current["value"])
        current["lines"] = lines
        if current["added"] or current["removed"]:
            if not old_range_start:
                prev = changes[index - 1] if index > 0 else None
                old_range_start = old_line
                new_range_start = new_line
                if prev is not None:
                    cur = [" " + e for e in prev["lines"][-context:]] if context > 0 else []
                    old_range_start -= len(cur)
                    new_range_start -= len(cur)
            cur.extend(("+" if current["added"] else "-") + line for line in lines)
            if current["added"]:
                new_line += len(lines)
            else:
                old_line += len(lines)
        else:
            if old_range_start:
                if len(lines) <= context * 2 and index < len(changes) - 2:
                    cur.extend(" " + line for line in lines)
                else:
                    size = min(len(lines), context)
                    cur.extend(" " + line for line in lines[:size])
                    hunks.append({
                        "oldStart": old_range_start,
                        "oldLines": old_line - old_range_start + size,
                        "newStart": new_range_start,
                        "newLines": new_line - new_range_start + size,
                        "lines": cur,
                    })
                    old_range_start = new_range_start = 0
                    cur = []
            old_line += len(lines)
            new_line += len(lines)
    for hunk in hunks:
        fixed: list[str] = []
        for line in hunk["lines"]:
            if line.endswith("\n"):
                fixed.append(line[:-1])
            else:
                fixed.append(line)
                fixed.append("\\ No newline at end of file")
        hunk["lines"] = fixed
    return hunks


def create_two_files_patch(old_name: str, new_name: str, old_str: str, new_str: str, context: int = 4) -> str:
    """``createTwoFilesPatch(old, new, a, b, undefined, undefined, {context, headerOptions: FILE_HEADERS_ONLY})``."""
    out = [f"--- {old_name}", f"+++ {new_name}"]
    for hunk in structured_patch(old_str, new_str, context):
        old_start = hunk["oldStart"] - (1 if hunk["oldLines"] == 0 else 0)
        new_start = hunk["newStart"] - (1 if hunk["newLines"] == 0 else 0)
        out.append(f"@@ -{old_start},{hunk['oldLines']} +{new_start},{hunk['newLines']} @@")
        out.extend(hunk["lines"])
    return "\n".join(out) + "\n"
