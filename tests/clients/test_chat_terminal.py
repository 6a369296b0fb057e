"""``rpcctl chat`` at a real terminal (tmux), screen captures asserted: a paste and Shift-Enter /
``\\`` lines stay one prompt; Pi's pickers (``/model``, ``/thinking``, ``/resume``) chosen with
the keys; a tool call drawn as a block with its diff before the approval question and its exit
code after; keys typed while a reply streams steer it without being echoed into it; an unknown
``/word`` is refused; a resumed chat shows the conversation so far and a banner naming the model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.clients.conftest import REPO, daemon_python, needs_daemon
from tests.clients.tmux import Tmux

pytestmark = needs_daemon
PROMPT = r"^› "


def _chat(tmp_path: Path, closing: list[Tmux], script: list[dict[str, Any]] | None, *extra: str,
          name: str = "t", models: dict[str, Any] | None = None) -> Tmux:
    project, agent = tmp_path / "project", tmp_path / "agent"
    project.mkdir(exist_ok=True)
    agent.mkdir(exist_ok=True)
    if models is not None:
        (agent / "models.json").write_text(json.dumps(models))
    env = {"PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
    if script is not None:
        (tmp_path / f"script-{name}.json").write_text(json.dumps(script))
        env["RPCD_FAUX_SCRIPT"] = str(tmp_path / f"script-{name}.json")
    command = [daemon_python(), "-m", "rpcd.clients", "--agent-dir", str(agent), "--cwd", str(project), *extra,
               "chat"]
    directory = tmp_path / name
    directory.mkdir()
    tmux = Tmux(directory, command, env=env, width=120, height=50)
    closing.append(tmux)
    return tmux


def _user_messages(tmux: Tmux) -> int:
    tmux.type_line("/session")
    screen = tmux.wait_for(r"^messages\s+\d+ yours")
    return int(re.findall(r"^messages\s+(\d+) yours", screen, re.M)[-1])


def test_a_paste_and_continued_lines_are_one_prompt_each(tmp_path: Path, tmux_ok: None,
                                                         closing: list[Tmux]) -> None:
    tmux = _chat(tmp_path, closing, None)
    tmux.wait_for(PROMPT)
    tmux._run("set-buffer", "-b", "p", "first line\nsecond line\nthird line")
    tmux._run("paste-buffer", "-p", "-b", "p", "-t", "t")  # bracketed, as a terminal pastes
    tmux.send("Enter")
    tmux.wait_for(r"echo: first line")
    tmux.wait_for(PROMPT, count=2)
    tmux.send("-l", "alpha")
    tmux.send("-l", "\x1b[13;2u")  # Shift-Enter as a CSI-u terminal reports it
    tmux.send("-l", "beta\\")  # and a backslash at the end continues the prompt
    tmux.send("Enter")
    tmux.wait_for(r"^… ")
    tmux.type_line("gamma")
    screen = tmux.wait_for(r"echo: alpha")
    assert "beta" in screen.split("echo: alpha", 1)[1] and "gamma" in screen.split("echo: alpha", 1)[1]
    tmux.wait_for(PROMPT, count=3)
    assert _user_messages(tmux) == 2  # two prompts, not six
    assert "echo: second line" not in tmux.screen() and "echo: beta" not in tmux.screen()


def test_pickers_for_model_thinking_and_resume(tmp_path: Path, tmux_ok: None, closing: list[Tmux]) -> None:
    models = {"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                                      "apiKey": "k", "models": [{"id": "thinker", "name": "Thinker",
                                                                 "reasoning": True}]}}}
    tmux = _chat(tmp_path, closing, None, models=models)
    screen = tmux.wait_for(PROMPT)
    # the banner names the model (models.json's comes first, as Pi orders them), thinking and approval
    assert "rpcd chat · local/thinker · thinking " in screen and " · approval ask-writes · " in screen
    tmux.type_line("/model")
    tmux.wait_for(r"→ local/thinker")
    tmux.send("-l", "zzz")  # Pi's fuzzy filter as you type
    tmux.wait_for(r"\(nothing matches\)")
    tmux.send("BSpace", "BSpace", "BSpace")
    tmux.send("-l", "thnk")
    tmux.wait_for(r"filter: thnk")
    tmux.wait_for(r"→ local/thinker")
    tmux.send("Enter")
    tmux.wait_for(r"^model: local/thinker")
    tmux.type_line("/thinking")
    tmux.wait_for(r"thinking level")
    tmux.send("Down", "Down", "Enter")
    screen = tmux.wait_for(r"^thinking level: \w+")
    level = re.findall(r"^thinking level: (\w+)", screen, re.M)[-1]
    assert level != "off"
    tmux.type_line("/nonsense here")
    screen = tmux.wait_for(r"unknown command /nonsense")
    assert "echo: /nonsense" not in screen  # refused, never sent to the model
    tmux.type_line("/quit")
    tmux.wait_for(r"\[exited 0\]")


def test_a_resumed_chat_shows_its_conversation_and_resume_picks_with_keys(tmp_path: Path, tmux_ok: None,
                                                                          closing: list[Tmux]) -> None:
    first = _chat(tmp_path, closing, None, name="one")
    first.wait_for(PROMPT)
    first.type_line("remember the blue door")
    first.wait_for(r"echo: remember the blue door")
    first.type_line("/new")
    first.wait_for(r"^new: session")
    first.type_line("an unrelated matter")
    first.wait_for(r"echo: an unrelated matter")
    first.type_line("/resume")
    first.wait_for(r"resume which session\?")
    first.send("-l", "blue")
    first.wait_for(r"→ remember the blue door")
    first.send("Enter")
    first.wait_for(r"^resume: session")
    screen = first.wait_for(r"echo: remember the blue door", count=2)  # once as it was said, once resumed
    after = screen.rsplit("resume: session", 1)[1]
    assert "› remember the blue door" in after and "echo: remember the blue door" in after
    first.type_line("/quit")
    first.wait_for(r"\[exited 0\]")
    again = _chat(tmp_path, closing, None, "--continue", name="two")  # the session used last
    # not PROMPT: the history's own "› an unrelated matter" matches it before the reply below it is drawn
    screen = again.wait_for(r"echo: an unrelated matter")
    assert "› an unrelated matter" in screen and "echo: an unrelated matter" in screen


def test_tool_blocks_show_the_diff_before_approval_and_the_exit_code_after(tmp_path: Path, tmux_ok: None,
                                                                           closing: list[Tmux]) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    script = [{"toolCalls": [{"name": "edit", "arguments": {"path": "notes.txt", "edits": [
                  {"oldText": "beta", "newText": "BETA, reviewed"}]}}]},
              {"toolCalls": [{"name": "bash", "arguments": {"command": "echo out; echo err >&2; exit 4"}}]},
              {"text": "All **done**."}]
    tmux = _chat(tmp_path, closing, script)
    tmux.wait_for(PROMPT)
    tmux.type_line("tidy up")
    screen = tmux.wait_for(r"allow this call\?")
    before = screen.split("allow this call?")[0]
    assert "● edit  notes.txt" in before and "-beta" in before and "+BETA, reviewed" in before
    colored = tmux._run("capture-pane", "-p", "-e", "-t", "t")
    assert re.search(r"\x1b\[[0-9;]*31m-beta", colored) and re.search(r"\x1b\[[0-9;]*32m\+BETA", colored)
    tmux.send("Enter")  # "Yes, once"
    screen = tmux.wait_for(r"● bash  echo out; echo err >&2; exit 4")
    tmux.wait_for(r"allow this call\?")
    tmux.send("Enter")
    screen = tmux.wait_for(r"All done\.")
    assert re.search(r"│ out", screen) and re.search(r"│ err", screen) and "└ exit 4" in screen
    assert (tmp_path / "project" / "notes.txt").read_text() == "alpha\nBETA, reviewed\ngamma\n"
    assert "[event" not in screen and "tool_execution" not in screen  # no protocol lines for a person


def test_keys_typed_while_a_reply_streams_steer_it_and_are_not_echoed(tmp_path: Path, tmux_ok: None,
                                                                     closing: list[Tmux]) -> None:
    slow = [{"text": "tick " * 300, "chunkSize": 5, "chunkDelay": 0.04}, {"text": "steered reply"}]
    tmux = _chat(tmp_path, closing, slow)
    tmux.wait_for(PROMPT)
    tmux.type_line("talk slowly")
    tmux.wait_for(r"tick tick tick")
    tmux.send("-l", "zebra")
    tmux.wait_for(r"› zebra▏")  # shown under the reply, as typed
    tmux.send("Enter")
    tmux.wait_for(r"↳ steering: zebra")
    tmux.wait_for(PROMPT, count=2, timeout=90)
    reply = tmux.screen().split("talk slowly", 1)[1]
    assert "zebra" not in reply.split("↳ steering")[0].replace("› zebra▏", "")  # never echoed into the reply
