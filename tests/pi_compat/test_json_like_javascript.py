"""Our JSON writer against Node's own ``JSON.stringify`` (the Node that runs the Pi oracle).

A session line we write must be byte-for-byte the line Pi writes for the same value:
numbers (``3.0`` -> ``3``, ``1e-6`` -> ``0.000001``), escapes, lone surrogates. Values go to
Node as ASCII JSON (floats as their shortest repr, which Node parses to the same double),
Node answers ``JSON.stringify(JSON.parse(line))`` per line.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.store import codec
from tests.pi_compat.oracle import PiOracle

pytestmark = pytest.mark.node

LONG = os.environ.get("RPCD_LONG") == "1"
STRINGIFY = (
    "const lines = require('fs').readFileSync(0, 'utf8').split('\\n').filter(Boolean);"
    "process.stdout.write(lines.map((l) => JSON.stringify(JSON.parse(l))).join('\\n'));"
)

# Keys: JavaScript orders integer-like keys first in any object; Pi's entries have none.
keys = st.text(st.characters(categories=["L", "P", "Zs"]), max_size=5).filter(lambda k: not k.isdigit())
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)  # exact in a double, so Node holds the same value
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=-1e22, max_value=1e22).map(float.__floor__).map(float)  # integral doubles
    | st.text(st.characters(codec=None)),  # control characters, U+2028, lone surrogates, ...
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=10,
)


def node_stringify(oracle: PiOracle, batch: list[object]) -> list[bytes]:
    request = "\n".join(json.dumps(value, ensure_ascii=True) for value in batch) + "\n"
    done = subprocess.run(
        [str(oracle.node), "-e", STRINGIFY], input=request.encode(), capture_output=True, timeout=120, check=True
    )
    return done.stdout.split(b"\n")


@settings(max_examples=40 if LONG else 6, deadline=None, suppress_health_check=[HealthCheck.data_too_large])
@given(batch=st.lists(values, min_size=1, max_size=150))
def test_we_write_json_as_node_stringifies_it(pi_oracle: PiOracle, batch: list[object]) -> None:
    expected = node_stringify(pi_oracle, batch)
    assert len(expected) == len(batch)
    for value, theirs in zip(batch, expected, strict=True):
        assert codec.dumps(value) == theirs, value


def node_roundtrip(oracle: PiOracle, lines: list[bytes]) -> list[bytes]:
    """``JSON.stringify(JSON.parse(line))`` for raw JSON lines (no Python encoding in between)."""
    done = subprocess.run(
        [str(oracle.node), "-e", STRINGIFY], input=b"\n".join(lines) + b"\n", capture_output=True, timeout=120,
        check=True,
    )
    return done.stdout.split(b"\n")


def test_numbers_too_large_for_a_double_read_and_write_as_in_node(pi_oracle: PiOracle) -> None:
    """``1e999`` parses to Infinity in JavaScript and is written back as ``null``: so do we."""
    lines = [b'{"usage":{"cost":1e999,"total":-1E400,"ok":1.5}}', b"[1e308,1e309,-0.0,5e-324,1e-400]"]
    for line, theirs in zip(lines, node_roundtrip(pi_oracle, lines), strict=True):
        assert codec.dumps(codec.loads(line)) == theirs


def test_deep_values_read_and_write_as_in_node(pi_oracle: PiOracle) -> None:
    """Nesting Node's JSON.stringify still writes (it recurses; ~4,000 levels): byte-identical."""
    lines = [
        b'{"a":' * 300 + b"1.0" + b"}" * 300,
        b"[" * 1200 + b"2.50" + b"]" * 1200,
        b'[{"x":' * 1800 + b'"y"' + b"}]" * 1800,
    ]
    for line, theirs in zip(lines, node_roundtrip(pi_oracle, lines), strict=True):
        assert codec.dumps(codec.loads(line)) == theirs
