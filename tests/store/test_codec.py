"""``codec.dumps`` writes what ``JSON.stringify`` writes (expected bytes taken from Node 22);
``tests/pi_compat/test_json_like_javascript.py`` checks random values against Node itself."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rpcd.core import codec as core_codec
from rpcd.store import codec

# (value, JSON.stringify(value) in Node 22)
NODE_NUMBERS = [
    (1.0, b"1"),
    (0.0, b"0"),
    (-0.0, b"0"),
    (3.0, b"3"),
    (100000.0, b"100000"),
    (2.0**53, b"9007199254740992"),
    (1e16, b"10000000000000000"),
    (1.2345678901234568e20, b"123456789012345680000"),
    (1e21, b"1e+21"),
    (1.5e300, b"1.5e+300"),
    (0.1 + 0.2, b"0.30000000000000004"),
    (123.456, b"123.456"),
    (0.000001, b"0.000001"),
    (0.000123, b"0.000123"),
    (5.483384671224365e-6, b"0.000005483384671224365"),
    (1e-7, b"1e-7"),
    (-2.5e-8, b"-2.5e-8"),
    (5e-324, b"5e-324"),
    (math.nan, b"null"),
    (math.inf, b"null"),
]


@pytest.mark.parametrize(("value", "expected"), NODE_NUMBERS)
def test_numbers_are_written_as_javascript_writes_them(value: float, expected: bytes) -> None:
    assert codec.dumps(value) == expected
    assert codec.dumps({"cost": {"total": value}}) == b'{"cost":{"total":' + expected + b"}}"


def test_a_lone_surrogate_is_escaped_as_javascript_escapes_it() -> None:
    assert codec.dumps("a\ud800b") == b'"a\\ud800b"'
    assert codec.dumps({"k\udc00": ["x\udbff", 1.0]}) == b'{"k\\udc00":["x\\udbff",1]}'
    assert codec.loads(codec.dumps("a\ud800b")) == "a\ud800b"


def test_integers_beyond_64_bits_keep_their_digits() -> None:
    assert codec.dumps([2**70, -(2**64)]) == b"[1180591620717411303424,-18446744073709551616]"


def test_text_is_compact_utf8_without_slash_escapes() -> None:
    assert codec.dumps({"a": "naïve / \u2028 \x1f", "b": [True, None]}) == (
        '{"a":"naïve / \u2028 \\u001f","b":[true,null]}'.encode()
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


def same_value(written: object, read: object) -> bool:
    """Equal as JavaScript sees it: a float may come back as an integer of the same value."""
    if isinstance(written, int) and not isinstance(written, bool) and not -(2**63) <= written < 2**64:
        return isinstance(read, float) and read == float(written)  # JSON.parse: a double
    if isinstance(written, float):
        return isinstance(read, int | float) and not isinstance(read, bool) and float(read) == written
    if isinstance(written, list):
        return isinstance(read, list) and len(read) == len(written) and all(map(same_value, written, read))
    if isinstance(written, dict):
        return (
            isinstance(read, dict)
            and list(read) == list(written)
            and all(same_value(written[key], read[key]) for key in written)
        )
    return type(read) is type(written) and read == written


@given(json_values)
def test_what_we_write_reads_back_as_the_same_value(value: object) -> None:
    assert same_value(value, codec.loads(codec.dumps(value)))


@given(json_values)
def test_writing_never_changes_the_value_and_matches_the_reference_writer(value: object) -> None:
    """The fast path copies only the containers on the way to a float orjson writes otherwise: the
    value handed in stays as it was, and the bytes are the iterative (reference) writer's."""
    before = copy.deepcopy(value)
    written = codec.dumps(value)
    assert value == before
    assert written == core_codec._dumps_iterative(value)


def test_a_message_with_zero_costs_keeps_its_objects_and_writes_them_as_javascript_does() -> None:
    usage = {"input": 10, "cost": {"input": 0.0, "output": 1.5e-05, "total": 3.0}}
    message = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "usage": usage}
    prepared = core_codec._prepare(message, 0)
    assert prepared is not message and prepared["content"] is message["content"]  # the text is not copied
    assert message["usage"]["cost"]["input"] == 0.0 and type(message["usage"]["cost"]["input"]) is float
    assert codec.dumps(message) == (b'{"role":"assistant","content":[{"type":"text","text":"hi"}],'
                                    b'"usage":{"input":10,"cost":{"input":0,"output":0.000015,"total":3}}}')
    plain = {"content": [{"type": "text", "text": "hi"}], "cost": 0.25}
    assert core_codec._prepare(plain, 0) is plain
