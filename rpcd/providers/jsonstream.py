"""JSON from a provider's stream, decoded strictly at the edge where it enters.

Python's ``json`` accepts ``NaN``, ``Infinity`` and ``-Infinity`` and turns ``1e999`` into
``inf``; none of these is JSON, and one of them reaching a session event or a file makes
every later encoding fail. So a stream chunk (SSE ``data:``) is decoded here and a
non-finite number is a ``NonFiniteNumberError``: the provider turns it into a provider
error for that turn (``stopReason: "error"``), never a crash and never a ``NaN`` on the
wire. The same holds for tool-call arguments assembled from streamed fragments.

``parse_streaming_json`` is pi-ai's ``parseStreamingJson``: arguments that are still
incomplete (a stream cut mid-call) parse as far as they go, repairable string literals
(raw control characters, bad escapes) are repaired, and anything else is ``{}``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final


class NonFiniteNumberError(ValueError):
    """A number that JSON cannot carry (``NaN``, ``Infinity``, an overflowing literal)."""


def _reject_constant(name: str) -> Any:
    raise NonFiniteNumberError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonFiniteNumberError("number out of range")
    return value


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads_strict(text: str) -> Any:
    """``json.loads`` that refuses non-finite numbers (``NonFiniteNumberError``) and, like
    ``json.loads``, raises ``ValueError`` for anything else that is not one JSON value."""
    value, end = _DECODER.raw_decode(text, _skip_ws(text, 0))
    if _skip_ws(text, end) != len(text):
        raise ValueError("extra data after the JSON value")
    return value


_WS: Final = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, index: int) -> int:
    match = _WS.match(text, index)
    return match.end() if match else index


_VALID_ESCAPES: Final = frozenset('"\\/bfnrtu')


def repair_json(text: str) -> str:
    """pi-ai's ``repairJson``: escape raw control characters inside strings and double a
    backslash before an invalid escape."""
    out: list[str] = []
    in_string = False
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if not in_string:
            out.append(ch)
            if ch == '"':
                in_string = True
            i += 1
            continue
        if ch == '"':
            out.append(ch)
            in_string = False
        elif ch == "\\":
            nxt = text[i + 1] if i + 1 < n else None
            if nxt is None:
                out.append("\\\\")
            elif nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6] or ""):
                out.append("\\u" + text[i + 2 : i + 6])
                i += 5
            elif nxt in _VALID_ESCAPES:
                out.append("\\" + nxt)
                i += 1
            else:
                out.append("\\\\")
        elif ord(ch) <= 0x1F:
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def loads_with_repair(text: str) -> Any:
    """pi-ai's ``parseJsonWithRepair`` (strict about non-finite numbers)."""
    try:
        return loads_strict(text)
    except NonFiniteNumberError:
        raise
    except ValueError:
        repaired = repair_json(text)
        if repaired == text:
            raise
        return loads_strict(repaired)


def parse_streaming_json(text: str | None) -> Any:
    """Arguments from streamed fragments, complete or not (pi-ai ``parseStreamingJson``).

    Raises ``NonFiniteNumberError`` for a non-finite number; every other failure is ``{}``.
    """
    if not text or not text.strip():
        return {}
    try:
        return loads_with_repair(text)
    except NonFiniteNumberError:
        raise
    except ValueError:
        pass
    for candidate in (text, repair_json(text)):
        try:
            value = _PartialParser(candidate).parse()
        except NonFiniteNumberError:
            raise
        except ValueError:
            continue
        return {} if value is None else value
    return {}


class _PartialParser:
    """A JSON reader that accepts a truncated document (the ``partial-json`` package's rules
    as far as tool arguments need them): an unterminated string, array or object ends where
    the text ends; an object member without its value is dropped."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def parse(self) -> Any:
        self._ws()
        if self.i >= len(self.text):
            return None
        value = self._value()
        return value

    def _ws(self) -> None:
        self.i = _skip_ws(self.text, self.i)

    def _eof(self) -> bool:
        return self.i >= len(self.text)

    def _value(self) -> Any:
        self._ws()
        if self._eof():
            raise _Incomplete
        ch = self.text[self.i]
        if ch == "{":
            return self._object()
        if ch == "[":
            return self._array()
        if ch == '"':
            return self._string()
        return self._literal()

    def _object(self) -> dict[str, Any]:
        self.i += 1
        result: dict[str, Any] = {}
        while True:
            self._ws()
            if self._eof():
                return result
            if self.text[self.i] == "}":
                self.i += 1
                return result
            if self.text[self.i] == ",":
                self.i += 1
                continue
            if self.text[self.i] != '"':
                raise ValueError("expected a key")
            try:
                key = self._string(complete_only=True)
            except _Incomplete:
                return result
            self._ws()
            if self._eof():
                return result
            if self.text[self.i] != ":":
                raise ValueError("expected ':'")
            self.i += 1
            try:
                result[key] = self._value()
            except _Incomplete:
                return result

    def _array(self) -> list[Any]:
        self.i += 1
        result: list[Any] = []
        while True:
            self._ws()
            if self._eof():
                return result
            if self.text[self.i] == "]":
                self.i += 1
                return result
            if self.text[self.i] == ",":
                self.i += 1
                continue
            try:
                result.append(self._value())
            except _Incomplete:
                return result

    def _string(self, *, complete_only: bool = False) -> str:
        start = self.i
        self.i += 1
        escaped = False
        while self.i < len(self.text):
            ch = self.text[self.i]
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                self.i += 1
                value: str = loads_strict(self.text[start : self.i])
                return value
            self.i += 1
        if complete_only:
            raise _Incomplete
        body = self.text[start + 1 :]
        if escaped:
            body = body[:-1]
        body = re.sub(r"\\u[0-9a-fA-F]{0,3}$", "", body)
        partial: str = loads_strict('"' + body + '"')
        return partial

    def _literal(self) -> Any:
        match = re.compile(r"-?[0-9][0-9eE.+\-]*|true|false|null|-?Infinity|NaN|[a-zA-Z]+").match(self.text, self.i)
        if match is None:
            raise ValueError("unexpected character")
        token = match.group(0)
        self.i = match.end()
        if token in ("NaN", "Infinity", "-Infinity"):
            raise NonFiniteNumberError(f"non-finite number {token}")
        if self._eof() and token not in ("true", "false", "null"):
            # a number cut mid-way may still grow: keep what parses, as partial-json does
            try:
                return loads_strict(token)
            except NonFiniteNumberError:
                raise
            except ValueError:
                raise _Incomplete from None
        return loads_strict(token)


class _Incomplete(ValueError):
    pass
