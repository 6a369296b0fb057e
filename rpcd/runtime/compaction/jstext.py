"""JavaScript's string and JSON semantics where compaction's text depends on them.

Pi measures and cuts strings in UTF-16 code units (``text.length``, ``text.slice``), prints
tool-call arguments with ``JSON.stringify`` and ``Object.entries`` (an object's
integer-like keys first, ascending, then the others in insertion order) and sorts file
lists with ``Array.prototype.sort`` (UTF-16 code unit order). The summarizer must be given
the same text Pi gives it, so these follow JavaScript, not Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from rpcd.core import codec
from rpcd.runtime.providers.transform import js_length

__all__ = ["content_text", "js_entries", "js_length", "js_slice", "json_length", "json_text", "utf16_key"]

_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_ARRAY_INDEX: Final = 2**32 - 2


def _is_index(key: str) -> bool:
    return _ARRAY_INDEX.fullmatch(key) is not None and int(key) <= _MAX_ARRAY_INDEX


def _js_order(obj: Mapping[str, Any]) -> list[str]:
    """Own-key order of a JavaScript object built by ``JSON.parse`` in this key order."""
    keys = list(obj)
    if not any(k[:1].isdigit() for k in keys):
        return keys
    indices = [k for k in keys if _is_index(k)]
    if not indices:
        return keys
    indices.sort(key=int)
    return indices + [k for k in keys if not _is_index(k)]


def js_entries(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``Object.entries(obj)``."""
    for key in _js_order(obj):
        yield key, obj[key]


def _needs_reorder(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if key[:1].isdigit() and _is_index(key):
                    return True
                if isinstance(child, dict | list):
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(child for child in item if isinstance(child, dict | list))
    return False


def _reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reordered(value[key]) for key in _js_order(value)}
    if isinstance(value, list):
        return [_reordered(item) for item in value]
    return value


def json_text(value: Any) -> str:
    """``JSON.stringify(value)`` of a value ``JSON.parse`` produced (``undefined`` for ``None``
    is not a case here: JSON has ``null``, which prints as ``null``)."""
    if type(value) is not str and isinstance(value, dict | list) and _needs_reorder(value):
        value = _reordered(value)
    return codec.dumps(value).decode()


def json_length(value: Any) -> int:
    """``JSON.stringify(value).length`` (key order does not change the length)."""
    data = codec.dumps(value)
    if data.isascii():
        return len(data)
    return js_length(data.decode())


def js_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` in UTF-16 code units (a surrogate pair may be cut in half, as in JS)."""
    if js_length(text) == len(text):
        return text[:end]  # no character above U+FFFF: characters are units
    units = text.encode("utf-16-le", "surrogatepass")[: 2 * end]
    return units.decode("utf-16-le", "surrogatepass")


def utf16_key(value: Any) -> bytes:
    """Sort key of JavaScript's default ``sort()``: ``String(value)`` in UTF-16 code units."""
    text = value if isinstance(value, str) else str(value)
    return text.encode("utf-16-be", "surrogatepass")


def content_text(content: Any, separator: str = "\n") -> str:
    """pi-ai's ``contentText``: a string as is, else the text blocks' texts joined."""
    if type(content) is str:
        return content
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    if len(content) == 1:  # the common case, without building a list
        block = content[0]
        if type(block) is dict and block.get("type") == "text" and type(text := block.get("text")) is str:
            return text
    texts: list[str] = []
    for block in content:
        if (type(block) is dict or isinstance(block, Mapping)) and block.get("type") == "text":
            text = block.get("text")
            texts.append(text if isinstance(text, str) else "" if text is None else _js_string(text))
    return separator.join(texts)


def _js_string(value: Any) -> str:
    """``String(value)`` for the JSON values a hand-edited file may put where text belongs."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return codec.js_number(float(value)).decode() if isinstance(value, float) else str(value)
    if isinstance(value, list):
        return ",".join("" if v is None else _js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)
