"""``rpcctl chat`` at a real terminal (tmux): Ctrl-C aborts a streaming reply and the same session
takes the next prompt, Ctrl-C twice at an idle prompt exits 130, readline history survives a
restart (per agent dir), thinking streams dimmed and ``/thinking`` hides it, and the startup's
diagnostics are shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.clients.conftest import REPO, daemon_python, needs_daemon
from tests.clients.tmux import Tmux

pytestmark = needs_daemon


def _chat(tmp_path: Path, script: dict[str, Any] | list[dict[str, Any]], *extra: str,
          name: str = "t") -> tuple[Tmux, Path, Path]:
    project, agent = tmp_path / "project", tmp_path / "agent"
    project.mkdir(exist_ok=True)
    agent.mkdir(exist_ok=True)
    script_file = tmp_path / f"script-{name}.json"
    script_file.write_text(json.dumps(script))
    env = {"RPCD_FAUX_SCRIPT": str(script_file), "PYTHONPATH": str(REPO), "TERM": "xterm"}
    command = [daemon_python(), "-P", "-m", "rpcd.clients", "--agent-dir", str(agent), "--cwd", str(project),
               *extra, "chat"]
    directory = tmp_path / name
    directory.mkdir()
    return Tmux(directory, command, env=env), project, agent


def test_ctrl_c_mid_reply_aborts_the_turn_and_the_same_session_answers_the_next_prompt(
    tmp_path: Path, tmux_ok: None, closing: list[Tmux]
) -> None:
    slow = {"steps": [{"text": "tick " * 400, "chunkSize": 5, "chunkDelay": 0.05}], "chunkDelay": 0}
    tmux, _, _ = _chat(tmp_path, slow)
    closing.append(tmux)
    tmux.wait_for(r"^› ")
    tmux.type_line("talk for a while")
    tmux.wait_for(r"tick tick tick")
    tmux.send("C-c")
    screen = tmux.wait_for(r"\(turn aborted\)")
    assert "^C: aborting the turn" in screen
    assert "HOST_DISPOSED" not in screen
    tmux.wait_for(r"^› ", count=2)
    tmux.type_line("second")  # the script is used up: the default echo reply
    tmux.wait_for(r"echo: second")
    tmux.type_line("/state")
    tmux.wait_for(r"^messages\s+4")  # the same session: both turns in it
    tmux.type_line("/quit")
    tmux.wait_for(r"\[exited 0\]")


def test_ctrl_c_twice_at_an_idle_prompt_exits_130_and_once_only_drops_the_line(
    tmp_path: Path, tmux_ok: None, closing: list[Tmux]
) -> None:
    tmux, _, _ = _chat(tmp_path, [])
    closing.append(tmux)
    tmux.wait_for(r"^› ")
    tmux.send("-l", "half typed")
    tmux.send("C-c")
    tmux.wait_for(r"Ctrl-C again to quit")
    tmux.type_line("whole")  # the half-typed line is gone: only "whole" is sent
    screen = tmux.wait_for(r"echo: whole")
    assert "echo: half typed" not in screen
    tmux.wait_for(r"^› ", count=3)  # idle again: the reply is shown before its turn has ended
    tmux.send("C-c")
    tmux.wait_for(r"Ctrl-C again to quit", count=2)
    tmux.send("C-c")
    tmux.wait_for(r"\[exited 130\]")


def test_history_is_kept_per_agent_dir_across_restarts(tmp_path: Path, tmux_ok: None, closing: list[Tmux]) -> None:
    tmux, _, agent = _chat(tmp_path, [], name="one")
    closing.append(tmux)
    tmux.wait_for(r"^› ")
    tmux.type_line("remember me")
    tmux.wait_for(r"echo: remember me")
    tmux.type_line("/quit")
    tmux.wait_for(r"\[exited 0\]")
    assert "remember me" in (agent / "rpcd" / "chat_history").read_text()
    again, _, _ = _chat(tmp_path, [], name="two")
    closing.append(again)
    again.wait_for(r"^› ")
    again.send("Up", "Up")  # readline recalls the previous run's lines (/quit, then the prompt; no ^[[A)
    again.send("Enter")
    screen = again.wait_for(r"echo: remember me")
    assert "^[[A" not in screen


def test_thinking_streams_dimmed_and_slash_thinking_hides_it(tmp_path: Path, tmux_ok: None,
                                                            closing: list[Tmux]) -> None:
    script = [{"thinking": "pondering deeply", "text": "the answer"},
              {"thinking": "secret musing", "text": "second answer"}]
    tmux, _, _ = _chat(tmp_path, script)
    closing.append(tmux)
    tmux.wait_for(r"^› ")
    tmux.type_line("think")
    tmux.wait_for(r"the answer")
    colored = tmux._run("capture-pane", "-p", "-e", "-t", "t")
    assert any("\x1b[2" in line and "pondering deeply" in line for line in colored.splitlines())  # dimmed
    tmux.wait_for(r"^› ", count=2)  # idle again: a line typed while the reply ends would steer it
    tmux.type_line("/show-thinking off")
    tmux.wait_for(r"thinking hidden")
    tmux.type_line("again")
    screen = tmux.wait_for(r"second answer")
    assert "secret musing" not in screen
    tmux.type_line("/quit")
    tmux.wait_for(r"\[exited 0\]")


def test_startup_diagnostics_are_shown_in_chat(tmp_path: Path, tmux_ok: None, closing: list[Tmux]) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text("{not json")
    tmux, _, _ = _chat(tmp_path, [])
    closing.append(tmux)
    screen = tmux.wait_for(r"^› ")
    assert "[startup] " in screen and "models.json" in screen, screen


def test_ctrl_c_during_a_one_shot_prompt_aborts_the_turn_saves_it_and_exits_130(
    tmp_path: Path, tmux_ok: None, closing: list[Tmux]
) -> None:
    project, agent = tmp_path / "project", tmp_path / "agent"
    project.mkdir()
    agent.mkdir()
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"steps": [{"text": "tock " * 400, "chunkSize": 5, "chunkDelay": 0.05}]}))
    command = [daemon_python(), "-P", "-m", "rpcd.clients", "--agent-dir", str(agent), "--cwd", str(project),
               "--yes", "prompt", "go on"]
    directory = tmp_path / "oneshot"
    directory.mkdir()
    tmux = Tmux(directory, command, env={"RPCD_FAUX_SCRIPT": str(script), "PYTHONPATH": str(REPO)})
    closing.append(tmux)
    tmux.wait_for(r"tock tock tock")
    tmux.send("C-c")
    tmux.wait_for(r"\[exited 130\]")
    [saved] = list((agent / "sessions").rglob("*.jsonl"))
    entries = [json.loads(line) for line in saved.read_text().splitlines()]
    assistant = [e["message"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    assert assistant and assistant[-1]["stopReason"] == "aborted"
