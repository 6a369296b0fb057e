"""The one JSON codec (``rpcd.core.codec``): what it writes, what it reads, what it refuses.

Byte equality with Node's ``JSON.stringify`` is checked against Node itself in
``tests/pi_compat/test_json_like_javascript.py``; here: the rules, the fast paths against the
pure-Python reference paths, and values orjson alone cannot handle (deep, non-finite, odd types).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import math
import pathlib
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.core import codec


def nested(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for index in range(depth):
        value = [value] if index % 2 else {"d": value}
    return value


@pytest.fixture
def deep_recursion() -> Iterator[None]:
    """Python's own ``==`` and ``json`` recurse: let the *test* compare deep values."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 50_000))
    yield
    sys.setrecursionlimit(old)


# -- writing ---------------------------------------------------------------------------------


def test_non_finite_numbers_are_written_as_null_as_json_stringify_writes_them() -> None:
    assert codec.dumps({"a": math.nan, "b": [math.inf, -math.inf], "c": 1.5}) == b'{"a":null,"b":[null,null],"c":1.5}'
    assert codec.dumps(math.nan, ascii=True) == b"null"


@pytest.mark.usefixtures("deep_recursion")
@pytest.mark.parametrize("depth", [254, 255, 300, 1200, codec.MAX_DEPTH])
def test_deep_values_are_written_and_read_back(depth: int) -> None:
    value = nested(depth, 2.0)
    data = codec.dumps(value)
    assert data == json.dumps(value, separators=(",", ":")).replace("2.0", "2").encode()
    assert codec.loads(data) == nested(depth, 2)


def test_nesting_beyond_the_limit_is_refused_with_its_path() -> None:
    with pytest.raises(codec.JsonValueError, match="nested deeper than") as caught:
        codec.dumps(nested(codec.MAX_DEPTH + 1))
    assert caught.value.path.startswith("$.d[0].d[0]") and "..." in caught.value.path


def test_a_circular_value_is_refused_not_looped_over() -> None:
    loop: dict[str, Any] = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(codec.JsonValueError, match=r"circular reference at \$\.a\[0\]"):
        codec.dumps(loop)
    with pytest.raises(codec.JsonValueError, match="circular"):
        codec.to_json(loop)


@pytest.mark.parametrize(
    ("value", "reason", "path"),
    [
        ({"when": datetime.datetime(2024, 1, 1)}, "datetime is not JSON", "$.when"),
        ([1, {2, 3}], "set is not JSON", "$[1]"),
        ({"k": [b"raw"]}, "bytes is not JSON", "$.k[0]"),
        ({"n": decimal.Decimal("1.5")}, "Decimal is not JSON", "$.n"),
        ({"p": pathlib.Path("/x")}, "PosixPath is not JSON", "$.p"),
        ({"a b": object()}, "object is not JSON", '$["a b"]'),
        ({"x": {1: "one"}}, "object key of type int", "$.x"),
        (uuid.UUID(int=1), "UUID is not JSON", "$"),
    ],
)
def test_values_outside_plain_json_are_refused_naming_type_and_path(value: Any, reason: str, path: str) -> None:
    """The store and the wire refuse the same values (orjson alone would write datetimes, UUIDs)."""
    with pytest.raises(codec.JsonValueError) as caught:
        codec.dumps(value)
    assert (caught.value.reason, caught.value.path) == (reason, path)
    assert isinstance(caught.value, TypeError)


def test_subclasses_of_json_types_are_written_as_their_plain_values() -> None:
    class Level(enum.IntEnum):
        HIGH = 3

    class Name(str):
        pass

    class Ordered(dict[str, Any]):
        pass

    assert codec.dumps(Ordered(a=Level.HIGH, b=Name("x"), c=(1, 2.0))) == b'{"a":3,"b":"x","c":[1,2]}'


def test_ascii_output_escapes_every_non_ascii_character_as_json_does() -> None:
    value = {"é": "ü\u2028\U0001f600", "s": "\ud800"}
    data = codec.dumps(value, ascii=True)
    assert data.isascii()
    assert data == json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()
    assert codec.loads(data) == value


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec=None), max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(st.characters(codec=None), max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300)
@given(json_values)
def test_the_fast_writer_writes_what_the_reference_writer_writes(value: Any) -> None:
    assert codec.dumps(value) == codec._dumps_iterative(value)


@pytest.mark.parametrize(
    "number",
    [1e-4, 0.00012, 9.999999999999999e-05, 1e-5, 2.5e-6, 0.1, 0.3, 123.456, 1e15 + 0.5, 9999999999999998.0,
     1e16, 1e21, 3.0, -3.0, -0.0, 0.0, 5e-324, -1.7976931348623157e308, -0.00015, math.nan, -math.inf],
)
def test_numbers_taken_by_orjson_as_they_are_are_written_as_javascript_writes_them(number: float) -> None:
    """The copy-free fast path hands floats in 1e-4 <= |x| < 1e16 (not integral) to orjson as they are;
    every other float takes the pre-written form. Both agree with the reference writer at the edges."""
    value = {"usage": {"cost": number, "n": 1}, "list": [number, "s", None, True]}
    assert codec.dumps(value) == codec._dumps_iterative(value)
    assert codec.dumps(value, ascii=True) == codec._dumps_iterative(value)


def test_the_fast_path_refuses_what_the_reference_refuses_and_writes_what_orjson_alone_refuses() -> None:
    written = codec.dumps({"a": ["\ud800", 2**70, {"k": -(2**64)}]})
    assert written == b'{"a":["\\ud800",1180591620717411303424,{"k":-18446744073709551616}]}'
    with pytest.raises(codec.JsonValueError, match="UUID is not JSON"):
        codec.dumps({"event": {"id": uuid.UUID(int=1)}})
    with pytest.raises(codec.JsonValueError, match="object key of type int"):
        codec.dumps({"event": {1: "x"}})


# -- reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"1e999", math.inf),
        (b'{"cost":-1e999}', {"cost": -math.inf}),
        (b'"\\ud800"', "\ud800"),
        (b'"\xff"', "\ufffd"),
        (b' \t{"a":[1,2.5,true,null]}\r\n', {"a": [1, 2.5, True, None]}),
        (b'{"a":1,"b":2,"a":3}', {"a": 3, "b": 2}),
        (b"123456789012345678901234567890", 1.2345678901234568e29),
    ],
)
def test_text_is_read_as_json_parse_reads_it(text: bytes, expected: Any) -> None:
    assert codec.loads(text) == expected
    assert list(codec.loads(text)) == list(expected) if isinstance(expected, dict) else True


@pytest.mark.parametrize(
    "text", [b"NaN", b"Infinity", b"[1,]", b"{'a':1}", b"01", b'"a\x01"', b"\x00" * 100, b"", b"[", b'{"a"}']
)
def test_text_json_parse_rejects_is_rejected(text: bytes) -> None:
    with pytest.raises(codec.JsonDecodeError):
        codec.loads(text)


@pytest.mark.usefixtures("deep_recursion")
def test_deep_text_is_read_without_recursion_up_to_the_limit() -> None:
    depth = codec.MAX_DEPTH
    assert codec.loads(b"[" * depth + b"]" * depth) == nested_lists(depth)
    with pytest.raises(codec.JsonDecodeError, match="nested deeper"):
        codec.loads(b"[" * (depth + 1) + b"]" * (depth + 1))


def nested_lists(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_a_long_line_that_cannot_be_json_is_rejected_without_decoding_it() -> None:
    with pytest.raises(codec.JsonDecodeError, match="not a JSON value"):
        codec.loads(memoryview(b"\x00" * (64 << 20)))


@settings(max_examples=300)
@given(json_values)
def test_the_reference_reader_reads_what_orjson_reads(value: Any) -> None:
    """The pure-Python reader (deep values, lone surrogates) agrees with the fast one, also on
    integers beyond 64 bits (both give a double, as ``JSON.parse`` does)."""
    if not _finite(value):
        return
    text = json.dumps(value)
    try:
        expected = orjson.loads(text)
    except orjson.JSONDecodeError:  # a lone surrogate: only the reference reader takes it
        expected = json.loads(text, parse_int=lambda s: int(s) if -(2**63) <= int(s) < 2**64 else float(s))
    assert codec._parse(text) == expected


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(map(_finite, value))
    if isinstance(value, dict):
        return all(map(_finite, value.values()))
    return True


# -- values from outside -----------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: int
    y: float


class Color(enum.Enum):
    RED = "red"


def test_extension_values_are_brought_into_plain_json() -> None:
    value = {
        "when": datetime.datetime(2024, 1, 2, 3, 4, 5),
        "day": datetime.date(2024, 1, 2),
        "ids": {3, 1, 2},
        "frozen": frozenset({"b", "a"}),
        "mixed": {1, "a"},
        "price": decimal.Decimal("1.50"),
        "count": decimal.Decimal("3"),
        "bad": decimal.Decimal("NaN"),
        "path": pathlib.PurePosixPath("/tmp/x"),
        "id": uuid.UUID(int=1),
        "color": Color.RED,
        "point": Point(1, math.inf),
        "pair": (1, 2),
        1: "int key",
        None: "null key",
        2.5: "float key",
        "nan": math.nan,
    }
    plain = codec.to_json(value)
    assert plain == {
        "when": "2024-01-02T03:04:05",
        "day": "2024-01-02",
        "ids": [1, 2, 3],
        "frozen": ["a", "b"],
        "mixed": plain["mixed"],
        "price": 1.5,
        "count": 3,
        "bad": None,
        "path": "/tmp/x",
        "id": "00000000-0000-0000-0000-000000000001",
        "color": "red",
        "point": {"x": 1, "y": None},
        "pair": [1, 2],
        "1": "int key",
        "null": "null key",
        "2.5": "float key",
        "nan": None,
    }
    assert sorted(map(str, plain["mixed"])) == ["1", "a"]
    assert list(plain) == [k if isinstance(k, str) else json.dumps(k) for k in value]  # order kept
    assert codec.dumps(plain)  # and it is plain JSON now


@pytest.mark.parametrize("bad", [b"bytes", bytearray(b"x"), object(), lambda: 1, ValueError("boom")])
def test_extension_values_without_a_json_form_are_refused(bad: Any) -> None:
    with pytest.raises(codec.JsonValueError, match=r"is not JSON at \$\.details\[1\]"):
        codec.to_json({"details": [1, bad]})


def test_extension_values_too_deep_are_refused() -> None:
    assert codec.to_json(nested(codec.MAX_DEPTH)) is not None
    with pytest.raises(codec.JsonValueError, match="nested deeper"):
        codec.to_json(nested(codec.MAX_DEPTH + 1))
