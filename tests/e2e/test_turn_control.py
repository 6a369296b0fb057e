"""Turn control through the real daemon: queued input across replacements and disposal, images,
session statistics, the client's shell, retry control and the reads (the order of delivered input
itself is compared with real Pi in ``tests/pi_compat/test_turn_control_against_pi.py``).

Turns are held open by a faux ``bash`` tool call that sleeps; every event these daemons send is
checked against the published schema by the suite-wide hook (``tests/event_schema.py``)."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, RpcError, events_of
from tests.e2e.projects import read_jsonl
from tests.providers.sse_server import Reply, SseServer, chunk, running_server

IMAGES = Path(__file__).resolve().parents[1] / "fixtures" / "images"
PNG = base64.b64encode((IMAGES / "python.png").read_bytes()).decode()
JPEG = base64.b64encode((IMAGES / "python.jpg").read_bytes()).decode()
BMP = base64.b64encode((IMAGES / "python.bmp").read_bytes()).decode()


def _slow_tool(seconds: float = 3.0, call_id: str = "call_1") -> dict[str, Any]:
    return {"toolCall": {"name": "bash", "arguments": {"command": f"sleep {seconds}; echo done"}, "id": call_id}}


def _start(tmp_path: Path, script: list[dict[str, Any]], *, models: Mapping[str, Any] | None = None,
           settings: Mapping[str, Any] | None = None) -> Daemon:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps({"steps": script, "chunkDelay": 0.002}))
    if models is not None:
        (agent / "models.json").write_text(json.dumps({"providers": models}))
    if settings is not None:
        (agent / "settings.json").write_text(json.dumps(settings))
    daemon = Daemon("--agent-dir", str(agent), "--cwd", str(project), env={"RPCD_FAUX_SCRIPT": str(script_file)})
    daemon.initialize()
    if models is not None:  # a usable models.json model would be the default: start on the scripted one
        daemon.call("setModel", {"provider": "faux", "modelId": "faux-1"})
    return daemon


def _events(d: Daemon, kind: str | None = None) -> list[dict[str, Any]]:
    found = [dict(p["event"]) for p in events_of(list(d.log), "session/event")]
    return [e for e in found if kind is None or e["type"] == kind]


def _wait_event(d: Daemon, kind: str, count: int = 1) -> None:
    d.wait_for(lambda log: len([p for p in events_of(log, "session/event") if p["event"]["type"] == kind]) >= count)


def _messages(path: str) -> list[dict[str, Any]]:
    return [e["message"] for e in read_jsonl(path) if e["type"] == "message"]


def _user_texts(path: str) -> list[str]:
    return ["".join(b.get("text", "") for b in m["content"] if b["type"] == "text")
            for m in _messages(path) if m["role"] == "user"]


def _error(d: Daemon, method: str, params: Any = None) -> RpcError:
    with pytest.raises(RpcError) as info:
        d.call(method, params)
    return info.value


# -- queued input ---------------------------------------------------------------------------------


def test_a_replacement_drops_queued_input_and_reports_it(tmp_path: Path) -> None:
    with _start(tmp_path, [_slow_tool(), {"text": "never asked"}]) as d:
        prompt = d.start("prompt", {"text": "start"})
        _wait_event(d, "tool_execution_start")
        d.call("steer", {"text": "steer me"})
        d.call("followUp", {"text": "then this"})
        d.call("setSteeringMode", {"mode": "all"})
        state = d.call("getState")
        assert state["pendingMessageCount"] == 2 and state["isStreaming"] is True
        assert (state["steeringMode"], state["followUpMode"]) == ("all", "one-at-a-time")
        old_file = state["sessionFile"]
        replaced = d.call("newSession")
        assert replaced["droppedQueue"] == {"steering": ["steer me"], "followUp": ["then this"]}
        assert d.wait(prompt)["result"] == {"stopReason": "aborted"}
        shutdown = [p["event"] for p in events_of(list(d.log), "session/lifecycle")
                    if p["event"]["type"] == "session_shutdown"]
        assert shutdown[-1]["droppedQueue"] == {"steering": ["steer me"], "followUp": ["then this"]}
        old_events = [p["event"] for p in events_of(list(d.log), "session/event") if p["generation"] == 0]
        assert [e for e in old_events if e["type"] == "queue_update"][-1] == {
            "type": "queue_update", "steering": [], "followUp": []}
        fresh = d.call("getState")
        assert fresh["pendingMessageCount"] == 0
        assert fresh["steeringMode"] == "all", "what the setters chose carries over to the replacement"
        assert "droppedQueue" not in d.call("newSession"), "nothing queued, nothing reported"
    assert _user_texts(old_file) == ["start"], "dropped input never reached the old session's file"


def test_disposal_drops_queued_input_and_reports_it_in_session_shutdown(tmp_path: Path) -> None:
    with _start(tmp_path, [_slow_tool(), {"text": "never asked"}]) as d:
        prompt = d.start("prompt", {"text": "start"})
        _wait_event(d, "tool_execution_start")
        d.call("followUp", {"text": "after you"})
        d.call("dispose")
        assert d.wait(prompt)["result"]["stopReason"] == "aborted"
        shutdown = [p["event"] for p in events_of(list(d.log), "session/lifecycle")][-1]
    assert shutdown == {"type": "session_shutdown", "reason": "quit",
                        "droppedQueue": {"steering": [], "followUp": ["after you"]}}


def test_a_prompt_during_a_turn_needs_a_streaming_behavior(tmp_path: Path) -> None:
    with _start(tmp_path, [_slow_tool(1.0), {"text": "r1"}, {"text": "r2"}]) as d:
        prompt = d.start("prompt", {"text": "start"})
        _wait_event(d, "tool_execution_start")
        busy = _error(d, "prompt", {"text": "now"})
        assert busy.code == -32040
        assert d.call("prompt", {"text": "later", "streamingBehavior": "followUp"}) == {"queued": "followUp"}
        assert _error(d, "prompt", {"text": "x", "streamingBehavior": "sideways"}).code == -32602
        assert d.wait(prompt)["result"] == {"stopReason": "stop"}
        file = d.call("getState")["sessionFile"]
    assert _user_texts(file) == ["start", "later"]


# -- images ---------------------------------------------------------------------------------------


def test_images_round_trip_into_the_file_and_the_context(tmp_path: Path) -> None:
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    with _start(tmp_path, [{"text": "a python"}]) as d:
        assert d.call("prompt", {"text": "what is this?", "images": [image]}) == {"stopReason": "stop"}
        messages = d.call("getMessages")["messages"]
        file = d.call("getState")["sessionFile"]
    stored = _messages(file)[0]
    assert stored["content"] == [{"type": "text", "text": "what is this?"}, image]
    assert list(stored) == ["role", "content", "timestamp"]
    assert messages[0]["content"] == stored["content"]


@pytest.mark.parametrize(
    ("image", "path", "says"),
    [
        ({"type": "image", "data": "not base64!", "mimeType": "image/png"}, "$.images[0].data", "not valid base64"),
        ({"type": "image", "data": base64.b64encode(b"plain text").decode(), "mimeType": "image/png"},
         "$.images[0].data", "not a PNG, JPEG, GIF or WebP"),
        ({"type": "image", "data": BMP, "mimeType": "image/bmp"}, "$.images[0].data", "not a PNG, JPEG, GIF or WebP"),
        ({"type": "image", "data": JPEG, "mimeType": "image/png"}, "$.images[0].mimeType", "the data is image/jpeg"),
        ({"type": "image", "data": "", "mimeType": "image/png"}, "$.images[0].data", "not valid base64"),
    ],
)
def test_bad_image_data_is_refused_and_nothing_is_recorded(tmp_path: Path, image: dict[str, Any], path: str,
                                                           says: str) -> None:
    with _start(tmp_path, [{"text": "ok"}]) as d:
        d.call("prompt", {"text": "first"})
        before = d.call("getEntries")
        for method in ("prompt", "steer", "followUp"):
            failure = _error(d, method, {"text": "look", "images": [image]})
            assert failure.code == -32602
            assert failure.data["errors"][0]["path"] == path
            assert says in failure.data["errors"][0]["message"]
        assert d.call("getEntries") == before
        assert d.call("getState")["pendingMessageCount"] == 0
        assert _events(d, "queue_update") == []
        assert d.call("prompt", {"text": "still serving"}) == {"stopReason": "stop"}


@pytest.fixture
def server() -> Iterator[SseServer]:
    with running_server() as srv:
        yield srv


def _local(server: SseServer, **model: Any) -> dict[str, Any]:
    return {"local": {"baseUrl": server.base_url, "api": "openai-completions", "apiKey": "test-key",
                      "models": [{"id": "m", **model}]}}


def _text_reply(text: str, usage: Mapping[str, int] | None = None) -> Reply:
    events = [chunk({"role": "assistant", "content": text}), chunk(finish="stop")]
    if usage is not None:
        events.append(chunk(usage=dict(usage)))
    return Reply(events=[*events, "[DONE]"])


def test_images_reach_a_model_that_takes_them_and_are_refused_for_one_that_does_not(
    server: SseServer, tmp_path: Path
) -> None:
    models = {**_local(server, input=["text", "image"]),
              "textonly": {"baseUrl": server.base_url, "api": "openai-completions", "apiKey": "k",
                           "models": [{"id": "t", "input": ["text"]}]}}
    server.enqueue(_text_reply("a snake"))
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    with _start(tmp_path, [], models=models) as d:
        d.call("setModel", {"provider": "local", "modelId": "m"})
        assert d.call("prompt", {"text": "what is this?", "images": [image]}) == {"stopReason": "stop"}
        d.call("setModel", {"provider": "textonly", "modelId": "t"})
        before = d.call("getEntries")
        refused = _error(d, "prompt", {"text": "and this?", "images": [image]})
        assert refused.code == -32043 and refused.data["errors"][0]["type"] == "InputNotSupported"
        assert "textonly/t does not take images" in refused.message
        assert _error(d, "steer", {"text": "x", "images": [image]}).code == -32043
        assert d.call("getEntries") == before
    assert len(server.requests) == 1
    user = server.requests[0].body["messages"][-1]
    assert user == {"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]}


# -- statistics ------------------------------------------------------------------------------------


def _sum_from_file(path: str) -> dict[str, Any]:
    users = assistants = results = calls = total = 0
    tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for message in _messages(path):
        total += 1
        if message["role"] == "user":
            users += 1
        elif message["role"] == "toolResult":
            results += 1
        elif message["role"] == "assistant":
            assistants += 1
            calls += sum(1 for b in message["content"] if b["type"] == "toolCall")
            for key in tokens:
                tokens[key] += message["usage"][key]
            cost += message["usage"]["cost"]["total"]
    return {"userMessages": users, "assistantMessages": assistants, "toolResults": results, "toolCalls": calls,
            "totalMessages": total, "tokens": {**tokens, "total": sum(tokens.values())}, "cost": cost}


def test_session_stats_equal_the_sums_over_the_file(server: SseServer, tmp_path: Path) -> None:
    models = _local(server, cost={"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
                    contextWindow=10000)
    server.enqueue(
        _text_reply("one", {"prompt_tokens": 1200, "completion_tokens": 50, "total_tokens": 1250}),
        _text_reply("two", {"prompt_tokens": 2400, "completion_tokens": 70, "total_tokens": 2470,
                            "prompt_tokens_details": {"cached_tokens": 1000}}),
    )
    tools = [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo a"}, "id": "c1"},
                            {"name": "bash", "arguments": {"command": "echo b"}, "id": "c2"}]}, {"text": "both ran"}]
    with _start(tmp_path, tools, models=models) as d:
        d.call("prompt", {"text": "run two tools"})
        d.call("setModel", {"provider": "local", "modelId": "m"})
        d.call("prompt", {"text": "first"})
        d.call("prompt", {"text": "second"})
        stats = d.call("getSessionStats")
        state = d.call("getState")
    expected = _sum_from_file(state["sessionFile"])
    assert {k: stats[k] for k in expected if k != "cost"} == {k: v for k, v in expected.items() if k != "cost"}
    assert stats["cost"] == pytest.approx(expected["cost"]) and stats["cost"] > 0
    assert (stats["toolCalls"], stats["toolResults"], stats["userMessages"]) == (2, 2, 3)
    assert stats["sessionId"] == state["sessionId"] and stats["sessionFile"] == state["sessionFile"]
    last = [m for m in _messages(state["sessionFile"]) if m["role"] == "assistant"][-1]["usage"]
    assert stats["contextUsage"]["contextWindow"] == 10000
    assert stats["contextUsage"]["tokens"] == last["totalTokens"]  # nothing after the last reply
    assert stats["contextUsage"]["percent"] == pytest.approx(last["totalTokens"] / 100)


# -- the client's shell -----------------------------------------------------------------------------


def test_bash_runs_in_the_session_cwd_and_is_recorded_as_pi_records_it(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(_text_reply("seen it"))
    with _start(tmp_path, [], models=_local(server)) as d:
        bash_id = d.start("bash", {"command": "pwd; echo oops >&2; exit 3"})
        ran = d.wait(bash_id)["result"]
        assert ran == {"output": f"{tmp_path / 'project'}\noops\n", "exitCode": 3, "cancelled": False,
                       "truncated": False}
        hidden = d.call("bash", {"command": "echo secret-ish", "excludeFromContext": True})
        assert hidden["exitCode"] == 0
        d.call("setModel", {"provider": "local", "modelId": "m"})
        d.call("prompt", {"text": "what did I run?"})
        file = d.call("getState")["sessionFile"]
        updates = _events(d, "bash_execution_update")
    bash_messages = [m for m in _messages(file) if m["role"] == "bashExecution"]
    assert [list(m) for m in bash_messages] == [
        ["role", "command", "output", "exitCode", "cancelled", "truncated", "timestamp"],
        ["role", "command", "output", "exitCode", "cancelled", "truncated", "timestamp", "excludeFromContext"],
    ]
    assert bash_messages[0]["command"] == "pwd; echo oops >&2; exit 3"
    first = [u for u in updates if u["id"] == bash_id]
    assert "".join(u["delta"] for u in first) == ran["output"], "each update names the request that runs it"
    assert all(u["id"] in (bash_id, bash_id + 1) for u in updates)
    sent = server.requests[0].body["messages"]
    # pi-ai's openai-completions sends a user message's content as a string or as text parts
    user_texts = [m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"])
                  for m in sent if m["role"] == "user"]
    assert any(t.startswith("Ran `pwd; echo oops >&2; exit 3`\n```\n") for t in user_texts)
    assert not any("secret-ish" in t for t in user_texts), "excludeFromContext keeps it from the model"


def test_bash_with_a_huge_output_streams_all_of_it_and_truncates_the_result(tmp_path: Path) -> None:
    with _start(tmp_path, []) as d:
        result = d.call("bash", {"command": "seq 1 100000"})
        updates = _events(d, "bash_execution_update")
    full = "".join(f"{n}\n" for n in range(1, 100001))
    assert result["truncated"] is True and result["exitCode"] == 0
    lines = result["output"].split("\n")  # the exact tail is compared with Pi's executor in tests/pi_compat
    assert len(lines) <= 2000 and lines[-1] == "100000" and full.endswith(result["output"] + "\n")
    assert "".join(u["delta"] for u in updates) == full
    assert Path(result["fullOutputPath"]).read_text() == full
    os.unlink(result["fullOutputPath"])


def test_bash_timeout_and_abort_bash_stop_the_command(tmp_path: Path) -> None:
    with _start(tmp_path, []) as d:
        timed_out = d.call("bash", {"command": "echo before; sleep 30; echo after", "timeout": 0.5})
        assert timed_out == {"output": "before\n", "cancelled": True, "truncated": False}
        running = d.start("bash", {"command": "echo go; sleep 30; echo after"})
        d.wait_for(lambda log: any(p["event"].get("id") == running for p in events_of(log, "session/event")))
        assert d.call("abortBash") is None
        aborted = d.wait(running)["result"]
        assert aborted == {"output": "go\n", "cancelled": True, "truncated": False}
        assert d.call("abortBash") is None, "nothing running: a no-op"
        file = d.call("getState")["sessionFile"]
        messages = d.call("getMessages")["messages"]
    assert [m["cancelled"] for m in messages if m["role"] == "bashExecution"] == [True, True]
    assert file is None or not os.path.exists(file), "no assistant yet: nothing on disk (Pi's flush rule)"


def test_bash_during_a_turn_is_recorded_after_the_turn(tmp_path: Path) -> None:
    with _start(tmp_path, [_slow_tool(1.0), {"text": "done"}]) as d:
        prompt = d.start("prompt", {"text": "start"})
        _wait_event(d, "tool_execution_start")
        assert d.call("bash", {"command": "echo side"})["output"] == "side\n"
        d.wait(prompt)
        file = d.call("getState")["sessionFile"]
    assert [m["role"] for m in _messages(file)] == ["user", "assistant", "toolResult", "assistant", "bashExecution"]


# -- retry control ---------------------------------------------------------------------------------


def test_abort_retry_ends_the_wait_and_the_turn_with_the_failure(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(status=503, body=b'{"error": {"message": "overloaded"}}', headers={"Retry-After": "30"}))
    with _start(tmp_path, [], models=_local(server), settings={"retry": {"baseDelayMs": 30000}}) as d:
        d.call("setModel", {"provider": "local", "modelId": "m"})
        prompt = d.start("prompt", {"text": "hello"})
        _wait_event(d, "auto_retry_start")
        assert d.call("abortRetry") is None
        assert d.wait(prompt)["result"] == {"stopReason": "error"}
        starts, ends = _events(d, "auto_retry_start"), _events(d, "auto_retry_end")
        last = d.call("getLastAssistantText")
    assert len(starts) == 1 and ends == [{"type": "auto_retry_end", "success": False, "attempt": 1,
                                          "finalError": "Retry cancelled"}]
    assert last == {"text": None}
    assert len(server.requests) == 1


def test_set_auto_retry_off_fails_at_once_and_carries_over(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(status=503, body=b'{"error": {"message": "overloaded"}}'))
    with _start(tmp_path, [], models=_local(server)) as d:
        assert d.call("getState")["autoRetryEnabled"] is True
        d.call("setAutoRetry", {"enabled": False})
        d.call("newSession")
        assert d.call("getState")["autoRetryEnabled"] is False
        d.call("setModel", {"provider": "local", "modelId": "m"})
        assert d.call("prompt", {"text": "hello"}) == {"stopReason": "error"}
        assert _events(d, "auto_retry_start") == []
        assert d.call("abortRetry") is None, "nothing to cancel: a no-op"
    assert len(server.requests) == 1


# -- reads -----------------------------------------------------------------------------------------


def test_reads_last_assistant_text_fork_messages_and_entries_since_a_cursor(tmp_path: Path) -> None:
    with _start(tmp_path, [{"text": "  first answer  "}, {"text": "second answer"}]) as d:
        assert d.call("getLastAssistantText") == {"text": None}
        d.call("prompt", {"text": "question one"})
        assert d.call("getLastAssistantText") == {"text": "first answer"}
        cursor = d.call("getEntries")["leafId"]
        d.call("prompt", {"text": "question two"})
        later = d.call("getEntries", {"since": cursor})
        assert [e["message"]["role"] for e in later["entries"]] == ["user", "assistant"]
        assert later["leafId"] == later["entries"][-1]["id"]
        everything = d.call("getEntries")
        assert everything["entries"][-2:] == later["entries"]
        assert d.call("getEntries", {"since": everything["leafId"]}) == {"entries": [], "leafId": everything["leafId"]}
        unknown = _error(d, "getEntries", {"since": "no-such-entry"})
        assert unknown.code == -32032 and "no-such-entry" in unknown.message
        forks = d.call("getForkMessages")["messages"]
        assert [m["text"] for m in forks] == ["question one", "question two"]
        forked = d.call("fork", {"entryId": forks[1]["entryId"]})
        assert forked["selectedText"] == "question two"
        assert d.call("getLastAssistantText") == {"text": "first answer"}
        assert [m["text"] for m in d.call("getForkMessages")["messages"]] == ["question one"]
