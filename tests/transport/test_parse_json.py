"""The frame parser reads JSON with orjson where it can; its result is always the strict reference
decoder's (stdlib, UTF-8 only, no NaN/Infinity): same value, or both refuse."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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
