"""A line that is not JSON is answered with ``JSON.parse``'s own words (``rpcd.pirpc.json_errors``):
held against Node 22's ``JSON.parse`` (the oracle's Node, the one Pi runs on) on a corpus of the
ways a line goes wrong and on lines hypothesis builds from JSON's own characters, cut and spliced
valid JSON, long lines (V8's context window) and characters beyond ASCII (UTF-16 positions)."""

from __future__ import annotations

import json
import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core import codec
from rpcd.pirpc.json_errors import parse_error_message
from tests.pi_compat.oracle import PiOracle

CORPUS = ["", " ", "\t\r", "abc", "{", '{"a":1,}', "[1,2", '"abc', '{"a" 1}', "1 2", "-", "-a", "1.", "1e", "1E+", "01",
          "0x", "1.5.3", '"\\u12"', '"\\q"', '"\\', '"\\€"', '"\\é"', '"a\tb"', "tru", "trux", "nul", "fals", "[1,]",
          '{"a":}', "undefined", "NaN", "Infinity", "[object Object]", "x" * 40, '{"type":"get_state"}xyz', "€", "😀",
          "[[[[[x", '{"a":1 "b":2}', '{"a":1,"b"}', "\r\r\nx", '"\ud800"x', "{'a':1}", "[1,2]]", "{}}", "\u2028"]
_PIECES = [*'{}[]:," \\\t\r\n-+.eE0123456789tfnrulsxuq', "é", "€", "😀", "\u2028", "\x01", "\x7f"]
_VALID = ['{"a": [1, 2.5, -3e4, true, false, null, "s\\n\\u00e9"]}', "[]", "{}", '  "x" ',
          '{"type":"get_state","id":7}']


def _node_messages(oracle: PiOracle, lines: list[str]) -> list[str | None]:
    script = ("let s='';process.stdin.setEncoding('utf8');process.stdin.on('data',d=>s+=d);process.stdin.on('end',()=>"
              "process.stdout.write(JSON.stringify(JSON.parse(s).map(t=>{try{JSON.parse(t);return null}"
              "catch(e){return e.message}}))))")
    done = subprocess.run([str(oracle.node), "-e", script], input=json.dumps(lines).encode(), capture_output=True,
                          timeout=120, check=True)
    messages: list[str | None] = json.loads(done.stdout)
    return messages


def _check(oracle: PiOracle, lines: list[str]) -> None:
    for line, expected in zip(lines, _node_messages(oracle, lines), strict=True):
        refused = False
        try:
            codec.loads(line)
        except codec.JsonDecodeError:
            refused = True
        assert refused == (expected is not None), f"JSON.parse and rpcd disagree on whether {line!r} is JSON"
        if expected is not None:
            assert parse_error_message(line) == expected, line


def test_the_corpus_is_refused_in_node_words(pi_oracle: PiOracle) -> None:
    _check(pi_oracle, CORPUS)


_spliced = st.builds(lambda base, at, cut, extra: base[:at] + extra + base[at + cut:],
                     st.sampled_from(_VALID), st.integers(0, 60), st.integers(0, 3),
                     st.text(st.sampled_from(_PIECES), max_size=3))
_line = st.one_of(st.text(st.sampled_from(_PIECES), max_size=14), _spliced,
                  st.builds(lambda a, b: a + b, st.text(st.just("y"), min_size=12, max_size=30), _spliced),
                  st.builds(lambda a, b: a + b, _spliced, st.text(st.just("y"), min_size=12, max_size=30)))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(_line, min_size=200, max_size=400))
def test_generated_lines_are_refused_in_node_words(pi_oracle: PiOracle, lines: list[str]) -> None:
    _check(pi_oracle, lines)
