"""The model, thinking level and other setters against real ``pi --mode rpc`` (issue 30, items 2-3).

What a setter chose holds for the process's later sessions: Pi writes it into the global
``settings.json`` (its RPC mode does so for the queue modes, auto-compaction and auto-retry; its
interactive mode also for the model and thinking level, ``setModel(m, {persist: true})``), rpcd holds
the same keys in memory and writes nothing. So a ``newSession`` after the setters must start where
Pi's next session starts from what Pi wrote — same entries, same state — and rpcd's agent dir must
have no settings file at the end. And a model switch records ``thinking_level_change`` exactly as Pi.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_program import Step, run_pi, run_rpcd
from tests.pi_compat.test_turn_control_against_pi import _both

FAUX_ARGS = ("--provider", "faux", "--model", "faux-1")


def _local(*models: dict[str, Any]) -> dict[str, Any]:
    return {"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "not-used",
                                    "api": "openai-completions", "models": list(models)}}}


LOCAL = _local({"id": "m1"}, {"id": "r1", "reasoning": True})


def test_queue_modes_and_auto_flags_hold_for_the_next_session_as_pi_writes_them(pi_oracle: PiOracle,
                                                                                 tmp_path: Path) -> None:
    program: list[Step] = [("setSteeringMode", "all"), ("setFollowUpMode", "all"), ("setAutoCompaction", False),
                           ("setAutoRetry", False), ("newSession",), ("getState",)]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, [], program),
                     lambda: run_rpcd(tmp_path, [], program, model_args=FAUX_ARGS))
    assert ours["answers"] == pi["answers"]
    assert ours["answers"][-1]["data"] == {"model": "faux/faux-1", "thinkingLevel": "off", "steeringMode": "all",
                                           "followUpMode": "all", "autoCompactionEnabled": False}
    assert ours["state"]["autoRetryEnabled"] is False
    assert ours["entries"] == pi["entries"]
    assert pi["settings"] == {"steeringMode": "all", "followUpMode": "all", "compaction": {"enabled": False},
                              "retry": {"enabled": False}}  # what Pi wrote
    assert ours["settings"] is None  # rpcd wrote nothing


def test_a_chosen_model_and_thinking_level_start_the_next_session_as_pis_persisted_default(
        pi_oracle: PiOracle, tmp_path: Path) -> None:
    """rpcd starts on local/m1 (the first usable model: a models.json provider with a key), the client
    chooses local/r1 at ``low``; the new session starts there, as Pi's next session does from the
    ``defaultProvider``/``defaultModel``/``defaultThinkingLevel`` its persisting setters write."""
    chosen: list[Step] = [("getState",), ("setModel", "local", "r1"), ("setThinkingLevel", "low"), ("newSession",),
                          ("getState",)]
    persisted = {"defaultProvider": "local", "defaultModel": "r1", "defaultThinkingLevel": "low"}
    pi, ours = _both(
        lambda: run_pi(pi_oracle, tmp_path, [], [("newSession",), ("getState",)], model_args=(),
                       agent_files={"models.json": LOCAL, "settings.json": persisted}),
        lambda: run_rpcd(tmp_path, [], chosen, agent_files={"models.json": LOCAL}))
    assert ours["answers"][0]["data"]["model"] == "local/m1"
    assert ours["answers"][-1] == pi["answers"][-1]
    assert ours["answers"][-1]["data"]["model"] == "local/r1"
    assert ours["answers"][-1]["data"]["thinkingLevel"] == "low"
    assert ours["entries"] == pi["entries"] == [("model_change", "local", "r1"), ("thinking_level_change", "low")]
    assert ours["settings"] is None


def test_pis_rpc_mode_does_not_keep_a_chosen_model_for_its_next_session(pi_oracle: PiOracle, tmp_path: Path) -> None:
    """The deliberate difference (docs/pi-compat.md): Pi's ``set_model`` over RPC does not persist, so its
    next session goes back to its default; rpcd keeps the choice for the process (launch flags such as
    ``--model`` still decide every session, in both)."""
    program: list[Step] = [("getState",), ("setModel", "local", "r1"), ("newSession",), ("getState",)]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, [], program, agent_files={"models.json": LOCAL},
                                    model_args=()),
                     lambda: run_rpcd(tmp_path, [], program, agent_files={"models.json": LOCAL}))
    # Pi's next session goes back to a default, never to the chosen local/r1. Which default is Pi's own
    # race, at its start as at its new session: it resolves the model while the faux extension registers
    # its provider, so it lands on faux/faux-1 (the extension's) or on local/m1 (the first models.json
    # model), about one run in three on a 2-core machine.
    defaults = {"faux/faux-1", "local/m1"}
    assert pi["answers"][0]["data"]["model"] in defaults
    assert pi["answers"][-1]["data"]["model"] in defaults
    assert ours["answers"][-1]["data"]["model"] == "local/r1"
    assert pi["settings"] is None


SWITCHES: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    "no settings": ({"id": "m1"}, {}, FAUX_ARGS),
    "defaultThinkingLevel high": ({"id": "m1"}, {"defaultThinkingLevel": "high"}, FAUX_ARGS),
    "a reasoning m1 without off": ({"id": "m1", "reasoning": True, "thinkingLevelMap": {"off": None}},
                                   {"defaultThinkingLevel": "high"}, FAUX_ARGS),
    "a reasoning m1 with xhigh, per-model level": (
        {"id": "m1", "reasoning": True, "thinkingLevelMap": {"xhigh": "xhigh", "minimal": None}},
        {"modelThinkingLevels": {"local/m1": "low"}}, ("--provider", "local", "--model", "m1", "--thinking", "high")),
}


@pytest.mark.parametrize("name", list(SWITCHES))
def test_a_model_switch_records_the_thinking_level_as_pi(pi_oracle: PiOracle, tmp_path: Path, name: str) -> None:
    m1, settings, args = SWITCHES[name]
    files = {"models.json": _local(m1, {"id": "r1", "reasoning": True}), "settings.json": settings}
    program: list[Step] = [("setModel", "local", "m1"), ("getState",), ("setModel", "faux", "faux-1"), ("getState",),
                           ("setModel", "local", "r1"), ("setThinkingLevel", "xhigh"), ("setModel", "local", "m1"),
                           ("setModel", "faux", "faux-1"), ("getState",)]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, [], program, agent_files=files, model_args=args),
                     lambda: run_rpcd(tmp_path, [], program, agent_files=files, model_args=args))
    assert ours["entries"] == pi["entries"]
    assert ours["answers"] == pi["answers"]


def test_a_cycled_model_and_level_hold_for_the_next_session_as_a_set_one_does(tmp_path: Path) -> None:
    """Issue 30.2 names ``cycleModel`` beside ``setModel``: the model it moves to (and the level it sets)
    start the next session too, and nothing is written (rpcd alone: the setModel case above is Pi's)."""
    program: list[Step] = [("getState",), ("cycleModel",), ("setThinkingLevel", "low"), ("newSession",),
                           ("getState",)]
    ours = run_rpcd(tmp_path, [], program, agent_files={"models.json": LOCAL})
    first, (cycled, _), after = ours["answers"][0]["data"], ours["answers"][1]["data"], ours["answers"][-1]["data"]
    assert (first["model"], cycled) == ("local/m1", "local/r1")
    assert (after["model"], after["thinkingLevel"]) == ("local/r1", "low")
    assert ours["settings"] is None
