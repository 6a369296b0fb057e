"""Pipelined session calls take effect in the session current at their *arrival* (issue 13.1).

Everything here is written to the real daemon in ONE write, before any answer is read: each call
that acts on "the current session" must take its place in the host's FIFO when it is read, so
its effect lands in the session that the replacements before it (and only those) made current.
The probes that broke: ``prompt`` then ``newSession`` put the prompt in the *new* session's file;
``[prompt C, clone, prompt D]`` put C in the clone and refused D (-32040); an ``abort`` right
behind a ``prompt`` did nothing. The property test writes random such sequences.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.driver import Daemon
from tests.e2e.projects import read_jsonl

SESSION_BUSY = -32040
SESSION_NOT_SAVED = -32034
REPLACEMENTS = ("newSession", "clone")


def user_texts(path: str | None) -> list[str]:
    if path is None or not Path(path).exists():
        return []
    return [
        block["text"]
        for e in read_jsonl(path)
        if e.get("type") == "message" and e["message"]["role"] == "user"
        for block in e["message"]["content"]
        if block.get("type") == "text"
    ]


def names_in(entries: Sequence[dict[str, Any]]) -> list[str]:
    return [e["name"] for e in entries if e.get("type") == "session_info"]


def model_changes(entries: Sequence[dict[str, Any]]) -> int:
    return sum(1 for e in entries if e.get("type") == "model_change")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        d.initialize()
        d.call("prompt", {"text": "warm up"})  # the startup session is on disk: it can be cloned
        yield d


def pipelined(d: Daemon, calls: Sequence[tuple[str, dict[str, Any] | None]]) -> list[dict[str, Any]]:
    """Write every call in one write; return their responses in arrival order."""
    first = 10_000 + len(d.responses()) * 100
    ids = list(range(first, first + len(calls)))
    d.send_all(
        {"jsonrpc": "2.0", "id": i, "method": method, **({"params": params} if params is not None else {})}
        for i, (method, params) in zip(ids, calls, strict=True)
    )
    return [d.wait(i) for i in ids]


def test_a_prompt_pipelined_before_new_session_lands_in_the_session_current_at_its_arrival(daemon: Daemon) -> None:
    before = daemon.call("getState")["sessionFile"]
    for run in range(5):
        prompt, replaced = pipelined(daemon, [("prompt", {"text": f"A{run}"}), ("newSession", {})])
        assert "result" in prompt, prompt
        assert f"A{run}" in user_texts(before)
        assert f"A{run}" not in user_texts(replaced["result"].get("sessionFile"))
        before = replaced["result"]["sessionFile"]
        daemon.call("prompt", {"text": f"saved {run}"})  # the next round's session is on disk


def test_prompt_clone_prompt_pipelined_each_land_where_they_arrived(daemon: Daemon) -> None:
    original = daemon.call("getState")["sessionFile"]
    c, clone, d = pipelined(daemon, [("prompt", {"text": "C"}), ("clone", {}), ("prompt", {"text": "D"})])
    assert "result" in c and "result" in clone and "result" in d, (c, clone, d)
    assert "C" in user_texts(original) and "D" not in user_texts(original)
    clone_file = clone["result"]["sessionFile"]
    assert user_texts(clone_file)[-1] == "D"  # C may be copied into the clone (it was cloned after C)


def test_an_abort_pipelined_right_behind_a_prompt_aborts_that_prompt(daemon: Daemon) -> None:
    for run in range(5):
        prompt, abort = pipelined(daemon, [("prompt", {"text": f"stop {run}"}), ("abort", None)])
        assert abort.get("result", "error") is None, abort
        assert prompt["result"] == {"stopReason": "aborted"}


def test_an_abort_pipelined_behind_a_prompt_that_compacts_first_aborts_that_prompt(tmp_path: Path) -> None:
    """The probe's long prompt: after an aborted turn over the compaction threshold, the next prompt
    compacts before its turn starts, and the abort behind it lands during that compaction. It must
    abort the prompt (recorded, the model not asked), not only the compaction."""
    slow = {"text": "s", "repeat": 2_000, "chunkSize": 1, "chunkDelay": 0.005}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"contextWindow": 6_000, "steps": [{"text": "hi"}, slow, slow,
                                                                        {"text": "the whole reply"}]}))
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"compaction": {"reserveTokens": 1_000,
                                                                                       "keepRecentTokens": 800}}))
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path),
                env={"RPCD_FAUX_SCRIPT": str(script)}) as d:
        d.initialize()
        d.call("prompt", {"text": "warm up"})
        first = d.start("prompt", {"text": "long " + "x" * 30_000})  # ~7,500 tokens: over 6,000 - 1,000
        d.wait_for(lambda log: any(m.get("method") == "session/event" and m["params"]["event"]["type"]
                                   == "message_update" and m["params"]["event"]["assistantMessageEvent"]
                                   .get("delta") == "s" for m in log))
        d.call("abort")  # mid-reply: a run that ended aborted is not compacted after it
        assert d.wait(first)["result"] == {"stopReason": "aborted"}
        prompt, abort = pipelined(d, [("prompt", {"text": "second"}), ("abort", None)])
        state = d.call("getState")
        events = [m["params"]["event"] for m in d.log if m.get("method") == "session/event"]
    assert abort.get("result", "error") is None, abort
    assert [e["aborted"] for e in events if e["type"] == "compaction_end"] == [True]
    assert prompt["result"] == {"stopReason": "aborted"}
    assert user_texts(state["sessionFile"])[-1] == "second"
    assert "the whole reply" not in Path(state["sessionFile"]).read_text()


# -- the property -----------------------------------------------------------------------------------

OPS = ("newSession", "clone", "prompt", "abort", "setSessionName", "setModel", "getTree")
op_lists = st.lists(st.sampled_from(OPS), min_size=2, max_size=10)


def test_random_pipelined_sequences_land_every_effect_in_the_session_current_at_arrival(tmp_path: Path) -> None:
    """Random sequences of replacements, prompts, aborts, names, models and tree reads in one write:
    every effect lands in the session current at its request's arrival position (a clone carries what
    its source had when the clone arrived, never what came later)."""
    serial = itertools.count()
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        d.initialize()

        @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(op_lists)
        def check(ops: list[str]) -> None:
            d.call("prompt", {"text": f"warm {next(serial)}"})  # the session current at the start is on disk
            start = d.call("getState")
            calls: list[tuple[str, dict[str, Any] | None]] = []
            for op in ops:
                n = next(serial)
                params: dict[str, Any] | None = {
                    "newSession": {},
                    "clone": {},
                    "prompt": {"text": f"t{n}"},
                    "abort": None,
                    "setSessionName": {"name": f"n{n}"},
                    "setModel": {"provider": "faux", "modelId": "faux-1"},
                    "getTree": None,
                }[op]
                calls.append((op, params))
            responses = pipelined(d, calls)
            verify(start, calls, responses)

        check()


def verify(
    start: dict[str, Any], calls: list[tuple[str, dict[str, Any] | None]], responses: list[dict[str, Any]]
) -> None:
    """Replay the arrival order: which session was current for each call, and what it must show."""
    files = {start["sessionId"]: start["sessionFile"]}
    parent: dict[str, tuple[str, int]] = {}  # clone -> (its source, the clone's position)
    current = start["sessionId"]
    at: list[str] = []
    for position, ((method, _), response) in enumerate(zip(calls, responses, strict=True)):
        at.append(current)
        if method in REPLACEMENTS and "result" in response:
            new = response["result"]["sessionId"]
            files[new] = response["result"].get("sessionFile")
            if method == "clone":
                parent[new] = (current, position)
            current = new
        elif method in REPLACEMENTS:
            assert method == "clone" and response["error"]["code"] == SESSION_NOT_SAVED, response

    def may_hold(session: str, origin: str, position: int) -> bool:
        """Whether ``session`` may show an effect made in ``origin`` at ``position``."""
        while session != origin:
            if session not in parent:
                return False
            session, cloned_at = parent[session]
            if cloned_at < position:
                return False  # cloned before the effect: it must not carry it
        return True

    texts = {s: user_texts(f) for s, f in files.items()}
    for position, ((method, params), response) in enumerate(zip(calls, responses, strict=True)):
        session = at[position]
        if method == "prompt":
            assert params is not None
            if "error" in response:
                assert response["error"]["code"] == SESSION_BUSY, response
                assert all(params["text"] not in t for t in texts.values())
                continue
            if response["result"]["stopReason"] == "stop":
                assert params["text"] in texts[session], (position, session, calls, responses)
            for other, seen in texts.items():
                if params["text"] in seen:
                    assert may_hold(other, session, position), (position, other, session, calls, responses)
        elif method == "abort":
            assert response.get("result", "error") is None, response
            previous = position - 1
            if previous >= 0 and calls[previous][0] == "prompt" and at[previous] == session \
                    and "result" in responses[previous]:
                assert responses[previous]["result"]["stopReason"] == "aborted", (position, calls, responses)
        elif method in ("setSessionName", "setModel"):
            assert "result" in response, response
        elif method == "getTree":
            entries = response["result"]["entries"]
            expected = [
                p["name"] for i, (m, p) in enumerate(calls[:position])
                if m == "setSessionName" and p is not None and may_hold(session, at[i], i)
            ]
            assert names_in(entries)[-len(expected):] == expected if expected else True, (position, calls, responses)
            assert set(names_in(entries)) & {
                p["name"] for i, (m, p) in enumerate(calls) if m == "setSessionName" and p is not None
                and not (i < position and may_hold(session, at[i], i))
            } == set(), (position, calls, responses)
    # setModel: between two tree reads of one session, its model changes grew by the calls between them.
    reads = [(i, at[i]) for i, (m, _) in enumerate(calls) if m == "getTree"]
    for (a, session_a), (b, session_b) in itertools.pairwise(reads):
        if session_a != session_b:
            continue
        grown = model_changes(responses[b]["result"]["entries"]) - model_changes(responses[a]["result"]["entries"])
        assert grown == sum(1 for i in range(a + 1, b) if calls[i][0] == "setModel" and at[i] == session_a), (
            a, b, calls, json.dumps(responses)[:2000]
        )
