"""JavaScript's string and JSON facts where rpcd's text must match Pi's: lengths and slices count
UTF-16 code units (``text.length``, ``text.slice``), ``\\s`` and ``trim()`` know JavaScript's
whitespace (``JS_WHITESPACE``), tool-call arguments print with
``JSON.stringify`` and ``Object.entries`` (an object's integer-like keys first, ascending, then
the others in insertion order), and ``sort()`` orders by UTF-16 code units."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any, Final

from rpcd.core import codec

__all__ = ["JS_WHITESPACE", "content_text", "is_js_space", "js_entries", "js_length", "js_slice", "js_trim",
           "js_truthy", "json_length", "json_text", "utf16_key"]


JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's ``String.prototype.trim`` removes (Python's ``str.strip()`` differs: it
keeps U+FEFF and strips \x1c-\x1f and \x85), so names read the same as in Pi."""


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a parsed JSON value (``[]`` and ``{}`` are truthy there)."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == value and value != 0
    return True


def _stores_astral(text: str) -> bool:
    """Whether CPython stores ``text`` with 4 bytes a character — which it does exactly when the
    string holds a character above U+FFFF. Read from the object's size: a constant-time check
    where counting would scan the string."""
    return sys.getsizeof(text) >= 3 * len(text) + _UCS4_THRESHOLD


_UCS4_THRESHOLD: Final = sys.getsizeof("\U00010000") - 3
_KIND_CHECK_WORKS: Final = all(
    _stores_astral(sample) == any(ord(ch) > 0xFFFF for ch in sample)
    for sample in ("", "a", "é", "漢", "\ud800", "😀", "a😀", "漢" * 1000, "é" * 999 + "😀", "😀" * 3, "x" * 5000)
)
"""The size rule above holds for this interpreter (else ``js_length`` always counts)."""


def js_length(text: str) -> int:
    """``text.length`` in JavaScript (UTF-16 code units)."""
    if text.isascii() or (_KIND_CHECK_WORKS and not _stores_astral(text)):
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def js_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` in UTF-16 code units (a pair cut in half leaves its lone high surrogate)."""
    if js_length(text) == len(text):
        return text[:end]  # no character above U+FFFF: characters are units
    units = text.encode("utf-16-le", "surrogatepass")[: 2 * end]
    return units.decode("utf-16-le", "surrogatepass")


def is_js_space(char: str) -> bool:
    """``/\\s/.test(char)``."""
    return char in JS_WHITESPACE


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
