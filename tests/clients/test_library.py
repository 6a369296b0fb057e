"""The asyncio library against an in-process scripted peer (faults a real daemon never makes)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import ConnectionClosed, RpcError, RpcTimeout
from tests.clients.fakepeer import INIT_RESULT, FakePeer

pytestmark = pytest.mark.anyio


def replacement(session_id: str, generation: int) -> dict[str, Any]:
    return {"cancelled": False, "sessionId": session_id, "cwd": "/p", "generation": generation}


async def attach(peer: FakePeer, **kwargs: Any) -> RpcdClient:
    return await RpcdClient.attach(peer.source, peer, **kwargs)


def basic(peer: FakePeer, message: dict[str, Any]) -> bool:
    if message.get("method") == "initialize":
        peer.reply(message, INIT_RESULT)
        return True
    if message.get("method") == "shutdown":
        peer.reply(message, None)
        return True
    return message.get("method") in ("exit", "$/cancelRequest")


async def drain_until_marker(stream: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async for item in stream:
        if item["method"] == "test/done":
            return seen
        seen.append(item)
    raise AssertionError("stream ended before the marker")


async def test_events_of_a_replaced_session_are_not_delivered_after_the_replacement_result() -> None:
    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        if message["method"] == "newSession":
            for seq in (1, 2, 3):
                peer.event("s1", 1, seq, "message_update")
            peer.reply(message, replacement("s1", 1))
        elif message["method"] == "fork":
            peer.event("s1", 1, 4, "agent_end")  # queued, unconsumed when the result lands
            peer.send({"method": "session/lifecycle", "params": {"sessionId": "s2", "generation": 2, "seq": 1,
                                                                   "event": {"type": "session_start"}}})
            peer.reply(message, {**replacement("s2", 2), "selectedText": "hi"})
            peer.event("s1", 1, 5, "message_update")  # a buggy late event of the old session
            peer.event("s2", 2, 2, "message_update")
            peer.send({"method": "test/done"})

    peer = FakePeer(script)
    client = await attach(peer)
    stream = client.notifications()
    await client.new_session()
    first = await stream.next()
    assert first is not None and first["params"]["generation"] == 1  # current events do flow
    result = await client.fork("e1")
    assert result["selectedText"] == "hi" and client.generation == 2 and client.session_id == "s2"
    rest = await drain_until_marker(stream)
    generations = [item["params"]["generation"] for item in rest if "generation" in item["params"]]
    assert generations == [2, 2]
    assert stream.dropped_stale == 4  # seq 2, 3, 4 queued before the result, seq 5 after it
    await client.close()


async def test_subscription_pinned_to_a_session_sees_only_that_session() -> None:
    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        peer.event("other", 3, 1, "message_update")
        peer.event("mine", 3, 1, "message_update")
        peer.send({"method": "test/done"})
        peer.reply(message, None)

    peer = FakePeer(script)
    client = await attach(peer)
    stream = client.notifications(session_id="mine")
    await client.call("ping")
    items = await drain_until_marker(stream)
    assert [i["params"]["sessionId"] for i in items] == ["mine"]
    await client.close()


async def test_duplicate_sequence_numbers_are_dropped() -> None:
    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        for seq in (1, 2, 2, 1, 3):
            peer.event("s", 0, seq, "message_update")
        peer.send({"method": "test/done"})
        peer.reply(message, None)

    peer = FakePeer(script)
    client = await attach(peer)
    stream = client.notifications(["session/event", "test/done"])
    await client.call("ping")
    items = await drain_until_marker(stream)
    assert [i["params"]["seq"] for i in items] == [1, 2, 3]
    assert client.duplicates_dropped == 2
    await client.close()


async def test_cancelling_a_call_sends_cancel_request_and_drops_the_late_answer() -> None:
    held: list[dict[str, Any]] = []
    prompted = asyncio.Event()

    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        if message.get("method") == "prompt":
            held.append(message)
            prompted.set()
        elif message.get("method") == "getState":
            peer.reply(message, {"sessionId": "s", "generation": 0})

    peer = FakePeer(script)
    client = await attach(peer)
    task = asyncio.create_task(client.prompt("hello"))
    await prompted.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    cancels = [m for m in peer.received if m.get("method") == "$/cancelRequest"]
    assert cancels == [{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": held[0]["id"]}}]
    peer.reply(held[0], {"stopReason": "stop"})  # late: must not confuse the next call
    state = await client.get_state()
    assert state["sessionId"] == "s"
    await client.close()


async def test_a_request_without_answer_times_out_and_is_cancelled() -> None:
    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        basic(peer, message)  # and never answers anything else

    peer = FakePeer(script)
    client = await attach(peer, request_timeout=0.05)
    with pytest.raises(RpcTimeout) as caught:
        await client.get_tree()
    assert caught.value.method == "getTree"
    assert isinstance(caught.value, TimeoutError)
    sent = [m for m in peer.received if m.get("method") == "$/cancelRequest"]
    assert len(sent) == 1
    await client.close()


async def test_trust_prompt_handler_round_trip() -> None:
    answers: list[dict[str, Any]] = []
    answered = asyncio.Event()
    asked: list[Any] = []

    async def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        if message.get("method") == "newSession":
            peer.send({"id": "trust-1", "method": "host/authorizeProject",
                       "params": {"cwd": "/proj", "reasons": ["AGENTS.md"]}})
            await answered.wait()
            peer.reply(message, replacement("s", 1))
        elif message.get("id") == "trust-1":
            answers.append(message)
            answered.set()

    async def authorize(params: Any) -> dict[str, Any]:
        asked.append(params)
        return {"decision": "trustOnce"}

    peer = FakePeer(script)
    client = await attach(peer, handlers={"host/authorizeProject": authorize})
    init = next(m for m in peer.received if m.get("method") == "initialize")
    assert init["params"]["capabilities"] == {"progress": {}, "authorizeProject": {}}
    await client.new_session()
    assert asked == [{"cwd": "/proj", "reasons": ["AGENTS.md"]}]
    assert answers == [{"jsonrpc": "2.0", "id": "trust-1", "result": {"decision": "trustOnce"}}]
    await client.close()


async def test_unhandled_or_failing_server_requests_are_answered_with_errors() -> None:
    answers: list[dict[str, Any]] = []
    both = asyncio.Event()

    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        if message.get("method") == "ping":
            peer.send({"id": 10, "method": "ui/select", "params": {"title": "t", "options": []}})
            peer.send({"id": 11, "method": "ui/confirm", "params": {"title": "t", "message": "m"}})
            peer.reply(message, None)
        elif "method" not in message:
            answers.append(message)
            if len(answers) == 2:
                both.set()

    def broken(params: Any) -> Any:
        raise RuntimeError("secret detail must not leak")

    peer = FakePeer(script)
    client = await attach(peer, handlers={"ui/confirm": broken})
    await client.ping()
    await both.wait()
    by_id = {a["id"]: a["error"] for a in answers}
    assert by_id[10]["code"] == -32601
    assert by_id[11]["code"] == -32603 and "secret" not in by_id[11]["message"]
    await client.close()


async def test_rpc_error_exposes_the_flat_error_list() -> None:
    data = {"operation": "fork", "phase": "rebind", "target": {"entryId": "e9"}, "terminal": True,
            "errors": [{"type": "ReplacementFailed", "message": "factory failed", "code": "X"},
                       {"type": "CleanupFailed", "message": "dispose failed"}]}

    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if not basic(peer, message):
            peer.send({"id": message["id"], "error": {"code": -32022, "message": "replacement failed", "data": data}})

    peer = FakePeer(script)
    client = await attach(peer)
    with pytest.raises(RpcError) as caught:
        await client.fork("e9")
    error = caught.value
    assert (error.code, error.name, error.method, error.terminal) == (-32022, "REPLACEMENT_FAILED", "fork", True)
    assert [e["type"] for e in error.errors] == ["ReplacementFailed", "CleanupFailed"]
    text = error.describe()
    assert "1. [primary] ReplacementFailed (X): factory failed" in text
    assert "2. [cleanup] CleanupFailed: dispose failed" in text
    assert "terminal" in text
    await client.close()


async def test_losing_the_peer_fails_pending_requests_and_ends_streams() -> None:
    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if not basic(peer, message) and message.get("method") == "prompt":
            peer.source.feed_eof()

    peer = FakePeer(script)
    client = await attach(peer)
    stream = client.notifications()
    with pytest.raises(ConnectionClosed):
        await client.prompt("x")
    assert [item async for item in stream] == []
    with pytest.raises(ConnectionClosed):
        await client.get_state()
    await client.close()


async def test_progress_reports_reach_the_callback_of_their_request() -> None:
    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        token = message["params"]["workDoneToken"]
        peer.send({"method": "$/progress", "params": {"token": token, "value": {"kind": "begin", "title": "import"}}})
        peer.send({"method": "$/progress", "params": {"token": "someone-else", "value": {"kind": "begin"}}})
        peer.send({"method": "$/progress", "params": {"token": token, "value": {"kind": "end"}}})
        peer.reply(message, replacement("s", 4))

    seen: list[dict[str, Any]] = []
    peer = FakePeer(script)
    client = await attach(peer)
    await client.import_jsonl("/x.jsonl", progress=seen.append)
    assert [v["kind"] for v in seen] == ["begin", "end"]
    assert client.generation == 4
    await client.close()


async def test_a_server_request_withdrawn_by_the_daemon_cancels_its_handler() -> None:
    answers: list[dict[str, Any]] = []
    answered = asyncio.Event()
    handler_started = asyncio.Event()
    handler_cancelled = asyncio.Event()

    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        if message.get("method") == "ping":
            peer.send({"id": 7, "method": "host/authorizeProject", "params": {"cwd": "/p", "reasons": []}})
            peer.reply(message, None)
        elif message.get("id") == 7:
            answers.append(message)
            answered.set()

    async def never_answers(params: Any) -> dict[str, Any]:
        handler_started.set()
        try:
            await asyncio.Event().wait()
        finally:
            handler_cancelled.set()
        raise AssertionError("unreachable")

    peer = FakePeer(script)
    client = await attach(peer, handlers={"host/authorizeProject": never_answers})
    await client.ping()
    await handler_started.wait()
    peer.send({"method": "$/cancelRequest", "params": {"id": 7}})
    await handler_cancelled.wait()
    await answered.wait()
    assert answers[0]["error"]["code"] == -32800
    await client.close()


async def test_a_failing_listener_or_malformed_event_does_not_stop_answers_from_arriving() -> None:
    def script(peer: FakePeer, message: dict[str, Any]) -> None:
        if basic(peer, message):
            return
        if message["method"] == "newSession":
            peer.send({"method": "session/event", "params": ["not", "an", "object"]})
            peer.event("s1", 1, 1, "message_update")
            peer.reply(message, replacement("s1", 1))

    peer = FakePeer(script)
    client = await attach(peer)
    seen: list[str] = []

    def broken(method: str, params: Any) -> None:
        raise KeyError("listener bug")

    client.on_notification(broken)
    client.on_notification(lambda method, params: seen.append(method))
    pinned = client.notifications(session_id="s1")
    everything = client.notifications()

    result = await client.new_session(timeout=5.0)

    assert result["sessionId"] == "s1"
    assert seen == ["session/event", "session/event"]
    first = await pinned.next(timeout=5.0)
    assert first is not None and first["params"]["seq"] == 1
    malformed = await everything.next(timeout=5.0)
    assert malformed is not None and malformed["params"] == ["not", "an", "object"]
    await client.close()
