"""JSON in and out, byte-compatible with Pi's ``JSON.parse`` / ``JSON.stringify``.

orjson is used because a resume parses tens of megabytes; its output matches
``JSON.stringify`` for everything Pi writes (compact, UTF-8, no ``/`` escaping). Where
orjson refuses input that JavaScript accepts (lone surrogates, integers beyond 64 bits)
we fall back to the standard library so that Pi's reading and ours stay the same.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


class LineError(ValueError):
    """A line that ``JSON.parse`` would reject."""


def _reject_constant(name: str) -> Any:
    raise LineError(f"invalid JSON constant {name}")


_FALLBACK_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def loads(line: bytes | memoryview | str) -> Any:
    """Parse one line as ``JSON.parse`` would (surrounding whitespace, incl. CR, allowed).

    A ``memoryview`` lets a line inside a larger buffer be parsed without copying it out.
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    # Node reads the file as UTF-8 with U+FFFD for invalid bytes before JSON.parse.
    text = line if isinstance(line, str) else bytes(line).decode("utf-8", "replace")
    try:
        return _FALLBACK_DECODER.decode(text.strip(" \t\r\n"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LineError(str(exc)) from None


def dumps(value: Any) -> bytes:
    """``JSON.stringify(value)`` as UTF-8 bytes, no trailing newline.

    ``None`` values are written as ``null``; callers drop unset optional keys before
    (Pi omits ``undefined``), see ``rpcd.store.entries.compact``.
    """
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8", "surrogatepass")
