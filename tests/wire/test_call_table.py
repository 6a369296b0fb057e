"""One call table (issue 28 item 2): which door of the host each client request takes is a column of
the protocol's method table; the host offers one generic call through the session doors; a plain
session call (``session`` in its row) needs no handler; and the fronts take the table's doors — the
JSON-RPC front here, the ACP front in ``tests/acp/test_call_doors.py``."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, get_args, get_origin

import attrs
import pytest

from rpcd.daemon.app import Daemon as App
from rpcd.daemon.options import parse_options
from rpcd.host.host import CallDoor, SerializedHost
from rpcd.host.port import SessionPort
from rpcd.protocol.methods import SESSION_DOORS, Door, client_requests, door_of, session_door
from rpcd.protocol.names import GET_STATE, NEW_SESSION, PROMPT, SET_MODEL, SET_SESSION_NAME, ErrorCode
from rpcd.wire.calls import as_result
from tests.wire.pair import Pair


def test_every_client_request_names_its_door_and_the_host_call_takes_the_session_doors() -> None:
    assert {spec.name for spec in client_requests() if spec.door is None} == set()
    assert {spec.door for spec in client_requests()} <= set(typing.get_args(Door))
    assert set(typing.get_args(CallDoor)) == SESSION_DOORS
    assert (door_of(SET_MODEL), door_of(PROMPT), door_of(GET_STATE), door_of(NEW_SESSION)) == (
        "queue", "outside", "probe", "replace")
    with pytest.raises(LookupError):
        session_door(NEW_SESSION)  # a replacement is the host's own operation, not a session call


def test_a_plain_session_call_names_a_member_of_the_session_port() -> None:
    plain = [spec for spec in client_requests() if spec.session is not None]
    assert SET_SESSION_NAME in {spec.name for spec in plain}
    for spec in plain:
        assert spec.door == "queue", spec.name
        assert callable(getattr(SessionPort, spec.session or "")), spec.name


def test_a_session_value_becomes_its_result_field_by_field() -> None:
    from rpcd.core.values import ContextUsage, ForkMessage, QueueSnapshot, SessionStats, TokenTotals
    from rpcd.protocol import results as r
    from rpcd.protocol import types as t

    assert as_result(QueueSnapshot(("a",), ("b", "c")), t.QueueContents) == t.QueueContents(["a"], ["b", "c"])
    assert as_result("hi", r.LastAssistantTextResult) == r.LastAssistantTextResult(text="hi")
    assert as_result(None, r.LastAssistantTextResult) == r.LastAssistantTextResult(text=None)
    assert as_result([ForkMessage("e1", "first")], r.ForkMessagesResult) == r.ForkMessagesResult(
        messages=[r.ForkMessage(entry_id="e1", text="first")])
    stats = SessionStats("s", "/f.jsonl", 1, 1, 0, 0, 2, TokenTotals(3, 4, 5, 6), 0.5, ContextUsage(1000, 12, 1.2))
    assert as_result(stats, r.SessionStatsResult) == r.SessionStatsResult(
        session_id="s", session_file="/f.jsonl", user_messages=1, assistant_messages=1, tool_calls=0, tool_results=0,
        total_messages=2, tokens=r.TokenStats(input=3, output=4, cache_read=5, cache_write=6, total=18), cost=0.5,
        context_usage=r.ContextUsage(context_window=1000, tokens=12, percent=1.2))
    assert as_result("anything", None) is None


@pytest.mark.anyio
async def test_the_json_rpc_front_calls_the_host_through_the_tables_door(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session call the JSON-RPC front makes, by a handler of its own or the generic one, names
    the table's door for its method."""
    seen: list[tuple[str, str]] = []
    real = SerializedHost.call

    def spy(self: SerializedHost, operation: str, act: Any, door: CallDoor = "queue", **kw: Any) -> Any:
        seen.append((operation, door))
        return real(self, operation, act, door, **kw)

    monkeypatch.setattr(SerializedHost, "call", spy)
    daemon = App(parse_options(["--in-memory", "--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)]))

    async def serve(server: Any, source: Any, sink: Any) -> int:
        return await daemon.run(lambda s: s.serve(source, sink))

    async with Pair(daemon.server, serve=serve) as pair:
        await pair.initialize()
        for method, params in (("setSessionName", {"name": "table"}), ("getSessionStats", None),
                               ("prompt", {"text": "hello"}), ("getMessages", None), ("clearQueue", None),
                               ("getAvailableThinkingLevels", None), ("getLastAssistantText", None)):
            assert "result" in await pair.reply(method, params), method
    assert [name for name, _ in seen] == ["setSessionName", "getSessionStats", "prompt", "getMessages", "clearQueue",
                                         "getAvailableThinkingLevels", "getLastAssistantText"]
    assert all(door == door_of(name) for name, door in seen), seen


_REPLACEMENTS = ("new_session", "resume", "fork", "clone", "import_jsonl", "reload")


def _example(hint: Any, field: str, tmp_path: Path) -> Any:
    """A value of ``hint`` for a required params field: paths under ``tmp_path``, a harmless command."""
    if get_origin(hint) is typing.Literal:
        return get_args(hint)[0]
    if hint is bool:
        return False
    if hint is int:
        return 1
    if field in ("session_file", "session_path", "output_path", "path", "directory"):
        return str(tmp_path / f"no-such-{field}.jsonl")
    return {"command": "true", "text": "hello"}.get(field, "x")


def _params(spec: Any, tmp_path: Path) -> Any:
    """The smallest valid params of a request (its required fields), on the wire."""
    from rpcd.protocol.converter import unstructure
    from rpcd.protocol.types import EmptyParams

    shape = spec.params
    if shape is None or shape is EmptyParams:
        return None
    hints = typing.get_type_hints(shape)
    required = {f.name: _example(hints[f.name], f.name, tmp_path)
                for f in attrs.fields(shape) if f.default is attrs.NOTHING}
    return unstructure(shape(**required))


@pytest.mark.anyio
async def test_every_request_reaches_the_host_through_its_rows_door(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each client request of the table, sent with its smallest valid params, is dispatched as its row
    says: a ``queue``/``outside`` row by the host's one generic call with its own name and door and no
    other place in the FIFO, a ``replace`` row by one replacement, ``probe`` and ``process`` rows never
    into the FIFO. A row whose door disagrees with how the JSON-RPC front dispatches it fails here (the
    ACP front's calls: ``tests/acp/test_call_doors.py``)."""
    seen: list[tuple[str, ...]] = []
    real_call, real_submit = SerializedHost.call, SerializedHost._submit

    def call(self: SerializedHost, operation: str, act: Any, door: CallDoor = "queue", **kw: Any) -> Any:
        seen.append(("call", operation, door))
        return real_call(self, operation, act, door, **kw)

    def submit(self: SerializedHost, operation: str, *a: Any, **kw: Any) -> Any:
        seen.append(("fifo",))
        return real_submit(self, operation, *a, **kw)

    monkeypatch.setattr(SerializedHost, "call", call)
    monkeypatch.setattr(SerializedHost, "_submit", submit)
    def spy_replacement(real: Any) -> Any:
        def replacement(self: SerializedHost, *a: Any, **kw: Any) -> Any:
            seen.append(("replace",))
            return real(self, *a, **kw)

        return replacement

    for name in _REPLACEMENTS:
        monkeypatch.setattr(SerializedHost, name, spy_replacement(getattr(SerializedHost, name)))
    daemon = App(parse_options(["--in-memory", "--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)]))

    async def serve(server: Any, source: Any, sink: Any) -> int:
        return await daemon.run(lambda s: s.serve(source, sink))

    expected = {"queue": [("call", "{name}", "queue"), ("fifo",)],
                "outside": [("call", "{name}", "outside"), ("fifo",)],
                "replace": [("replace",), ("fifo",)], "probe": [], "process": []}
    wrong: dict[str, Any] = {}
    answers: dict[str, object] = {}
    async with Pair(daemon.server, serve=serve) as pair:
        await pair.initialize()
        for spec in client_requests():
            if spec.door == "server" or spec.door is None:
                continue
            seen.clear()
            reply = await pair.reply(spec.name, _params(spec, tmp_path))
            answers[spec.name] = reply.get("error", {}).get("code", "result")
            want = [tuple(part.format(name=spec.name) for part in step) for step in expected[spec.door]]
            if seen != want:
                wrong[spec.name] = (spec.door, list(seen))
    assert wrong == {}
    # a domain error is fine (the call was made: no such file, no such entry), a bug's answer is not
    assert {name for name, code in answers.items() if code == ErrorCode.INTERNAL_ERROR} == set()
