"""Tool approval through the real daemon: the faux model scripts ``bash``/``write``/``edit``/``read``
calls, the client answers ``tool/authorize`` (or does not), and what ran, what the model was told
and what the session file holds are checked — for every decision, each policy, an extension that
blocks first, a timeout, an abort and a replacement while a question is pending, a client that
goes away, remembered rules across restarts and after revocation, and a corrupted rules file."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.driver import NO_ANSWER, Daemon, RpcError, events_of
from tests.e2e.projects import read_jsonl

APPROVE = {"toolApproval": {}}


class Asker:
    """Answers ``tool/authorize`` from a list (or a function) and records every question."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[Mapping[str, Any]] = []

    def __call__(self, params: Mapping[str, Any]) -> Any:
        self.asked.append(params)
        answer = self.answers.pop(0) if self.answers else {"decision": "rejectOnce"}
        return answer(params) if callable(answer) else answer

    @property
    def titles(self) -> list[str]:
        return [p["title"] for p in self.asked]


def _setup(tmp_path: Path, script: list[dict[str, Any]], *, settings: Mapping[str, Any] | None = None,
           extension: str | None = None) -> tuple[Path, Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "notes.txt").write_text("one\ntwo\n")
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    if settings is not None:
        (agent / "settings.json").write_text(json.dumps(settings))
    if extension is not None:
        (agent / "extensions").mkdir(exist_ok=True)
        (agent / "extensions" / "gate.py").write_text(extension)
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    return project, agent, {"RPCD_FAUX_SCRIPT": str(script_file)}


def _daemon(project: Path, agent: Path, env: Mapping[str, str], asker: Callable[..., Any] | None, *args: str) -> Daemon:
    handlers = {"tool/authorize": asker} if asker is not None else {}
    return Daemon("--agent-dir", str(agent), "--cwd", str(project), *args, env=env, handlers=handlers)


def _call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": call_id}


def _ends(log: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {p["event"]["toolCallId"]: p["event"] for p in events_of(log, "session/event")
            if p["event"]["type"] == "tool_execution_end"}


def _text(end: Mapping[str, Any]) -> str:
    return str(end["result"]["content"][0]["text"])


def _tool_results(session_file: str) -> dict[str, dict[str, Any]]:
    return {e["message"]["toolCallId"]: e["message"] for e in read_jsonl(session_file)
            if e["type"] == "message" and e["message"]["role"] == "toolResult"}


def _cancelled_ids(log: list[Mapping[str, Any]]) -> list[Any]:
    return [p["id"] for p in events_of(log, "$/cancelRequest")]


def _authorize_requests(log: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [m for m in log if m.get("method") == "tool/authorize" and "id" in m]


# -- decisions ---------------------------------------------------------------------------------------


DECISIONS = ("allowOnce", "allowAlways", "rejectOnce", "rejectAlways")


def test_each_decision_runs_or_refuses_the_call_and_always_answers_are_remembered(tmp_path: Path) -> None:
    # one file per decision, written twice: the second round shows what was remembered
    script: list[dict[str, Any]] = []
    for round_ in (1, 2):
        calls = [_call("write", f"{d}{round_}", path=f"out/{d}.txt", content=f"round {round_}\n") for d in DECISIONS]
        script += [{"toolCalls": calls}, {"text": f"round {round_}"}]
    project, agent, env = _setup(tmp_path, script)
    answers = {d: {"decision": d, "reason": "I say so"} for d in DECISIONS}
    asker = Asker(*[lambda p: answers[p["toolCallId"][:-1]]] * 4, *[{"decision": "allowOnce"}] * 2)
    with _daemon(project, agent, env, asker) as d:
        d.initialize(APPROVE)
        assert d.call("prompt", {"text": "write them"}) == {"stopReason": "stop"}
        assert d.call("prompt", {"text": "write them again"}) == {"stopReason": "stop"}
        rules = d.call("listApprovalRules", {"cwd": str(project)})
        state = d.call("getState")
        log = list(d.log)
    ends = _ends(log)
    results = _tool_results(state["sessionFile"])
    # an Always answer is not asked again; a Once answer is (and allowed, the second time)
    assert [p["toolCallId"] for p in asker.asked] == ["allowOnce1", "allowAlways1", "rejectOnce1", "rejectAlways1",
                                                      "allowOnce2", "rejectOnce2"]
    first = asker.asked[0]
    assert first["sessionId"] == state["sessionId"] and first["generation"] == state["generation"]
    assert (first["toolName"], first["kind"], first["title"]) == ("write", "edit", "write out/allowOnce.txt")
    assert first["arguments"] == {"path": "out/allowOnce.txt", "content": "round 1\n"}
    assert first["locations"] == [{"path": str(project / "out" / "allowOnce.txt")}]
    out = project / "out"
    assert (out / "allowOnce.txt").read_text() == (out / "allowAlways.txt").read_text() == "round 2\n"
    assert (out / "rejectOnce.txt").read_text() == "round 2\n"  # rejected once, allowed when asked again
    assert not (out / "rejectAlways.txt").exists()
    for rejected in ("rejectOnce1", "rejectAlways1"):
        assert _text(ends[rejected]) == "Tool call rejected by the user: I say so"
        # persisted as Pi persists a call an extension blocked: error text, empty details, isError
        assert results[rejected]["content"] == [{"type": "text", "text": "Tool call rejected by the user: I say so"}]
        assert results[rejected]["details"] == {} and results[rejected]["isError"] is True
    assert _text(ends["rejectAlways2"]).startswith("Tool call rejected: refused by a remembered approval rule (write")
    assert [(r["toolName"], r["decision"], r["path"], r["project"]) for r in rules["rules"]] == [
        ("write", "allow", "out/allowAlways.txt", os.path.realpath(project)),
        ("write", "reject", "out/rejectAlways.txt", os.path.realpath(project))]
    assert all("command" not in r for r in rules["rules"]) and rules["diagnostics"] == []
    assert stat.S_IMODE((agent / "rpcd" / "approvals.json").stat().st_mode) == 0o600


def test_the_question_follows_the_calls_start_event_and_cuts_long_arguments(tmp_path: Path) -> None:
    long_text = "x" * 5000
    script = [{"toolCalls": [_call("edit", "e1", path="notes.txt", edits=[{"oldText": "two", "newText": long_text}]),
                             _call("bash", "b1", command="rm -rf build\necho done")]}, {"text": "ok"}]
    project, agent, env = _setup(tmp_path, script)
    asker = Asker({"decision": "allowOnce"}, {"decision": "rejectOnce"})
    with _daemon(project, agent, env, asker) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
        log = list(d.log)
    edit, bash = asker.asked
    assert edit["title"] == "edit notes.txt" and edit["kind"] == "edit"
    new_text = edit["arguments"]["edits"][0]["newText"]
    assert new_text == "x" * 2000 + "… [3000 more characters]"
    assert bash["title"] == "bash: rm -rf build …" and bash["kind"] == "execute" and bash["locations"] == []
    assert (project / "notes.txt").read_text() == f"one\n{long_text}\n"  # the tool got the full argument
    for call_id in ("e1", "b1"):
        start = next(i for i, m in enumerate(log) if m.get("method") == "session/event"
                     and m["params"]["event"]["type"] == "tool_execution_start"
                     and m["params"]["event"]["toolCallId"] == call_id)
        question = next(i for i, m in enumerate(log) if m.get("method") == "tool/authorize"
                        and m["params"]["toolCallId"] == call_id)
        assert start < question


# -- policies ----------------------------------------------------------------------------------------

POLICY_SCRIPT = [
    {"toolCalls": [_call("read", "r", path="notes.txt"), _call("bash", "b", command="echo ran > bash.txt"),
                   _call("edit", "e", path="notes.txt", edits=[{"oldText": "two", "newText": "2"}])]},
    {"text": "done"},
]


POLICIES = {  # policy -> (calls asked about, calls that ran)
    "auto": ([], {"r", "b", "e"}),
    "ask-writes": (["b", "e"], {"r", "b", "e"}),
    "ask-all": (["r", "b", "e"], {"r", "b", "e"}),
    "deny-writes": ([], {"r"}),
}


def _policy_round(policy: str) -> list[dict[str, Any]]:
    calls = [_call("read", f"r-{policy}", path="notes.txt"), _call("bash", f"b-{policy}", command=f"touch {policy}"),
             _call("edit", f"e-{policy}", path="notes.txt", edits=[{"oldText": "one", "newText": f"one {policy}"}])]
    return [{"toolCalls": calls}, {"text": "done"}]


def test_each_policy_asks_about_and_runs_the_calls_it_should(tmp_path: Path) -> None:
    project, agent, env = _setup(tmp_path, [step for policy in POLICIES for step in _policy_round(policy)])
    asker = Asker(*[{"decision": "allowOnce"}] * 5)
    with _daemon(project, agent, env, asker, "--approval", "auto") as d:
        d.initialize(APPROVE)
        for policy in POLICIES:
            assert d.call("setApprovalPolicy", {"policy": policy}) is None
            assert d.call("getState")["approvalPolicy"] == policy
            d.call("prompt", {"text": policy})
        log = list(d.log)
    ends = _ends(log)
    for policy, (asked, ran) in POLICIES.items():
        assert [p["toolCallId"] for p in asker.asked if p["toolCallId"].endswith(policy)] == \
            [f"{name}-{policy}" for name in asked]
        assert {k for k, end in ends.items() if k.endswith(f"-{policy}") and not end["isError"]} == \
            {f"{name}-{policy}" for name in ran}
        assert (project / policy).exists() == ("b" in ran)
    assert _text(ends["b-deny-writes"]) == "Tool call rejected: the approval policy deny-writes refuses calls " \
                                           "that may change something"


def test_the_default_is_ask_writes_with_the_capability_and_auto_without(tmp_path: Path) -> None:
    project, agent, env = _setup(tmp_path, POLICY_SCRIPT)
    asker = Asker()
    with _daemon(project, agent, env, asker) as d:
        d.initialize()  # no toolApproval: Pi's behaviour, nothing asked, everything runs
        d.call("prompt", {"text": "go"})
        assert d.call("getState")["approvalPolicy"] == "auto"
        log = list(d.log)
    assert asker.asked == [] and _authorize_requests(log) == []
    assert all(not end["isError"] for end in _ends(log).values())
    with _daemon(project, agent, env, Asker()) as d:
        d.initialize(APPROVE)
        assert d.call("getState")["approvalPolicy"] == "ask-writes"


def test_a_policy_that_asks_refuses_writes_when_the_client_cannot_answer(tmp_path: Path) -> None:
    project, agent, env = _setup(tmp_path, POLICY_SCRIPT)
    with _daemon(project, agent, env, None, "--approval", "ask-writes") as d:
        d.initialize()
        d.call("prompt", {"text": "go"})
        log = list(d.log)
    ends = _ends(log)
    assert _authorize_requests(log) == []
    assert ends["r"]["isError"] is False
    assert _text(ends["b"]) == "Tool call rejected: the client does not answer approval requests"
    assert not (project / "bash.txt").exists()


def test_set_approval_policy_applies_to_later_calls_and_get_state_reports_it(tmp_path: Path) -> None:
    script = [*POLICY_SCRIPT, *POLICY_SCRIPT]
    project, agent, env = _setup(tmp_path, script)
    asker = Asker({"decision": "rejectOnce"}, {"decision": "rejectOnce"})
    with _daemon(project, agent, env, asker) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "first"})
        assert d.call("setApprovalPolicy", {"policy": "auto"}) is None
        assert d.call("getState")["approvalPolicy"] == "auto"
        d.call("prompt", {"text": "second"})
        with pytest.raises(RpcError) as bad:
            d.call("setApprovalPolicy", {"policy": "yolo"})
        assert bad.value.code == -32602 and bad.value.data["errors"][0]["path"] == "$.policy"
        d.call("newSession")
        assert d.call("getState")["approvalPolicy"] == "auto"  # the process's choice outlives the session
    assert len(asker.asked) == 2
    assert (project / "bash.txt").exists()  # the second prompt's bash ran without asking


def test_settings_choose_the_policy_project_settings_only_when_trusted(tmp_path: Path) -> None:
    project, agent, env = _setup(tmp_path, POLICY_SCRIPT, settings={"approvalPolicy": "ask-all"})
    (project / ".pi").mkdir()
    (project / ".pi" / "settings.json").write_text(json.dumps({"approvalPolicy": "deny-writes"}))
    with _daemon(project, agent, env, Asker()) as d:
        d.initialize(APPROVE)  # the project is not trusted: the global setting counts
        assert d.call("getState")["approvalPolicy"] == "ask-all"
    with _daemon(project, agent, env, Asker(), "--trust-policy", "trust") as d:
        d.initialize(APPROVE)
        assert d.call("getState")["approvalPolicy"] == "deny-writes"
    with _daemon(project, agent, env, Asker(), "--trust-policy", "trust", "--approval", "ask-writes") as d:
        d.initialize(APPROVE)
        assert d.call("getState")["approvalPolicy"] == "ask-writes"  # the flag beats the settings
    (agent / "settings.json").write_text(json.dumps({"approvalPolicy": "sometimes"}))
    with _daemon(project, agent, env, Asker()) as d:
        d.initialize(APPROVE)
        assert d.call("getState")["approvalPolicy"] == "ask-writes"
        log = list(d.log)
    messages = [i["message"] for p in events_of(log, "session/diagnostics") for i in p["diagnostics"]]
    assert any('Setting "approvalPolicy" ignored' in m for m in messages)


# -- extensions first ----------------------------------------------------------------------------------

BLOCK_BASH = '''
def register(pi):
    async def on_tool_call(event, ctx):
        if event["toolName"] == "bash":
            return {"block": True, "reason": "no shell in this project"}
    pi.on("tool_call", on_tool_call)

    async def run(tool_call_id, args, ctx):
        return {"content": [{"type": "text", "text": "looked"}]}
    pi.register_tool("peek", "Look at nothing.", {"type": "object", "properties": {}}, run, read_only=True)

    async def poke(tool_call_id, args, ctx):
        return {"content": [{"type": "text", "text": "poked"}]}
    pi.register_tool("poke", "Change nothing much.", {"type": "object", "properties": {}}, poke)
'''


def test_an_extension_blocks_before_the_policy_asks_and_extension_tools_count_as_writes(tmp_path: Path) -> None:
    script = [{"toolCalls": [_call("bash", "b", command="echo no > bash.txt"), _call("peek", "p"),
                             _call("poke", "k"), _call("write", "w", path="w.txt", content="w")]},
              {"text": "done"}]
    project, agent, env = _setup(tmp_path, script, extension=BLOCK_BASH)
    asker = Asker({"decision": "allowOnce"}, {"decision": "allowOnce"})
    with _daemon(project, agent, env, asker) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
        log = list(d.log)
    ends = _ends(log)
    assert _text(ends["b"]) == "no shell in this project"  # the extension's reason; the client never heard of it
    assert [(p["toolCallId"], p["kind"], p["title"]) for p in asker.asked] == [("k", "other", "poke"),
                                                                                ("w", "edit", "write w.txt")]
    assert _text(ends["p"]) == "looked" and _text(ends["k"]) == "poked"
    assert not (project / "bash.txt").exists() and (project / "w.txt").read_text() == "w"


# -- waiting: timeout, abort, replacement, a client that goes away ---------------------------------------


def _pending_script(marker: Path) -> list[dict[str, Any]]:
    return [{"toolCall": _call("bash", "b", command=f"touch {marker}")}, {"text": "after"}, {"text": "later"}]


@contextlib.contextmanager
def _unanswered(tmp_path: Path, *args: str) -> Iterator[tuple[Daemon, int, Mapping[str, Any], Path]]:
    """A daemon whose turn waits on a ``tool/authorize`` the client leaves unanswered: yields the
    daemon, the prompt's request id, the question, and the file the tool would create."""
    marker = tmp_path / "ran"
    project, agent, env = _setup(tmp_path, _pending_script(marker))
    with _daemon(project, agent, env, lambda params: NO_ANSWER, *args) as d:
        d.initialize(APPROVE)
        prompt = d.start("prompt", {"text": "go"})
        d.wait_for(lambda log: bool(_authorize_requests(log)))
        (question,) = _authorize_requests(list(d.log))
        yield d, prompt, question, marker


def _answer_late(d: Daemon, question: Mapping[str, Any]) -> None:
    d.send({"jsonrpc": "2.0", "id": question["id"], "result": {"decision": "allowOnce"}})


def test_a_timeout_rejects_withdraws_the_question_and_a_late_answer_is_ignored(tmp_path: Path) -> None:
    with _unanswered(tmp_path, "--approval-timeout", "0.5") as (d, prompt, question, marker):
        assert d.wait(prompt)["result"] == {"stopReason": "stop"}
        d.wait_for(lambda log: question["id"] in _cancelled_ids(log))
        _answer_late(d, question)
        assert d.call("prompt", {"text": "still serving?"}) == {"stopReason": "stop"}
        log = list(d.log)
    assert _text(_ends(log)["b"]) == "Tool call rejected: no approval answer within 0.5 s"
    assert not marker.exists()
    assert any("response to an unknown request id ignored" in line for line in d.stderr_lines)


def test_an_abort_while_the_question_is_pending_withdraws_it_and_nothing_runs(tmp_path: Path) -> None:
    with _unanswered(tmp_path) as (d, prompt, question, marker):
        assert d.call("abort") is None
        assert d.wait(prompt)["result"] == {"stopReason": "aborted"}
        d.wait_for(lambda log: question["id"] in _cancelled_ids(log))
        _answer_late(d, question)
        state = d.call("getState")
        log = list(d.log)
    assert not marker.exists()
    assert _text(_ends(log)["b"]) == "Operation aborted"
    results = _tool_results(state["sessionFile"])
    assert results["b"]["isError"] is True and results["b"]["content"][0]["text"] == "Operation aborted"


def test_a_replacement_while_the_question_is_pending_withdraws_it_and_nothing_runs(tmp_path: Path) -> None:
    with _unanswered(tmp_path) as (d, prompt, question, marker):
        old = d.call("getState")
        replaced = d.call("newSession")
        assert d.wait(prompt)["result"] == {"stopReason": "aborted"}
        assert question["id"] in _cancelled_ids(list(d.log))
        _answer_late(d, question)
        assert d.call("getState")["generation"] == replaced["generation"] > old["generation"]
    assert not marker.exists()
    assert _tool_results(old["sessionFile"])["b"]["isError"] is True


def test_a_client_that_goes_away_while_asked_gets_nothing_run(tmp_path: Path) -> None:
    with _unanswered(tmp_path) as (d, _prompt, _question, marker):
        state = d.call("getState")
        d.close_stdin()
        assert d.wait_exit() == 0
    assert not marker.exists()
    result = _tool_results(state["sessionFile"])["b"]
    assert result["isError"] is True
    assert result["content"][0]["text"] in ("Tool call rejected: the client is gone", "Operation aborted")


# -- remembered rules ------------------------------------------------------------------------------------


def test_a_rule_is_reused_after_a_restart_and_asked_again_after_revocation(tmp_path: Path) -> None:
    script = [{"toolCall": _call("bash", "b", command="touch one.txt")}, {"text": "done"}]
    project, agent, env = _setup(tmp_path, script)
    first = Asker({"decision": "allowAlways"})
    with _daemon(project, agent, env, first) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
    assert len(first.asked) == 1
    (script_path := Path(env["RPCD_FAUX_SCRIPT"])).write_text(json.dumps(
        [{"toolCall": _call("bash", "b", command="touch two.txt")}, {"text": "done"}]))
    second = Asker()
    with _daemon(project, agent, env, second) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
        (rule,) = d.call("listApprovalRules")["rules"]
        assert (rule["toolName"], rule["command"], rule["decision"]) == ("bash", "touch *", "allow")
        assert d.call("revokeApprovalRule", {"id": rule["id"]}) == {"rule": rule}
        with pytest.raises(RpcError) as unknown:
            d.call("revokeApprovalRule", {"id": rule["id"]})
        assert unknown.value.code == -32602 and unknown.value.data["errors"][0]["path"] == "$.id"
    assert second.asked == []  # the remembered rule decided, in a new process
    assert (project / "two.txt").exists()
    (project / "one.txt").unlink()
    script_path.write_text(json.dumps(script))
    third = Asker({"decision": "rejectOnce"})
    with _daemon(project, agent, env, third) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
        assert d.call("listApprovalRules") == {"rules": [], "diagnostics": []}
    assert len(third.asked) == 1
    assert not (project / "one.txt").exists()


def test_an_allow_rule_for_a_prefix_never_covers_a_compound_command(tmp_path: Path) -> None:
    script = [{"toolCall": _call("bash", "b1", command="echo one")}, {"text": "a"},
              {"toolCall": _call("bash", "b2", command="echo two && touch sneaky")}, {"text": "b"}]
    project, agent, env = _setup(tmp_path, script)
    asker = Asker({"decision": "allowAlways"}, {"decision": "rejectOnce"})
    with _daemon(project, agent, env, asker) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "one"})
        d.call("prompt", {"text": "two"})
    assert [p["toolCallId"] for p in asker.asked] == ["b1", "b2"]
    assert not (project / "sneaky").exists()


HIDDEN_SECOND_COMMANDS = ("ls x#; {}", "ls $'a\\'' ; {} ; # '", "ls -d .#;{}")
"""The reported bypasses: ``#`` inside a word is no comment to bash, ``$'…'`` is no plain quote."""


def test_a_hidden_second_command_is_asked_about_under_an_allow_rule_and_refused_by_a_reject_rule(
        tmp_path: Path) -> None:
    """After ``allowAlways`` for ``ls -la`` (rule ``ls *``) and ``rejectAlways`` for ``rm -f x`` (rule
    ``rm *``): a ``touch`` hidden behind each bypass is asked about (and refused here), an ``rm`` hidden
    the same way is refused by the rule without a question; nothing of them runs."""
    touches = [shape.format(f"touch PWNED{i}") for i, shape in enumerate(HIDDEN_SECOND_COMMANDS)]
    removals = [shape.format("rm -f notes.txt") for shape in HIDDEN_SECOND_COMMANDS]
    second = [_call("bash", f"t{i}", command=c) for i, c in enumerate(touches)]
    second += [_call("bash", f"r{i}", command=c) for i, c in enumerate(removals)]
    second.append(_call("bash", "again", command="ls -la"))
    script = [{"toolCalls": [_call("bash", "ls", command="ls -la"), _call("bash", "rm", command="rm -f x")]},
              {"text": "remembered"}, {"toolCalls": second}, {"text": "done"}]
    project, agent, env = _setup(tmp_path, script)
    asker = Asker({"decision": "allowAlways"}, {"decision": "rejectAlways"})
    with _daemon(project, agent, env, asker) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "remember"})
        rules = d.call("listApprovalRules", {"cwd": str(project)})["rules"]
        d.call("prompt", {"text": "try"})
        log = list(d.log)
    assert sorted((r["decision"], r["command"]) for r in rules) == [("allow", "ls *"), ("reject", "rm *")]
    assert [p["toolCallId"] for p in asker.asked] == ["ls", "rm", "t0", "t1", "t2"]
    assert (project / "notes.txt").exists() and not list(project.glob("PWNED*"))
    ends = _ends(log)
    assert all("refused by a remembered approval rule" in _text(ends[f"r{i}"]) for i in range(3))
    assert not ends["again"]["isError"]


def test_a_corrupted_rules_file_is_a_warning_no_rule_applies_and_it_is_never_rewritten(tmp_path: Path) -> None:
    script = [{"toolCall": _call("bash", "b", command="touch hi.txt")}, {"text": "done"}]
    project, agent, env = _setup(tmp_path, script)
    rules_file = agent / "rpcd" / "approvals.json"
    rules_file.parent.mkdir()
    valid = json.dumps({"version": 1, "rules": [{"id": "r1", "project": os.path.realpath(project),
                                                 "toolName": "bash", "decision": "allow", "command": "touch *",
                                                 "createdAt": "2026-01-01T00:00:00.000Z"}]})
    corrupted = valid[:-5]
    rules_file.write_text(corrupted)
    asker = Asker({"decision": "allowAlways"})
    with _daemon(project, agent, env, asker) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
        listing = d.call("listApprovalRules")
        with pytest.raises(RpcError) as revoke:
            d.call("revokeApprovalRule", {"id": "r1"})
        log = list(d.log)
    warnings = [i["message"] for p in events_of(log, "session/diagnostics") for i in p["diagnostics"]
                if i["type"] == "warning"]
    assert any(str(rules_file) in w and "invalid JSON" in w for w in warnings)
    assert len(asker.asked) == 1  # the allow rule inside the broken file did not apply
    assert (project / "hi.txt").exists()  # allowAlways still allowed this call
    assert rules_file.read_text() == corrupted  # ...but nothing was written over the user's file
    assert listing["rules"] == [] and "invalid JSON" in listing["diagnostics"][0]["message"]
    assert revoke.value.data["errors"][0]["type"] == "ApprovalRulesError"
    rules_file.write_text(valid)  # the same rule, readable: now it decides
    repaired = Asker()
    with _daemon(project, agent, env, repaired) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
    assert repaired.asked == []


# -- bad answers -----------------------------------------------------------------------------------------


INVALID_ANSWERS = [{"decision": "yes"}, {"decision": 1}, {"decision": "allowOnce", "reason": 7}, "allowOnce", None]


def test_an_invalid_answer_is_a_rejection(tmp_path: Path) -> None:
    calls = [_call("bash", f"b{i}", command=f"touch ran{i}") for i in range(len(INVALID_ANSWERS))]
    project, agent, env = _setup(tmp_path, [{"toolCalls": calls}, {"text": "done"}])
    with _daemon(project, agent, env, Asker(*INVALID_ANSWERS)) as d:
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
        log = list(d.log)
    ends = _ends(log)
    for i in range(len(INVALID_ANSWERS)):
        assert not (project / f"ran{i}").exists()
        assert _text(ends[f"b{i}"]).startswith("Tool call rejected: the client's approval answer was invalid")


def test_an_error_reply_is_a_rejection(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    project, agent, env = _setup(tmp_path, _pending_script(marker))
    with _daemon(project, agent, env, None) as d:  # the e2e client answers unknown requests -32601
        d.initialize(APPROVE)
        d.call("prompt", {"text": "go"})
        log = list(d.log)
    assert not marker.exists()
    assert _text(_ends(log)["b"]) == "Tool call rejected: the client answered the approval request with an error"
