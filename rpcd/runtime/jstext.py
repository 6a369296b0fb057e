"""JavaScript string facts the resource loaders depend on: lengths and slices count UTF-16 code
units, ``\\s`` and ``trim()`` know JavaScript's whitespace (``rpcd.store.entries.JS_WHITESPACE``)."""

from __future__ import annotations

from rpcd.store.entries import JS_WHITESPACE, js_trim

__all__ = ["JS_WHITESPACE", "is_js_space", "js_length", "js_slice", "js_trim"]


def js_length(text: str) -> int:
    """``text.length``: characters outside the BMP count twice."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def js_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` in UTF-16 code units (a pair cut in half leaves its lone high surrogate)."""
    units = text.encode("utf-16-le", "surrogatepass")[: 2 * end]
    return units.decode("utf-16-le", "surrogatepass")


def is_js_space(char: str) -> bool:
    """``/\\s/.test(char)``."""
    return char in JS_WHITESPACE
