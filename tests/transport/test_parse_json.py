"""The frame parser reads JSON with orjson where it can; its result is always the strict reference
decoder's (stdlib, UTF-8 only, no NaN/Infinity): same value, or both refuse. ``classify``, which skips
the guard against orjson's reading of long integers where it cannot matter, classifies every message
as it would on the reference decoder's reading."""

from __future__ import annotations

import json
import math
from typing import Any
from unittest import mock

import attrs
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.transport import envelope
from rpcd.transport.envelope import _reference_parse, parse_json

_scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**80), max_value=2**80)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text())
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


def _outcome(parse: Any, body: bytes) -> tuple[str, Any]:
    try:
        return "ok", parse(body)
    except (ValueError, RecursionError):
        return "refused", None


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _agree(body: bytes) -> None:
    fast, reference = _outcome(parse_json, body), _outcome(_reference_parse, body)
    assert fast[0] == reference[0], body
    assert _same(fast[1], reference[1]), body


@settings(max_examples=400, deadline=None)
@given(_values, st.booleans())
def test_json_documents_read_as_the_reference_reads_them(value: Any, ascii_only: bool) -> None:
    _agree(json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40) | st.sampled_from([b"NaN", b"[Infinity]", b"\xef\xbb\xbf{}", b"[1e400]",
                                                 b'"\\ud800"', b'"\\udc00\\ud800"', b"123456789012345678901234567890",
                                                 b"[-9223372036854775809]", b"{} x", b"\x0c{}", b'"\xff"',
                                                 b'{"a":1,"a":2}', b"-0", b"[-0.0]", b"[" * 3000 + b"]" * 3000]))
def test_odd_bytes_are_refused_or_read_as_the_reference_does(body: bytes) -> None:
    _agree(body)


def _refusing(body: bytes) -> Any:
    raise orjson.JSONDecodeError("refused", "", 0)


def _classified_by_reference(body: bytes) -> Any:
    """What ``classify`` makes of ``body`` when every frame is read by the reference decoder."""
    with mock.patch.object(envelope, "_orjson_loads", _refusing):
        return envelope.classify(body)


_big = st.integers(min_value=-(2**80), max_value=2**80) | st.sampled_from([2**64, -(2**63) - 1, 10**19, 10**25])
_numbers = _big | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
_member_values = (_numbers | st.none() | st.sampled_from(["2.0", "ping", "getState", ""])
                  | st.lists(_numbers, max_size=3) | st.dictionaries(st.text(max_size=3), _numbers, max_size=3))
_members = st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]),
                           _member_values, max_size=6)


@settings(max_examples=600, deadline=None)
@given(_members, st.booleans())
def test_a_message_is_classified_as_the_reference_reading_classifies_it(members: dict[str, Any], valid: bool) -> None:
    message = {"jsonrpc": "2.0", **members} if valid else members
    body = json.dumps(message).encode()
    fast, reference = envelope.classify(body), _classified_by_reference(body)
    assert type(fast) is type(reference), body
    assert all(_same(getattr(fast, field.name), getattr(reference, field.name))
               for field in attrs.fields(type(fast))), body
