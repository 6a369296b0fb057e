"""The edit engine of Pi's ``edit`` (``edit-diff.js``): exact (then whitespace/quote-tolerant)
matching of every ``oldText`` against the original, uniqueness and overlap checks with Pi's
errors, line endings restored, and the two diffs Pi returns (numbered display diff, unified patch).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from typing import Any

from rpcd.tools.diff import create_two_files_patch, diff_lines
from rpcd.tools.errors import ToolError

# JavaScript's String.prototype.trimEnd: WhiteSpace + LineTerminator.
_JS_SPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
             "\u2028\u2029\u202f\u205f\u3000\ufeff")
_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")
_LINES_WITH_ENDINGS = re.compile(r"[^\n]*\n|[^\n]+")


def split_bom(content: str) -> tuple[str, str]:
    return ("\ufeff", content[1:]) if content.startswith("\ufeff") else ("", content)


def detect_line_ending(content: str) -> str:
    crlf = content.find("\r\n")
    lf = content.find("\n")
    if lf == -1 or crlf == -1:
        return "\n"
    return "\r\n" if crlf < lf else "\n"


def normalize_to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_line_endings(text: str, ending: str) -> str:
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def normalize_for_fuzzy_match(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip(_JS_SPACE) for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


def _fuzzy_find(content: str, old_text: str) -> tuple[int, int, bool]:
    """``(index, match_length, used_fuzzy)``; index -1 when not found."""
    exact = content.find(old_text)
    if exact != -1:
        return exact, len(old_text), False
    fuzzy_content = normalize_for_fuzzy_match(content)
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    index = fuzzy_content.find(fuzzy_old)
    if index == -1:
        return -1, 0, False
    return index, len(fuzzy_old), True


def _count_occurrences(content: str, old_text: str) -> int:
    fuzzy_content = normalize_for_fuzzy_match(content)
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    if not fuzzy_old:
        return len(fuzzy_content) - 1  # JavaScript: "abc".split("").length - 1
    return fuzzy_content.count(fuzzy_old)


def _not_found(path: str, index: int, total: int) -> ToolError:
    if total == 1:
        return ToolError(f"Could not find the exact text in {path}. The old text must match exactly including all "
                         "whitespace and newlines.")
    return ToolError(f"Could not find edits[{index}] in {path}. The oldText must match exactly including all "
                     "whitespace and newlines.")


def _duplicate(path: str, index: int, total: int, occurrences: int) -> ToolError:
    if total == 1:
        return ToolError(f"Found {occurrences} occurrences of the text in {path}. The text must be unique. Please "
                         "provide more context to make it unique.")
    return ToolError(f"Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. "
                     "Please provide more context to make it unique.")


def _line_spans(content: str) -> list[tuple[int, int]]:
    spans = []
    offset = 0
    for match in _LINES_WITH_ENDINGS.finditer(content):
        length = len(match.group(0))
        spans.append((offset, offset + length))
        offset += length
    return spans


def _apply(content: str, replacements: list[dict[str, Any]], offset: int = 0) -> str:
    result = content
    for rep in reversed(replacements):
        index = rep["matchIndex"] - offset
        result = result[:index] + rep["newText"] + result[index + rep["matchLength"]:]
    return result


def _replacement_line_range(lines: list[tuple[int, int]], rep: dict[str, Any]) -> tuple[int, int]:
    start, end = rep["matchIndex"], rep["matchIndex"] + rep["matchLength"]
    first = next((i for i, (s, e) in enumerate(lines) if s <= start < e), -1)
    if first == -1:
        raise ToolError("Replacement range is outside the base content.")
    last = first
    while last < len(lines) and lines[last][1] < end:
        last += 1
    if last >= len(lines):
        raise ToolError("Replacement range is outside the base content.")
    return first, last + 1


def _apply_preserving_unchanged_lines(original: str, base: str, replacements: list[dict[str, Any]]) -> str:
    original_lines = _LINES_WITH_ENDINGS.findall(original)
    base_lines = _line_spans(base)
    if len(original_lines) != len(base_lines):
        raise ToolError("Cannot preserve unchanged lines because the base content has a different line count.")
    groups: list[dict[str, Any]] = []
    for rep in sorted(replacements, key=lambda r: r["matchIndex"]):
        first, last = _replacement_line_range(base_lines, rep)
        if groups and first < groups[-1]["end"]:
            groups[-1]["end"] = max(groups[-1]["end"], last)
            groups[-1]["reps"].append(rep)
            continue
        groups.append({"start": first, "end": last, "reps": [rep]})
    index = 0
    out: list[str] = []
    for group in groups:
        out.append("".join(original_lines[index:group["start"]]))
        group_start = base_lines[group["start"]][0]
        group_end = base_lines[group["end"] - 1][1]
        out.append(_apply(base[group_start:group_end], group["reps"], group_start))
        index = group["end"]
    out.append("".join(original_lines[index:]))
    return "".join(out)


def apply_edits(normalized: str, edits: list[dict[str, Any]], path: str) -> tuple[str, str]:
    """``applyEditsToNormalizedContent``: ``(base_content, new_content)`` or Pi's error."""
    prepared = [{"oldText": normalize_to_lf(e["oldText"]), "newText": normalize_to_lf(e["newText"])} for e in edits]
    total = len(prepared)
    for index, edit in enumerate(prepared):
        if not edit["oldText"]:
            if total == 1:
                raise ToolError(f"oldText must not be empty in {path}.")
            raise ToolError(f"edits[{index}].oldText must not be empty in {path}.")
    used_fuzzy = any(_fuzzy_find(normalized, e["oldText"])[2] for e in prepared)
    base_for_replacement = normalize_for_fuzzy_match(normalized) if used_fuzzy else normalized
    matched: list[dict[str, Any]] = []
    for index, edit in enumerate(prepared):
        position, length, _ = _fuzzy_find(base_for_replacement, edit["oldText"])
        if position == -1:
            raise _not_found(path, index, total)
        occurrences = _count_occurrences(base_for_replacement, edit["oldText"])
        if occurrences > 1:
            raise _duplicate(path, index, total, occurrences)
        matched.append({"editIndex": index, "matchIndex": position, "matchLength": length,
                        "newText": edit["newText"]})
    matched.sort(key=lambda m: m["matchIndex"])
    for previous, current in itertools.pairwise(matched):
        if previous["matchIndex"] + previous["matchLength"] > current["matchIndex"]:
            raise ToolError(f"edits[{previous['editIndex']}] and edits[{current['editIndex']}] overlap in {path}. "
                            "Merge them into one edit or target disjoint regions.")
    if used_fuzzy:
        new_content = _apply_preserving_unchanged_lines(normalized, base_for_replacement, matched)
    else:
        new_content = _apply(base_for_replacement, matched)
    if new_content == normalized:
        if total == 1:
            raise ToolError(f"No changes made to {path}. The replacement produced identical content. This might "
                            "indicate an issue with special characters or the text not existing as expected.")
        raise ToolError(f"No changes made to {path}. The replacements produced identical content.")
    return normalized, new_content


def generate_unified_patch(path: str, old: str, new: str, context: int = 4) -> str:
    return create_two_files_patch(path, path, old, new, context)


def generate_diff_string(old: str, new: str, context: int = 4) -> tuple[str, int | None]:
    """``generateDiffString``: ``(diff, first_changed_line)``, the numbered diff Pi's TUI shows."""
    parts = diff_lines(old, new)
    output: list[str] = []
    width = len(str(max(len(old.split("\n")), len(new.split("\n")))))
    old_num = new_num = 1
    last_was_change = False
    first_changed: int | None = None
    blank = "".rjust(width)
    for index, part in enumerate(parts):
        raw = part.value.split("\n")
        if raw and raw[-1] == "":
            raw.pop()
        if part.added or part.removed:
            if first_changed is None:
                first_changed = new_num
            for line in raw:
                if part.added:
                    output.append(f"+{str(new_num).rjust(width)} {line}")
                    new_num += 1
                else:
                    output.append(f"-{str(old_num).rjust(width)} {line}")
                    old_num += 1
            last_was_change = True
            continue
        next_is_change = index < len(parts) - 1 and (parts[index + 1].added or parts[index + 1].removed)
        if last_was_change and next_is_change:
            if len(raw) <= context * 2:
                shown_lead, shown_trail, skipped = raw, [], 0
            else:
                shown_lead, shown_trail = raw[:context], raw[len(raw) - context:]
                skipped = len(raw) - len(shown_lead) - len(shown_trail)
            for line in shown_lead:
                output.append(f" {str(old_num).rjust(width)} {line}")
                old_num += 1
                new_num += 1
            if shown_trail:
                output.append(f" {blank} ...")
                old_num += skipped
                new_num += skipped
                for line in shown_trail:
                    output.append(f" {str(old_num).rjust(width)} {line}")
                    old_num += 1
                    new_num += 1
        elif last_was_change:
            shown = raw[:context]
            skipped = len(raw) - len(shown)
            for line in shown:
                output.append(f" {str(old_num).rjust(width)} {line}")
                old_num += 1
                new_num += 1
            if skipped > 0:
                output.append(f" {blank} ...")
                old_num += skipped
                new_num += skipped
        elif next_is_change:
            skipped = max(0, len(raw) - context)
            if skipped > 0:
                output.append(f" {blank} ...")
                old_num += skipped
                new_num += skipped
            for line in raw[skipped:]:
                output.append(f" {str(old_num).rjust(width)} {line}")
                old_num += 1
                new_num += 1
        else:
            old_num += len(raw)
            new_num += len(raw)
        last_was_change = False
    return "\n".join(output), first_changed
