"""``rpcd --mode rpc`` against real ``pi --mode rpc``: the same faux script and the same command
program on both, one process of each per program; the lines each writes (answers, events,
extension UI requests) and the session files each leaves must be equal after normalising what
differs by nature — ids, timestamps, directories and the faux models' own bookkeeping
(``tests/pirpc/wire.py`` says exactly what). Both sides run at once (each mostly waits on its child).

The programs: every command in one tour (replacements and session files included), turn control
mid-tool-round (steer, follow-up, a refused prompt, queued prompts, abort), lines that are not
commands, the extension UI sub-protocol and a failing command, the end of input in the middle of a
turn, and the end by each signal (SIGHUP, SIGINT with ``RPCD_LONG=1``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.pi_compat.oracle import PiOracle
from tests.pirpc.wire import SIGNALS, Wire, end_by, pi_wire, rpcd_wire, run_program

HERE = Path(__file__).resolve().parent
LONG = os.environ.get("RPCD_LONG") == "1"


def both(pi_oracle: PiOracle, tmp_path: Path, script: Sequence[Mapping[str, Any]], steps: Sequence[Any], *,
         end: Callable[[Wire], int] | None = None, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    pi_ext = [HERE / "ui_extension.mjs"] if kwargs.pop("ui_extension", False) else []
    ours_ext = [HERE / "ui_extension.py"] if pi_ext else []
    with ThreadPoolExecutor(max_workers=1) as pool:
        theirs = pool.submit(run_program, lambda: pi_wire(pi_oracle, tmp_path, script, extensions=pi_ext, **kwargs),
                             steps, end=end)
        mine = run_program(lambda: rpcd_wire(tmp_path, script, extensions=ours_ext, **kwargs), steps, end=end)
        return theirs.result(), mine


def assert_same(pi: dict[str, Any], ours: dict[str, Any]) -> None:
    for index, (theirs, mine) in enumerate(zip(pi["lines"], ours["lines"], strict=False)):
        assert mine == theirs, f"line {index} differs"
    assert len(ours["lines"]) == len(pi["lines"]), (ours["lines"][len(pi["lines"]):], pi["lines"][len(ours["lines"]):])
    assert ours["files"] == pi["files"], "the session files differ"
    assert ours["code"] == pi["code"]


def _fork_before_last_user(wire: Wire) -> dict[str, Any]:
    answer = wire.command("get_fork_messages")
    return {"id": "fork", "type": "fork", "entryId": answer["data"]["messages"][-1]["entryId"]}


def _switch_to_first_file(wire: Wire) -> dict[str, Any]:
    files = sorted((wire.root / "agent" / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    return {"id": "switch", "type": "switch_session", "sessionPath": str(files[0])}


def _new_session_with_parent(wire: Wire) -> dict[str, Any]:
    state = wire.command("get_state")
    return {"id": "new-child", "type": "new_session", "parentSession": state["data"]["sessionFile"]}


TOOL = {"toolCall": {"name": "bash", "arguments": {"command": "echo from the tool"}, "id": "call_tour"}}
TOUR_SCRIPT = [{"text": "hello back"}, TOOL, {"text": "the tool said so"},
               {"text": "## Goal\nA summary of the tour."}, {"text": "after the summary"}, {"text": "in the fork"},
               {"text": "in the clone"}]


def _ask(n: int | str, kind: str, **fields: Any) -> list[Any]:
    return [{"id": f"c{n}", "type": kind, **fields}, ("answer", f"c{n}")]


TOUR: list[Any] = [
    *_ask(1, "get_state"), *_ask(2, "get_available_models"), *_ask(3, "get_available_thinking_levels"),
    *_ask(4, "set_thinking_level", level="high"), *_ask(5, "cycle_thinking_level"),
    *_ask("5a", "set_thinking_level", level="bogus"), *_ask("5b", "get_state"),
    *_ask("5c", "set_thinking_level", level="medium"),
    *_ask(6, "set_steering_mode", mode="all"), *_ask(7, "set_follow_up_mode", mode="one-at-a-time"),
    *_ask(8, "set_auto_retry", enabled=False), *_ask(9, "set_model", provider="faux", modelId="faux-1"),
    *_ask(10, "set_model", provider="nope", modelId="none"), *_ask(11, "cycle_model"),
    {"id": "p1", "type": "prompt", "message": "hello"}, ("answer", "p1"), ("event", "agent_settled", 1), ("idle",),
    *_ask(12, "bash", command="echo out; echo err >&2; exit 3"), *_ask(13, "abort_bash"), *_ask(14, "abort_retry"),
    {"id": "p2", "type": "prompt", "message": "use a tool"}, ("answer", "p2"), ("event", "agent_settled", 2), ("idle",),
    *_ask(15, "get_messages"), *_ask(16, "get_entries"), *_ask(17, "get_entries", since="nope"),
    *_ask(18, "get_tree"), *_ask(19, "get_fork_messages"), *_ask(20, "get_last_assistant_text"),
    *_ask(21, "get_session_stats"), *_ask(22, "set_session_name", name="  the tour  "),
    *_ask(23, "set_session_name", name="   "), *_ask(24, "get_commands"),
    *_ask(25, "export_html", outputPath="out.html"),
    *_ask(26, "compact", customInstructions="keep it short"), *_ask(27, "get_entries"),
    *_ask(28, "steer", message="for later"), *_ask(29, "follow_up", message="and after"), *_ask(30, "clear_queue"),
    *_ask(31, "abort"), *_ask(32, "set_auto_compaction", enabled=False), *_ask(33, "get_state"),
    {"id": "p3", "type": "prompt", "message": "after compaction"}, ("answer", "p3"), ("event", "agent_settled", 3),
    ("idle",), _fork_before_last_user, ("answer", "fork"), *_ask(34, "get_state"),
    {"id": "p4", "type": "prompt", "message": "in the fork"}, ("answer", "p4"), ("event", "agent_settled", 4),
    ("idle",),
    *_ask(35, "clone"), *_ask(36, "get_state"),
    {"id": "p5", "type": "prompt", "message": "in the clone"}, ("answer", "p5"), ("event", "agent_settled", 5),
    ("idle",), _new_session_with_parent, ("answer", "new-child"), *_ask(37, "get_state"), *_ask(38, "clone"),
    _switch_to_first_file, ("answer", "switch"), *_ask(39, "get_state"), *_ask(40, "get_messages"),
    *_ask(41, "switch_session", sessionPath="missing/new.jsonl"), *_ask(42, "get_state"),
]


def test_every_command_matches_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    pi, ours = both(pi_oracle, tmp_path, TOUR_SCRIPT, TOUR)
    assert_same(pi, ours)
    answered = {x.get("command") for x in ours["lines"] if x.get("type") == "response"}
    assert len(answered) == 33  # every command of Pi's protocol answered


def _slow_tool(seconds: float, call_id: str) -> dict[str, Any]:
    return {"toolCall": {"name": "bash", "arguments": {"command": f"sleep {seconds}; echo done"}, "id": call_id}}


TURNS_SCRIPT = [_slow_tool(0.8, "call_1"), {"text": "r1"}, {"text": "r2"}, {"text": "r3"}, {"text": "r4"},
                _slow_tool(30, "call_2"),
                {"text": "after the abort"}]
TURNS: list[Any] = [
    {"id": "t1", "type": "prompt", "message": "start"}, ("answer", "t1"), ("event", "tool_execution_start", 1),
    *_ask(1, "steer", message="steer one"), *_ask(2, "follow_up", message="follow one"),
    *_ask(3, "prompt", message="refused while streaming"),
    *_ask(4, "prompt", message="queued as steer", streamingBehavior="steer"),
    *_ask(5, "prompt", message="queued as follow-up", streamingBehavior="followUp"),
    *_ask(6, "get_state"),
    ("event", "agent_settled", 1), ("idle",), *_ask(7, "get_state"),
    {"id": "t2", "type": "prompt", "message": "long tool"}, ("answer", "t2"), ("event", "tool_execution_start", 2),
    *_ask(8, "follow_up", message="kept over the abort"), *_ask(9, "abort"), ("event", "agent_settled", 2), ("idle",),
    *_ask(10, "get_messages"),
]


def test_turn_control_matches_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    pi, ours = both(pi_oracle, tmp_path, TURNS_SCRIPT, TURNS)
    assert_same(pi, ours)


BAD_LINES = ["", "   ", "abc", "{", '{"a":1,}', "42", "[]", "{}", '"text"', '{"type":5}', '{"type":null,"id":3}',
             '{"type":[1,"x"]}', '{"type":{}}', '{"type":"get_state"}trailing', "é\u2028", '{"type":"prompt"}',
             '{"type":"prompt","message":5}', '{"type":"set_session_name"}', '{"type":"set_session_name","name":3}',
             '{"type":"get_entries","since":5}', '{"type":"fork","id":"f"}', '{"type":"get_state","id":1.5}',
             '{"type":"get_state","id":{"nested":[1]}}', "x" * 40, '{"type": "get_state", "id": "crlf"}\r']
UI: list[Any] = [
    *[item for n, line in enumerate(BAD_LINES, 1) for item in (line, ("answers", n))],
    '{"type":"extension_ui_response","id":"unknown","value":"ignored"}', *_ask(1, "get_state"),
    {"id": "ask", "type": "prompt", "message": "/ask now"}, ("answer", "ask"),
    {"id": "boom", "type": "prompt", "message": "/boom"}, ("answer", "boom"),
    *_ask(2, "steer", message="/ask cannot be queued"),
]


def _answer_dialogs(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The client of the UI program: it answers the first four dialogs and leaves the timed ones open."""
    title = request.get("title")
    return {"Pick one": {"value": "beta"}, "Sure?": {"confirmed": True}, "Your name": {"value": "Ada"},
            "Edit this": {"cancelled": True}}.get(str(title))


def test_bad_lines_and_the_extension_ui_match_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    pi, ours = both(pi_oracle, tmp_path, [], UI, ui=_answer_dialogs, ui_extension=True)
    # The two extensions are the same code in two languages: a Python handler's error is shown with
    # its exception's type (rpcd's extension host), a JavaScript one's with its message only.
    failed = [x for x in ours["lines"] if x.get("type") == "extension_error"]
    assert [x["error"] for x in failed] == ["RuntimeError: boom went the command"]
    failed[0]["error"] = failed[0]["error"].removeprefix("RuntimeError: ")
    assert_same(pi, ours)
    requests = [x for x in ours["lines"] if x.get("type") == "extension_ui_request"]
    assert [r["method"] for r in requests] == ["select", "confirm", "input", "editor", "select", "confirm", "notify",
                                               "notify", "setStatus", "setStatus", "setWidget", "setWidget", "setTitle",
                                               "set_editor_text"]


EOF_SCRIPT = [_slow_tool(30, "call_eof"), {"text": "never"}]
EOF_STEPS: list[Any] = [{"id": "e1", "type": "prompt", "message": "long"}, ("answer", "e1"),
                        ("event", "tool_execution_update", 1)]


def test_the_end_of_input_mid_turn_matches_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    pi, ours = both(pi_oracle, tmp_path, EOF_SCRIPT, EOF_STEPS)
    assert ours["code"] == pi["code"] == 0
    assert ours["lines"][: len(pi["lines"])] == pi["lines"]  # Pi stops writing at once
    # Deliberate (docs/pi-compat.md): rpcd persists the aborted turn where Pi's process just ends.
    assert [e.get("type") for e in pi["files"][0]] == [e.get("type") for e in ours["files"][0]][: len(pi["files"][0])]


@pytest.mark.parametrize("name", ["SIGTERM", *(("SIGHUP", "SIGINT") if LONG else ())])
def test_the_end_by_a_signal_matches_pi(pi_oracle: PiOracle, tmp_path: Path, name: str) -> None:
    steps: list[Any] = [{"id": "s1", "type": "prompt", "message": "hi"}, ("answer", "s1"),
                        ("event", "agent_settled", 1), ("idle",)]
    pi, ours = both(pi_oracle, tmp_path, [{"text": "hello"}], steps, end=end_by(SIGNALS[name]))
    assert ours["code"] == pi["code"] == {"SIGTERM": 143, "SIGHUP": 129, "SIGINT": -2}[name]
    assert_same(pi, ours)
