"""The event contract: every session event is typed in ``protocol/events.py`` and published in the
OpenRPC document as a union discriminated on ``type``; the suite-wide hook (``tests/conftest.py``)
checks every event a test's daemons send against it. Here: the check itself catches what it must,
the document lists every type, and one daemon run that produces nearly every kind of event
passes it."""

from __future__ import annotations

import copy
import json
import typing
from pathlib import Path
from typing import Any

import attrs

from rpcd.protocol import events as ev
from rpcd.protocol._fields import camel
from rpcd.protocol.openrpc import build_document
from tests.driver import Daemon, events_of
from tests.event_schema import checked_types, notification_problems, problems_in, schema_problems
from tests.providers.sse_server import Reply, chunk, running_server


def _event_type(cls: type[Any]) -> str:
    (value,) = typing.get_args(typing.get_type_hints(cls)["type"])
    return str(value)


def _notification(event: dict[str, Any], method: str = "session/event") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": {"sessionId": "s", "generation": 0, "seq": 1,
                                                            "event": event}}


ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "hi", "textSignature": "kept"}],
             "api": "faux", "provider": "faux", "model": "faux-1", "stopReason": "stop", "timestamp": 1,
             "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}


def test_the_document_publishes_every_session_event_as_a_discriminated_union() -> None:
    document = build_document()
    assert json.loads(Path("protocol/openrpc.json").read_text()) == document
    event = document["components"]["schemas"]["SessionEventParams"]["properties"]["event"]
    members = typing.get_args(ev.SessionEvent)
    assert event["discriminator"]["propertyName"] == "type"
    assert event["discriminator"]["mapping"] == {
        _event_type(cls): f"#/components/schemas/{cls.__name__}" for cls in members
    }
    for cls in members:
        schema = document["components"]["schemas"][cls.__name__]
        assert schema["additionalProperties"] is False, f"{cls.__name__}: event envelopes are closed"
        assert set(schema["properties"]) == {camel(f.name) for f in attrs.fields(cls)}
    lifecycle = document["components"]["schemas"]["SessionLifecycleParams"]["properties"]["event"]
    assert set(lifecycle["discriminator"]["mapping"]) == {"session_start", "session_shutdown"}
    # documented field by field: every field of an event with a docstring carries it
    assert document["components"]["schemas"]["QueueUpdateEvent"]["properties"]["steering"]["description"]


def test_the_check_accepts_pi_shapes_and_catches_what_breaks_them() -> None:
    good = _notification({"type": "message_end", "message": ASSISTANT})
    assert notification_problems(good) == []
    broken = {
        "unknown type": {"type": "message_finished", "message": ASSISTANT},
        "extra key on an envelope": {"type": "queue_update", "steering": [], "followUp": [], "x": 1},
        "missing field": {"type": "queue_update", "steering": []},
        "wrong element type": {"type": "queue_update", "steering": [1], "followUp": []},
        "message without its role": {"type": "message_start", "message": {"content": "x", "timestamp": 1}},
        "content block without mimeType": {"type": "message_start", "message": {
            "role": "user", "content": [{"type": "image", "data": "AAAA"}], "timestamp": 1}},
        "usage with a string count": {"type": "message_end", "message": {**ASSISTANT, "usage": {
            **ASSISTANT["usage"], "input": "1"}}},
        "bool where an integer goes": {"type": "auto_retry_end", "success": True, "attempt": True},
    }
    for name, event in broken.items():
        assert notification_problems(_notification(event)), name
    assert notification_problems(_notification({"type": "session_start", "reason": "new"}, "session/lifecycle")) == []
    assert notification_problems(_notification({"type": "session_shutdown", "reason": "later"}, "session/lifecycle"))
    assert schema_problems(1, {"type": "integer", "minimum": 0}), "an unsupported keyword is an error, not a pass"


def test_compaction_events_in_pis_shapes_match_their_schema() -> None:
    """Compaction (issue 17) emits these; their shapes are already the contract."""
    result = {"summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 150000, "estimatedTokensAfter": 32000,
              "usage": ASSISTANT["usage"], "details": {}}
    events = [
        {"type": "compaction_start", "reason": "threshold"},
        {"type": "compaction_end", "reason": "threshold", "result": result, "aborted": False, "willRetry": False},
        {"type": "compaction_end", "reason": "overflow", "aborted": True, "willRetry": False},
        {"type": "compaction_end", "reason": "manual", "aborted": False, "willRetry": False,
         "errorMessage": "Compaction failed: quota"},
        {"type": "summarization_retry_scheduled", "attempt": 1, "maxAttempts": 3, "delayMs": 2000,
         "errorMessage": "terminated"},
        {"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "threshold"},
        {"type": "summarization_retry_attempt_start", "source": "branchSummary"},
        {"type": "summarization_retry_finished"},
    ]
    assert problems_in(_notification(e) for e in events) == []
    bad = copy.deepcopy(events[1])
    bad["reason"] = "bored"
    assert notification_problems(_notification(bad))


EXTENSION = '''
def register(pi):
    def on_turn(event, ctx):
        ctx.append_entry("tag", {"n": 1})

    def on_end(event, ctx):
        raise RuntimeError("a handler that fails")

    pi.on("turn_end", on_turn)
    pi.on("agent_end", on_end)
'''


def test_a_run_producing_nearly_every_event_kind_matches_the_schema(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    (agent / "extensions").mkdir(parents=True)
    project.mkdir()
    (agent / "extensions" / "tagger.py").write_text(EXTENSION)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"chunkDelay": 0.002, "steps": [
        {"thinking": "let me see", "text": "calling", "toolCall": {
            "name": "bash", "arguments": {"command": "sleep 1; echo done"}, "id": "c1"}},
        {"text": "after steer"},
        {"text": "after follow-up"},
    ]}))
    with running_server() as server:
        server.enqueue(Reply(status=503, body=b'{"error": {"message": "busy"}}', headers={"Retry-After": "0"}),
                       Reply(events=[chunk({"role": "assistant", "content": "retried"}), chunk(finish="stop"),
                                     "[DONE]"]))
        (agent / "models.json").write_text(json.dumps({"providers": {"local": {
            "baseUrl": server.base_url, "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "r", "reasoning": True}]}}}))
        with Daemon("--agent-dir", str(agent), "--cwd", str(project), env={"RPCD_FAUX_SCRIPT": str(script)}) as d:
            d.initialize()
            d.call("setModel", {"provider": "faux", "modelId": "faux-1"})
            prompt = d.start("prompt", {"text": "go"})
            d.wait_for(lambda log: any(p["event"]["type"] == "tool_execution_start"
                                       for p in events_of(log, "session/event")))
            d.call("steer", {"text": "steer"})
            d.call("followUp", {"text": "follow"})
            d.wait(prompt)
            d.call("bash", {"command": "echo from the client"})
            d.call("setSessionName", {"name": "contract"})
            d.call("setModel", {"provider": "local", "modelId": "r"})
            d.call("setThinkingLevel", {"level": "high"})
            assert d.call("prompt", {"text": "retry me"}) == {"stopReason": "stop"}
            d.call("newSession")
            log = list(d.log)
    seen = checked_types(log)
    expected = {
        "agent_start", "agent_end", "agent_settled", "turn_start", "turn_end", "message_start", "message_update",
        "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end", "queue_update",
        "auto_retry_start", "auto_retry_end", "bash_execution_update", "session_info_changed",
        "thinking_level_changed", "entry_appended", "extension_error", "session_start", "session_shutdown",
    }
    assert expected <= seen, f"not produced: {sorted(expected - seen)}"
    assert problems_in(log) == []
