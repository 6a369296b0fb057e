"""What ``Transport.send_notification`` writes: plain-JSON params (every session event) are encoded
as they are, attrs params (anywhere inside) are unstructured first — byte for byte what the
unstructure-then-encode path wrote, with the codec's JavaScript semantics (NaN -> null, 3.0 -> 3,
lone surrogates escaped, ASCII-only)."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rpcd.core import codec
from rpcd.protocol import types as t
from rpcd.protocol.converter import unstructure
from rpcd.transport import Framer, Transport, encode_json


class ListSink:
    def __init__(self) -> None:
        self.items: list[bytes] = []

    def put(self, data: bytes) -> None:
        self.items.append(data)

    def pending(self) -> tuple[int, int]:
        return 0, 0

    async def wait_below(self, messages: int, nbytes: int) -> None:
        return None


def sent(params: Any) -> bytes:
    sink = ListSink()
    Transport(Framer(), sink).send_notification("session/event", params)
    (line,) = sink.items
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    return line[:-1]


def reference(params: Any) -> bytes:
    """The path every notification took before: cattrs unstructure, then the codec."""
    return encode_json({"jsonrpc": "2.0", "method": "session/event", "params": unstructure(params)})


def test_a_plain_event_keeps_the_codecs_javascript_semantics() -> None:
    event = {"type": "message_update", "usage": {"input": 3.0, "cost": math.nan, "big": math.inf, "tiny": 1e-6},
             "assistantMessageEvent": {"type": "text_delta", "delta": "naïve ✓ \ud800 \u2028 漢字"}, "seq": (1, 2)}
    line = sent({"sessionId": "s", "event": event})
    assert line.isascii()
    assert line == reference({"sessionId": "s", "event": event})
    decoded = codec.loads(line)["params"]["event"]
    assert decoded["usage"] == {"input": 3, "cost": None, "big": None, "tiny": 0.000001}
    assert b'"input":3,' in line and b'"tiny":0.000001' in line
    assert decoded["seq"] == [1, 2]
    assert "\\ud800" in line.decode() and decoded["assistantMessageEvent"]["delta"].startswith("naïve ✓ ")


def test_attrs_params_are_unstructured_camel_case_without_unset_fields() -> None:
    params = t.ProgressParams(token="tok", value=t.ProgressBegin(kind="begin", title="Resuming"))
    line = sent(params)
    assert orjson.loads(line)["params"] == {"token": "tok", "value": {"kind": "begin", "title": "Resuming"}}
    assert line == reference(params)


def test_an_attrs_value_inside_a_dict_is_unstructured_too() -> None:
    params = {"token": 1, "value": t.ProgressBegin(kind="begin", title="x", percentage=5)}
    assert orjson.loads(sent(params))["params"]["value"] == {"kind": "begin", "title": "x", "percentage": 5}
    assert sent(params) == reference(params)


def test_params_with_no_json_form_are_refused() -> None:
    with pytest.raises(TypeError):
        sent({"bad": object()})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_plain_params_are_written_exactly_as_the_unstructure_path_wrote_them(params: dict[str, Any]) -> None:
    line = sent(params)
    assert line == reference(params)
    assert codec.loads(line)["method"] == "session/event"
