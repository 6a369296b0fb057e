"""The one JSON encoding rpcd writes (session files and the wire) and the one way it reads JSON.

The semantics are JavaScript's ``JSON.parse`` / ``JSON.stringify``, because Pi is on the
other side of the files and JavaScript clients on the other side of the wire. See
docs/store.md ("JSON: one encoding") and docs/protocol.md.

Writing (``dumps``):

* the value model is plain JSON: ``dict`` with ``str`` keys, ``list``/``tuple``, ``str``,
  ``int``, ``float``, ``bool``, ``None`` (subclasses included). Anything else raises
  ``JsonValueError`` naming the path and the type, never the value. Values from outside
  (extensions) are brought into this model first by ``to_json``;
* numbers are written as JavaScript prints them (``3.0`` -> ``3``, ``1e-6`` -> ``0.000001``);
  **a non-finite number (NaN, +-Infinity) is written as ``null``**, as ``JSON.stringify``
  writes it; integers beyond 64 bits keep their digits;
* a lone surrogate is escaped (``\\ud800``), as ``JSON.stringify`` escapes it;
* nesting up to ``MAX_DEPTH`` levels is written without recursion (orjson stops at 255);
* ``ascii=True`` escapes every non-ASCII character (the wire's documented form).

Reading (``loads``): what ``JSON.parse`` accepts, with the values it gives: ``NaN`` and
``Infinity`` literals are refused; a number that overflows a double is +-inf (JavaScript's
``Infinity``); lone-surrogate escapes are kept; invalid UTF-8 reads as U+FFFD (Node decodes
files that way); nesting up to ``MAX_DEPTH`` is read without recursion.

orjson does the work whenever it can (session files are tens of megabytes; every notification
on the wire): a value of exact plain types whose floats orjson already writes as JavaScript does
goes to it as it is, after a copy-free check (``_plain``); other floats are pre-written
(``_prepare``); the pure-Python paths here take over only for what orjson refuses, and are what
the fast paths are tested against.
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime
import decimal
import enum
import json.decoder
import math
import os
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

MAX_DEPTH: Final = 10_000
"""Deepest nesting written or read. Pi (Node 22) cannot write more than ~4,000 levels
(``JSON.stringify`` recurses), so every file Pi writes is within it; memory stays bounded."""

_FAST_DEPTH: Final = 200
"""Below orjson's own limit (255): deeper values take the iterative writer."""

_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1


class JsonValueError(TypeError, ValueError):
    """A value with no JSON form (or nested too deeply). ``path`` is JSONPath-like (``$.a[2]``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{reason} at {path}")
        self.path = path
        self.reason = reason


class JsonDecodeError(ValueError):
    """Text that ``JSON.parse`` would reject (or nested deeper than ``MAX_DEPTH``)."""


# -- writing -----------------------------------------------------------------------------


def dumps(value: Any, *, ascii: bool = False) -> bytes:
    """``JSON.stringify(value)`` as UTF-8 bytes (no trailing newline); see the module doc."""
    try:
        # ``_prepare`` hands orjson the value itself when orjson writes it as JavaScript does, else a
        # copy of the containers on the way to the floats it writes otherwise. orjson still refuses
        # what the reference writer must take (lone surrogates, integers beyond 64 bits, non-str
        # keys): then the iterative writer does.
        data = orjson.dumps(_prepare(value, 0))
    except (_Slow, orjson.JSONEncodeError, RecursionError):
        data = _dumps_iterative(value)
    return _to_ascii(data) if ascii else data


class _Slow(Exception):
    """The fast path met something it does not handle: take the iterative writer."""


_LEAVES: Final = frozenset({str, int, bool, type(None)})
"""Exact types orjson writes as JavaScript does (an integer beyond 64 bits makes orjson refuse
the whole value, and the iterative writer takes over)."""


def _prepare(value: Any, depth: int) -> Any:
    """``value`` for orjson: itself where orjson writes it as ``JSON.stringify`` does (exact ``_LEAVES``,
    floats in ``1e-4 <= |x| < 1e16`` that are not integral: there Python's shortest digits, which orjson
    writes, need no exponent and no ``.0`` fix, in exact dicts/lists/tuples at most ``_FAST_DEPTH``
    deep); a float it writes otherwise becomes a pre-written fragment, and only the containers on
    the way to one are copied (a message's usage costs are ``0.0``: its text is never copied for them).

    One walk, leaves tested inline (no call per string or integer): this walk is most of the cost.
    """
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is float:
        if 1e-4 <= abs(value) < 1e16 and not value.is_integer():
            return value
        return orjson.Fragment(js_number(value))
    if depth >= _FAST_DEPTH:
        raise _Slow
    if kind is dict:
        slots: Any = value.items()
    elif kind is list or kind is tuple:
        slots = enumerate(value)
    else:
        raise _Slow
    leaves = _LEAVES
    deeper = depth + 1
    copied: Any = None
    for slot, item in slots:
        if type(item) in leaves:
            continue
        new = _prepare(item, deeper)
        if new is not item:
            if copied is None:
                copied = dict(value) if kind is dict else list(value)
            copied[slot] = new
    return value if copied is None else copied


class _Raw:
    """Punctuation or an object key, written as is (never confused with a ``bytes`` value)."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text


class _Close:
    __slots__ = ("ident", "text")

    def __init__(self, text: bytes, ident: int) -> None:
        self.text = text
        self.ident = ident


class _Key:
    __slots__ = ("key",)

    def __init__(self, key: str | int) -> None:
        self.key = key


def _dumps_iterative(value: Any) -> bytes:
    """The reference writer: no recursion, subclasses normalised, refusals named by path."""
    out: list[bytes] = []
    path: list[str | int] = []
    on_path: set[int] = set()
    # Work items: a value to write, _Key (the position of the next value, for error paths),
    # _Close (end of a container) and _Raw (punctuation and object keys).
    stack: list[Any] = [_Key("$"), value]
    current: str | int = "$"
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is _Raw:
            out.append(item.text)
            continue
        if kind is _Key:
            current = item.key
            continue
        if kind is _Close:
            out.append(item.text)
            on_path.discard(item.ident)
            path.pop()
            continue
        if item is None:
            out.append(b"null")
        elif item is True:
            out.append(b"true")
        elif item is False:
            out.append(b"false")
        elif isinstance(item, str):
            out.append(_js_string(item))
        elif isinstance(item, int):
            out.append(str(int(item)).encode())
        elif isinstance(item, float):
            out.append(js_number(float(item)))
        elif isinstance(item, dict | list | tuple):
            ident = id(item)
            if ident in on_path:
                raise JsonValueError(_path_text([*path, current]), "circular reference")
            if len(path) >= MAX_DEPTH:
                raise JsonValueError(_path_text([*path, current]), f"nested deeper than {MAX_DEPTH} levels")
            on_path.add(ident)
            path.append(current)
            if isinstance(item, dict):
                out.append(b"{")
                stack.append(_Close(b"}", ident))
                members = list(item.items())
                for index in range(len(members) - 1, -1, -1):
                    key, member = members[index]
                    if not isinstance(key, str):
                        raise JsonValueError(_path_text(path), f"object key of type {type(key).__name__}")
                    stack.append(member)
                    stack.append(_Key(key))
                    stack.append(_Raw(_js_string(key) + b":" if index == 0 else b"," + _js_string(key) + b":"))
            else:
                out.append(b"[")
                stack.append(_Close(b"]", ident))
                for index in range(len(item) - 1, -1, -1):
                    stack.append(item[index])
                    stack.append(_Key(index))
                    if index:
                        stack.append(_COMMA)
        else:
            raise JsonValueError(_path_text([*path, current]), f"{type(item).__name__} is not JSON")
    return b"".join(out)


_COMMA: Final = _Raw(b",")
_MAX_PATH_PARTS: Final = 12


def _path_text(parts: list[str | int]) -> str:
    """``$.a[2]["b c"]`` (``parts[0]`` is ``"$"``); a very deep path shows its ends around ``...``."""
    keys = parts[1:]
    if len(keys) > _MAX_PATH_PARTS:
        half = _MAX_PATH_PARTS // 2
        return "$" + "".join(map(_part_text, keys[:half])) + "..." + "".join(map(_part_text, keys[-half:]))
    return "$" + "".join(map(_part_text, keys))


def _part_text(part: str | int) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    if part.isidentifier():
        return f".{part}"
    return "[" + json.dumps(part)[:40] + "]"


_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


def _js_string(text: str) -> bytes:
    """A string as ``JSON.stringify`` writes it (a lone surrogate as ``\\udXXX``)."""
    if not _SURROGATE_RE.search(text):
        return orjson.dumps(text)
    escaped = json.dumps(str.__str__(text), ensure_ascii=False)
    return _SURROGATE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped).encode()


def js_number(value: float) -> bytes:
    """``JSON.stringify`` of a JavaScript number (ECMAScript Number::toString, radix 10); NaN/inf -> null.

    The digits are Python's shortest round-trip ``repr`` (the same digits JavaScript picks);
    only where the decimal point goes and when to switch to exponent form differ.
    """
    if value == 0:
        return b"0"  # also -0
    text = repr(value)
    if "e" not in text and "n" not in text:  # 1e-4 <= |value| < 1e16: the same digits, no exponent
        return (text[:-2] if text.endswith(".0") else text).encode()
    if value != value or value in (math.inf, -math.inf):
        return b"null"
    sign = "-" if value < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    joined = whole + fraction.rstrip("0") if fraction.strip("0") else whole
    digits = joined.lstrip("0")
    point = len(whole) - (len(joined) - len(digits)) + (int(exp) if exp else 0)
    digits = digits.rstrip("0")
    k, n = len(digits), point  # value = 0.<digits> x 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return (sign + text).encode()


def _escape_non_ascii(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    pieces = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            pieces.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
        else:
            pieces.append(f"\\u{code:04x}")
    return "".join(pieces), error.end


codecs.register_error("rpcd-json-ascii", _escape_non_ascii)


def _to_ascii(data: bytes) -> bytes:
    """Escape non-ASCII characters; in JSON text they only occur inside strings, so this is exact."""
    if data.isascii():
        return data
    return data.decode("utf-8").encode("ascii", "rpcd-json-ascii")


# -- reading -----------------------------------------------------------------------------

_VALUE_START: Final = frozenset(b'{["-0123456789tfn')
_JSON_WHITESPACE: Final = b" \t\r\n"


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON text as ``JSON.parse`` would (surrounding whitespace, incl. CR, allowed).

    A ``memoryview`` lets a line inside a larger buffer be parsed without copying it out.
    Raises ``JsonDecodeError``.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        raw = data if isinstance(data, memoryview) else memoryview(data)
        start = 0
        while start < len(raw) and raw[start] in _JSON_WHITESPACE:
            start += 1
        if start == len(raw) or raw[start] not in _VALUE_START:
            raise JsonDecodeError("not a JSON value")  # decided without decoding a large buffer
        # Node reads the file as UTF-8 with U+FFFD for invalid bytes before JSON.parse.
        text = bytes(raw).decode("utf-8", "replace")
    return _parse(text)


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _parse(text: str) -> Any:
    """``JSON.parse(text)`` without recursion: an explicit stack of open containers."""
    skip = _WS.match
    number = _NUMBER.match
    stack: list[tuple[dict[str, Any] | list[Any], str]] = []
    end = len(text)
    i = skip(text, 0).end()  # type: ignore[union-attr]
    try:
        while True:
            # -- one value at i (or the opening of a container) --
            char = text[i] if i < end else ""
            if char == "{" or char == "[":
                if len(stack) >= MAX_DEPTH:
                    raise JsonDecodeError(f"nested deeper than {MAX_DEPTH} levels")
                i = skip(text, i + 1).end()  # type: ignore[union-attr]
                closing = "}" if char == "{" else "]"
                if i < end and text[i] == closing:
                    value: Any = {} if char == "{" else []
                    i += 1
                elif char == "{":
                    key, i = _member_key(text, i)
                    stack.append(({}, key))
                    continue
                else:
                    stack.append(([], ""))
                    continue
            elif char == '"':
                value, i = _scanstring(text, i + 1, True)
            elif char == "t" and text.startswith("true", i):
                value, i = True, i + 4
            elif char == "f" and text.startswith("false", i):
                value, i = False, i + 5
            elif char == "n" and text.startswith("null", i):
                value, i = None, i + 4
            else:
                match = number(text, i)
                if match is None:
                    raise JsonDecodeError(f"unexpected character at {i}")
                literal = match.group()
                if match.group(1) is None and match.group(2) is None:
                    whole = int(literal)
                    value = whole if _INT64_MIN <= whole <= _UINT64_MAX else float(literal)
                else:
                    value = float(literal)  # overflow gives +-inf: JavaScript's Infinity
                i = match.end()
            # -- attach the finished value to the open containers, closing what ends here --
            while True:
                i = skip(text, i).end()  # type: ignore[union-attr]
                if not stack:
                    if i != end:
                        raise JsonDecodeError(f"unexpected data after the value at {i}")
                    return value
                container, key = stack[-1]
                if isinstance(container, list):
                    container.append(value)
                else:
                    container[key] = value
                char = text[i] if i < end else ""
                if char == ",":
                    i = skip(text, i + 1).end()  # type: ignore[union-attr]
                    if isinstance(container, dict):
                        key, i = _member_key(text, i)
                        stack[-1] = (container, key)
                    break
                if char == ("]" if isinstance(container, list) else "}"):
                    stack.pop()
                    value = container
                    i += 1
                    continue
                raise JsonDecodeError(f"expected ',' or a closing bracket at {i}")
    except (ValueError, IndexError) as exc:  # scanstring's JSONDecodeError is a ValueError
        if isinstance(exc, JsonDecodeError):
            raise
        raise JsonDecodeError(str(exc)) from None


def _member_key(text: str, i: int) -> tuple[str, int]:
    """An object member's key and the position after its ``:`` (and whitespace)."""
    if i >= len(text) or text[i] != '"':
        raise JsonDecodeError(f"expected a string key at {i}")
    key, i = _scanstring(text, i + 1, True)
    i = _WS.match(text, i).end()  # type: ignore[union-attr]
    if i >= len(text) or text[i] != ":":
        raise JsonDecodeError(f"expected ':' at {i}")
    return key, _WS.match(text, i + 1).end()  # type: ignore[union-attr]


# -- values from outside (extensions) ----------------------------------------------------------


def to_json(value: Any) -> Any:
    """``value`` brought into the plain JSON model, or ``JsonValueError`` naming what has no JSON form.

    Converted, each to its one obvious JSON form: tuples, sets and frozensets -> lists (sets
    sorted when their items can be); mappings -> dicts; ``bool``/``int``/``float``/``None`` keys
    -> their JSON text (JavaScript keys are strings); subclasses of ``str``/``int``/``float``
    -> the plain value; enums -> their value; ``datetime``/``date``/``time`` -> ISO 8601 text
    (``Date.toJSON``); ``uuid.UUID`` and path-like objects -> text; ``Decimal`` -> a number;
    dataclass instances -> dicts of their fields; **non-finite numbers -> ``None``** (what
    ``JSON.stringify`` writes). Refused: bytes (no single JSON form), other objects, circular
    references and nesting deeper than ``MAX_DEPTH``. The walk is iterative.
    """
    root: list[Any] = [None]
    active: set[int] = set()  # ids of the containers on the path to the item being converted
    # Work items: (source, parent container, slot in parent, path) or an int (leave that container).
    work: list[Any] = [(value, root, 0, None)]
    while work:
        item = work.pop()
        if type(item) is int:
            active.discard(item)
            continue
        source, parent, slot, where = item
        converted, children = _convert(source, where)
        parent[slot] = converted
        if children is None:
            continue
        ident = id(source)
        if ident in active:
            raise JsonValueError(_where_text(where), "circular reference")
        if len(active) >= MAX_DEPTH:
            raise JsonValueError(_where_text(where), f"nested deeper than {MAX_DEPTH} levels")
        active.add(ident)
        work.append(ident)
        for key, child in children:
            if isinstance(converted, list):
                converted.append(None)
                position: Any = len(converted) - 1
            else:
                converted[key] = None
                position = key
            work.append((child, converted, position, (where, key)))
    return root[0]


_Where = tuple[Any, str | int] | None
"""Where a value sits, as a chain of ``(parent's where, key)`` (built only into text on error)."""


def _where_text(where: _Where) -> str:
    keys: list[str | int] = []
    while where is not None:
        where, key = where
        keys.append(key)
    return _path_text(["$", *reversed(keys)])


def _convert(item: Any, where: _Where) -> tuple[Any, list[tuple[Any, Any]] | None]:
    """A leaf's JSON value, or an empty container plus the ``(key, child)`` pairs to fill it with."""
    if item is None or item is True or item is False:
        return item, None
    if isinstance(item, enum.Enum):
        return _convert(item.value, where)
    if isinstance(item, str):
        return str.__str__(item), None
    if isinstance(item, int):
        return int(item), None
    if isinstance(item, float):
        number = float(item)
        return (number if math.isfinite(number) else None), None
    if isinstance(item, decimal.Decimal):
        if not item.is_finite():
            return None, None
        return (int(item) if item == item.to_integral_value() else float(item)), None
    if isinstance(item, Mapping):
        return {}, [(_key(key, where), child) for key, child in item.items()]
    if isinstance(item, list | tuple):
        return [], list(enumerate(item))
    if isinstance(item, set | frozenset):
        try:
            ordered = sorted(item)
        except TypeError:
            ordered = list(item)
        return [], list(enumerate(ordered))
    if isinstance(item, datetime.date | datetime.time):
        return item.isoformat(), None
    if isinstance(item, uuid.UUID):
        return str(item), None
    if isinstance(item, os.PathLike):
        path = os.fspath(item)
        if isinstance(path, str):
            return path, None
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {}, [(field.name, getattr(item, field.name)) for field in dataclasses.fields(item)]
    raise JsonValueError(_where_text(where), f"{type(item).__name__} is not JSON")


def _key(key: Any, where: _Where) -> str:
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, bool):
        return "null" if key is None else ("true" if key else "false")
    if isinstance(key, int):
        return str(int(key))
    if isinstance(key, float):
        return js_number(float(key)).decode()
    raise JsonValueError(_where_text(where), f"object key of type {type(key).__name__}")
