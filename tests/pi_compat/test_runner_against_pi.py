"""How the results of several extensions' handlers combine, against Pi 0.85.0's own
``ExtensionRunner`` (``runner_combination.mjs`` runs it in Node): the same scripted handlers (results,
raises, in-place changes) in the same load order give the same combined result, the same events seen
by each handler in the same order (``ctx.get_system_prompt()`` too, in ``before_agent_start``) and the
same errors, for every event whose results Pi combines. Hypothesis writes the scripts (150 per run, 3,000
with ``RPCD_LONG=1``); one Node process answers them all.

The runner under test is rpcd's (``rpcd.runtime.extensions.runner``) over plain ``Extension`` records:
the same records a Node host fills for TypeScript extensions, so what is proved here holds across runners.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.values import ExtensionBindings
from rpcd.runtime.extensions.registry import Extension
from rpcd.runtime.extensions.runner import ExtensionRunner
from tests.pi_compat.oracle import PiOracle

SCRIPT = Path(__file__).resolve().with_name("runner_combination.mjs")


class NodeRunner:
    def __init__(self, oracle: PiOracle) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RPCD_PI_ORACLE_DIR": str(oracle.root),
               "HOME": os.environ.get("HOME", "/tmp"), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
        self.proc = subprocess.Popen([str(oracle.node), str(SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True)

    def run(self, scenario: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(scenario) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "Pi's runner script ended"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def pi_runner(pi_oracle: PiOracle) -> Iterator[NodeRunner]:
    runner = NodeRunner(pi_oracle)
    yield runner
    runner.close()


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


async def _ours(scenario: dict[str, Any]) -> dict[str, Any]:
    seen: list[list[Any]] = []
    errors: list[list[Any]] = []
    runner = ExtensionRunner("/project", "/agent")
    runner.bindings = ExtensionBindings(on_error=lambda e: errors.append([e.extension_path, e.event, e.error]))
    event_type = scenario["event"]
    for e, spec in enumerate(scenario["extensions"]):
        extension = Extension(path=spec["path"], source_info={})
        for i, handler in enumerate(spec["handlers"]):
            async def run(event: dict[str, Any], ctx: Any, e: int = e, i: int = i, h: dict[str, Any] = handler) -> Any:
                record: list[Any] = [e, i, _plain({k: v for k, v in event.items() if k != "signal"})]
                if event_type == "before_agent_start":
                    record.append(ctx.get_system_prompt())
                seen.append(record)
                target = event.get("headers") if "headers" in event else event.get("input")
                for key, value in (h.get("set") or {}).items():
                    target[key] = value
                if h.get("throw") is not None:
                    raise RuntimeError(h["throw"])
                return copy.deepcopy(h.get("result"))

            extension.on(event_type, run)
        runner.add(extension)
    a = copy.deepcopy(scenario["args"])
    result: Any
    if event_type == "input":
        result = await runner.emit_input(a["text"], a.get("images"), a["source"], a.get("streamingBehavior"))
    elif event_type == "before_agent_start":
        result = await runner.emit_before_agent_start(a["prompt"], a.get("images"), a["systemPrompt"], a["options"])
    elif event_type == "context":
        result = await runner.emit_context(a["messages"])
    elif event_type == "before_provider_request":
        result = await runner.emit_before_provider_request(a["payload"])
    elif event_type == "before_provider_headers":
        result = await runner.emit_before_provider_headers(a["headers"])
    elif event_type == "tool_call":
        event = {"type": "tool_call", "toolName": a["toolName"], "toolCallId": a["toolCallId"], "input": a["input"]}
        try:
            result = {"result": await runner.emit_tool_call(event), "input": event["input"]}
        except Exception as exc:
            result = {"thrown": str(exc)}
    elif event_type == "tool_result":
        result = await runner.emit_tool_result({"type": "tool_result", **a})
    elif event_type == "message_end":
        result = await runner.emit_message_end(a["message"])
    elif event_type == "user_bash":
        result = await runner.emit_user_bash({"type": "user_bash", **a})
    elif event_type == "resources_discover":
        found = await runner.emit_resources_discover(a["cwd"], a["reason"])
        result = {key: [{"path": p, "extensionPath": x} for p, x in paths] for key, paths in found.items()}
    else:
        result = await runner.emit({"type": event_type, **a})
    return {"result": _plain(result), "seen": seen, "errors": errors}


# -- scripts ---------------------------------------------------------------------------------------

_text = st.text(alphabet="abc xyz!", max_size=6)
_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | _text,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                     max_leaves=6)
_image = st.fixed_dictionaries({"type": st.just("image"), "data": _text, "mimeType": st.just("image/png")})
_message = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=2), "timestamp": st.just(1)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=2), "stopReason": st.just("stop"),
        "timestamp": st.just(2)}),
    st.fixed_dictionaries({"role": st.just("custom"), "customType": _text, "content": _text,
                           "display": st.booleans(), "timestamp": st.just(3)}),
)
_throw = st.one_of(st.none(), st.none(), st.just("boom"))

RESULTS: dict[str, Any] = {
    "input": st.one_of(
        st.none(), st.just({"action": "continue"}), st.just({"action": "handled"}),
        st.fixed_dictionaries({"action": st.just("transform"), "text": _text}),
        st.fixed_dictionaries({"action": st.just("transform"), "text": _text, "images": st.lists(_image, max_size=1)})),
    "before_agent_start": st.one_of(
        st.none(), st.fixed_dictionaries({}, optional={"systemPrompt": _text, "message": st.fixed_dictionaries(
            {"customType": _text, "content": _text, "display": st.booleans()})})),
    "context": st.one_of(st.none(), st.fixed_dictionaries({}, optional={"messages": st.lists(_message, max_size=3)})),
    "before_provider_request": st.one_of(st.none(), st.dictionaries(_text, _json, max_size=3)),
    "before_provider_headers": st.none(),
    "tool_call": st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "block": st.booleans(), "reason": _text, "terminate": st.booleans()})),
    "tool_result": st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "content": st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=2),
        "details": _json, "isError": st.booleans()})),
    "message_end": st.one_of(st.none(), st.fixed_dictionaries({"message": _message})),
    "user_bash": st.one_of(st.none(), st.fixed_dictionaries({"result": st.fixed_dictionaries(
        {"output": _text, "exitCode": st.integers(0, 2), "cancelled": st.booleans(), "truncated": st.booleans()})})),
    "resources_discover": st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "skillPaths": st.lists(_text, max_size=2), "promptPaths": st.lists(_text, max_size=2),
        "themePaths": st.lists(_text, max_size=2)})),
    "session_before_fork": st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "cancel": st.booleans(), "skipConversationRestore": st.booleans()})),
    "turn_end": st.one_of(st.none(), _json),
}
ARGS: dict[str, Any] = {
    "input": st.fixed_dictionaries({"text": _text, "source": st.sampled_from(["rpc", "extension", "interactive"])},
                                   optional={"images": st.lists(_image, max_size=1),
                                             "streamingBehavior": st.sampled_from(["steer", "followUp"])}),
    "before_agent_start": st.fixed_dictionaries(
        {"prompt": _text, "systemPrompt": _text,
         "options": st.fixed_dictionaries({"cwd": st.just("/project"), "selectedTools": st.just(["read"])})},
        optional={"images": st.lists(_image, max_size=1)}),
    "context": st.fixed_dictionaries({"messages": st.lists(_message, max_size=3)}),
    "before_provider_request": st.fixed_dictionaries({"payload": st.dictionaries(_text, _json, max_size=3)}),
    "before_provider_headers": st.fixed_dictionaries({"headers": st.dictionaries(_text, _text, max_size=3)}),
    "tool_call": st.fixed_dictionaries({"toolName": st.sampled_from(["bash", "read"]), "toolCallId": st.just("c1"),
                                        "input": st.dictionaries(_text, _json, max_size=2)}),
    "tool_result": st.fixed_dictionaries({"toolName": st.just("bash"), "toolCallId": st.just("c1"),
                                          "input": st.just({}), "content": st.just([{"type": "text", "text": "x"}]),
                                          "details": _json, "isError": st.booleans()}),
    "message_end": st.fixed_dictionaries({"message": _message}),
    "user_bash": st.fixed_dictionaries({"command": _text, "excludeFromContext": st.booleans(),
                                        "cwd": st.just("/project")}),
    "resources_discover": st.fixed_dictionaries({"cwd": st.just("/project"),
                                                 "reason": st.sampled_from(["startup", "reload"])}),
    "session_before_fork": st.fixed_dictionaries({"entryId": st.just("e1"), "position": st.sampled_from(["before",
                                                                                                        "at"])}),
    "turn_end": st.fixed_dictionaries({"turnIndex": st.integers(0, 3)}),
}
_set = st.one_of(st.none(), st.none(), st.dictionaries(_text, st.one_of(st.none(), _text), min_size=1, max_size=2))


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    event = draw(st.sampled_from(sorted(RESULTS)))
    extensions = []
    for e in range(draw(st.integers(0, 3))):
        handlers = []
        for _ in range(draw(st.integers(1, 3))):
            handler: dict[str, Any] = {"result": draw(RESULTS[event])}
            thrown = draw(_throw)
            if thrown is not None and event != "tool_call":  # a raising tool_call handler is covered apart
                handler["throw"] = thrown
            if event in ("before_provider_headers", "tool_call"):
                change = draw(_set)
                if change:
                    handler["set"] = change
            handlers.append(handler)
        extensions.append({"path": f"/ext/e{e}.ts", "handlers": handlers})
    return {"event": event, "args": draw(ARGS[event]), "extensions": extensions}


def _comparable(answer: dict[str, Any]) -> dict[str, Any]:
    """Error texts differ on purpose (rpcd names the exception type: ``RuntimeError: boom``)."""
    return {**answer, "errors": [[path, event] for path, event, _ in answer["errors"]]}


EXAMPLES = int(os.environ.get("RPCD_RUNNER_EXAMPLES", "3000" if os.environ.get("RPCD_LONG") == "1" else "150"))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_results_combine_as_in_pi(pi_runner: NodeRunner, scenario: dict[str, Any]) -> None:
    theirs = pi_runner.run(scenario)
    ours = anyio.run(_ours, scenario)
    assert _comparable(ours) == _comparable(theirs)


def test_a_raising_tool_call_handler_blocks_as_in_pi(pi_runner: NodeRunner) -> None:
    scenario = {"event": "tool_call", "args": {"toolName": "bash", "toolCallId": "c1", "input": {"command": "ls"}},
                "extensions": [{"path": "/ext/a.ts", "handlers": [{"result": None, "throw": "no"}]},
                               {"path": "/ext/b.ts", "handlers": [{"result": {"block": True}}]}]}
    theirs = pi_runner.run(scenario)
    ours = anyio.run(_ours, scenario)
    assert ours["result"] == theirs["result"] == {"thrown": "no"}
    assert ours["seen"] == theirs["seen"] and len(ours["seen"]) == 1  # the second handler never ran


def test_errors_name_the_extension_and_the_event(pi_runner: NodeRunner) -> None:
    scenario = {"event": "context", "args": {"messages": []},
                "extensions": [{"path": "/ext/a.ts", "handlers": [{"throw": "bad context"}]}]}
    assert [e[:2] for e in pi_runner.run(scenario)["errors"]] == [["/ext/a.ts", "context"]]
    assert anyio.run(_ours, scenario)["errors"] == [["/ext/a.ts", "context", "RuntimeError: bad context"]]

