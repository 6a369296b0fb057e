"""Pi's truncation rules for tool output (``truncate.js``): whichever of the line limit (2000)
and the byte limit (50 KB) is hit first wins; ``read``/``grep``/``find``/``ls`` keep the head,
``bash`` keeps the tail. The result is the dict Pi puts in ``details.truncation``, key for key.

Lengths follow JavaScript: bytes are UTF-8 bytes of the decoded text, ``truncate_line`` counts
UTF-16 code units (a grep line of 500 emoji is cut where Pi cuts it).
"""

from __future__ import annotations

from typing import Any, Final

DEFAULT_MAX_LINES: Final = 2000
DEFAULT_MAX_BYTES: Final = 50 * 1024
GREP_MAX_LINE_LENGTH: Final = 500
UNLIMITED_LINES: Final = 2**53 - 1
"""``Number.MAX_SAFE_INTEGER``: the line limit Pi passes when only bytes count."""

Truncation = dict[str, Any]


def utf8_len(text: str) -> int:
    """``Buffer.byteLength(text, "utf-8")`` (a lone surrogate counts as U+FFFD, 3 bytes)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def format_size(size: int | float) -> str:
    """``formatSize``: ``512B``, ``1.5KB``, ``50.0KB``, ``2.3MB`` (JavaScript ``toFixed(1)``)."""
    if size < 1024:
        return f"{int(size)}B"
    if size < 1024 * 1024:
        return f"{js_fixed1(size / 1024)}KB"
    return f"{js_fixed1(size / (1024 * 1024))}MB"


def js_fixed1(value: float) -> str:
    """``Number.prototype.toFixed(1)``: rounds the exact binary value half away from zero."""
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _result(content: str, truncated: bool, truncated_by: str | None, total_lines: int, total_bytes: int,
            output_lines: int, output_bytes: int, last_line_partial: bool, first_line_exceeds: bool,
            max_lines: int, max_bytes: int) -> Truncation:
    return {
        "content": content,
        "truncated": truncated,
        "truncatedBy": truncated_by,
        "totalLines": total_lines,
        "totalBytes": total_bytes,
        "outputLines": output_lines,
        "outputBytes": output_bytes,
        "lastLinePartial": last_line_partial,
        "firstLineExceedsLimit": first_line_exceeds,
        "maxLines": max_lines,
        "maxBytes": max_bytes,
    }


def count_lines(content: str) -> int:
    """``splitLinesForCounting(content).length``: a trailing newline ends the last line."""
    if not content:
        return 0
    newlines = content.count("\n")
    return newlines if content.endswith("\n") else newlines + 1


def truncate_head(content: str, *, max_lines: int = DEFAULT_MAX_LINES,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Truncation:
    """Keep the first complete lines that fit (``truncateHead``); never a partial line."""
    total_bytes = utf8_len(content)
    total_lines = count_lines(content)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _result(content, False, None, total_lines, total_bytes, total_lines, total_bytes, False, False,
                       max_lines, max_bytes)
    ascii_only = content.isascii()
    first_end = content.find("\n")
    first_line = content if first_end < 0 else content[:first_end]
    if (len(first_line) if ascii_only else utf8_len(first_line)) > max_bytes:
        return _result("", True, "bytes", total_lines, total_bytes, 0, 0, False, True, max_lines, max_bytes)
    kept = 0
    out_bytes = 0
    truncated_by = "lines"
    pos = 0
    end_of_kept = 0
    while kept < total_lines and kept < max_lines:
        nl = content.find("\n", pos)
        line_end = len(content) if nl < 0 else nl
        line = content[pos:line_end]
        line_bytes = (len(line) if ascii_only else utf8_len(line)) + (1 if kept > 0 else 0)
        if out_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            break
        kept += 1
        out_bytes += line_bytes
        end_of_kept = line_end
        pos = line_end + 1
    if kept >= max_lines and out_bytes <= max_bytes:
        truncated_by = "lines"
    output = content[:end_of_kept] if kept else ""
    return _result(output, True, truncated_by, total_lines, total_bytes, kept, utf8_len(output), False, False,
                   max_lines, max_bytes)


def truncate_tail(content: str, *, max_lines: int = DEFAULT_MAX_LINES,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Truncation:
    """Keep the last lines that fit (``truncateTail``); the last line alone may be cut from its end."""
    total_bytes = utf8_len(content)
    total_lines = count_lines(content)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _result(content, False, None, total_lines, total_bytes, total_lines, total_bytes, False, False,
                       max_lines, max_bytes)
    body = content[:-1] if content.endswith("\n") else content
    kept: list[str] = []
    out_bytes = 0
    truncated_by = "lines"
    last_line_partial = False
    end = len(body)
    while end >= 0 and len(kept) < max_lines:
        start = body.rfind("\n", 0, end) + 1 if end > 0 else 0
        line = body[start:end]
        line_bytes = utf8_len(line) + (1 if kept else 0)
        if out_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            if not kept:
                tail = _tail_bytes(line, max_bytes)
                kept.append(tail)
                out_bytes = utf8_len(tail)
                last_line_partial = True
            break
        kept.append(line)
        out_bytes += line_bytes
        if start == 0:
            break
        end = start - 1
    if len(kept) >= max_lines and out_bytes <= max_bytes:
        truncated_by = "lines"
    kept.reverse()
    output = "\n".join(kept)
    return _result(output, True, truncated_by, total_lines, total_bytes, len(kept), utf8_len(output),
                   last_line_partial, False, max_lines, max_bytes)


def _tail_bytes(text: str, max_bytes: int) -> str:
    """``truncateStringToBytesFromEnd``: the last ``max_bytes`` bytes, starting at a character."""
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "replace")


def utf16_len(text: str) -> int:
    """JavaScript ``string.length``."""
    if text.isascii() or max(text) < "\U00010000":
        return len(text)
    return len(text) + sum(1 for ch in text if ch >= "\U00010000")


def utf16_slice(text: str, end: int) -> str:
    """JavaScript ``string.slice(0, end)``; a surrogate pair cut in half keeps its high half (as U+FFFD
    once encoded: Python strings cannot hold a lone surrogate that JSON could carry)."""
    if text.isascii() or max(text) < "\U00010000":
        return text[:end]
    units = 0
    for index, ch in enumerate(text):
        width = 2 if ch >= "\U00010000" else 1
        if units + width > end:
            return text[:index] + ("\ufffd" if units < end else "")
        units += width
    return text


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """``truncateLine``: ``(text, was_truncated)``; a cut line ends with ``... [truncated]``."""
    if utf16_len(line) <= max_chars:
        return line, False
    return f"{utf16_slice(line, max_chars)}... [truncated]", True
