"""JSON in and out of session files: the shared codec (``rpcd.core.codec``) under the store's names.

A line we write is the line Pi's ``JSON.stringify`` writes for the same value, and a line is
read as Pi's ``JSON.parse`` reads it (numbers, lone surrogates, non-finite numbers as ``null``,
deep nesting); the wire encodes with the same codec, so a value the store accepts is a value
the wire can send. See docs/store.md ("JSON: one encoding").
"""

from __future__ import annotations

from rpcd.core.codec import MAX_DEPTH, JsonValueError, dumps, js_number, loads
from rpcd.core.codec import JsonDecodeError as LineError

__all__ = ["MAX_DEPTH", "JsonValueError", "LineError", "dumps", "js_number", "loads"]
