"""JSON in and out, byte-compatible with Pi's ``JSON.parse`` / ``JSON.stringify``.

orjson is used because a resume parses tens of megabytes. Its output matches
``JSON.stringify`` (compact, UTF-8, no ``/`` escaping) except in three places, which
``dumps`` corrects so that a line we write is the line Pi would write for the same value:
- numbers: JavaScript prints ``3.0`` as ``3``, ``1e16`` as ``10000000000000000`` and
  ``0.000001`` in plain notation (Number::toString); orjson writes ``3.0``, ``1e16``, ``1e-6``;
- strings holding a lone surrogate (JavaScript escapes it as ``\\ud800``; orjson refuses it);
- integers beyond 64 bits (orjson refuses them; we write their digits, which both
  readers turn into a double, as ``JSON.parse`` does).
Where orjson refuses input that JavaScript accepts (lone surrogates, numbers that overflow
to infinity) ``loads`` falls back to the standard library so that Pi's reading and ours stay
the same.
"""

from __future__ import annotations

import json
import re
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
    except RecursionError:  # nesting deeper than Python's parser can follow: skipped, not fatal
        raise LineError("JSON nested too deeply") from None


def dumps(value: Any) -> bytes:
    """``JSON.stringify(value)`` as UTF-8 bytes, no trailing newline.

    ``None`` values are written as ``null``; callers drop unset optional keys before
    (Pi omits ``undefined``), see ``rpcd.store.entries.compact``. Only the entries we
    create (and Pi's own migration) are serialised, never a resumed file, so the walk over
    containers that corrects numbers costs nothing that matters.
    """
    prepared = _js_numbers(value)
    try:
        return orjson.dumps(prepared)
    except orjson.JSONEncodeError:  # a lone surrogate somewhere: escape it as JavaScript does
        return orjson.dumps(_js_strings(prepared))


_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1


def _js_numbers(value: Any) -> Any:
    """``value`` with every float (and every integer orjson cannot hold) as a pre-written fragment."""
    if isinstance(value, float):
        return orjson.Fragment(js_number(value))
    if isinstance(value, dict):
        return {key: _js_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_js_numbers(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _UINT64_MAX:
        return orjson.Fragment(str(value).encode())
    return value


_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


def _js_string(text: str) -> bytes:
    """A string with lone surrogates, written as ``JSON.stringify`` writes it (``\\udXXX``)."""
    escaped = json.dumps(text, ensure_ascii=False)
    return _SURROGATE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped).encode()


def _js_strings(value: Any) -> Any:
    if isinstance(value, str):
        return orjson.Fragment(_js_string(value)) if _SURROGATE_RE.search(value) else value
    if isinstance(value, list):
        return [_js_strings(item) for item in value]
    if isinstance(value, dict):
        if any(_SURROGATE_RE.search(key) for key in value):  # a key cannot be a fragment: write the object
            members = (_js_string(key) + b":" + orjson.dumps(_js_strings(item)) for key, item in value.items())
            return orjson.Fragment(b"{" + b",".join(members) + b"}")
        return {key: _js_strings(item) for key, item in value.items()}
    return value


def js_number(value: float) -> bytes:
    """``JSON.stringify`` of a JavaScript number (ECMAScript Number::toString, radix 10).

    The digits are Python's shortest round-trip ``repr`` (the same digits JavaScript picks);
    only where the decimal point goes and when to switch to exponent form differ.
    """
    if value != value or value in (float("inf"), float("-inf")):
        return b"null"
    if value == 0:
        return b"0"  # also -0
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
