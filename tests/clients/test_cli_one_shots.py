"""rpcctl one-shots as a scripter uses them, against the real daemon: piped stdin merged into the
prompt as Pi's ``-p`` does, non-UTF-8 input and a closed stdout without tracebacks (exit 0/2/141),
sessions addressed by a partial id, ``export --force``, ``import -`` named after its session,
``trust add``, bare ``approvals``/``trust`` listing, Pi's daemon flags passed on, ``--help`` per
command with examples and every exit code."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rpcd.clients.options import EXIT_CODES, build_parser, daemon_args
from tests.clients.conftest import REPO, daemon_python, needs_daemon

pytestmark = needs_daemon


class Ctl:
    def __init__(self, root: Path, script: list[dict[str, Any]] | None = None) -> None:
        self.agent, self.project = root / "agent", root / "project"
        self.agent.mkdir(exist_ok=True)
        self.project.mkdir(exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if k not in ("RPCD_FAUX_SCRIPT", "PI_CODING_AGENT_DIR")}
        self.env["PYTHONPATH"] = str(REPO)
        if script is not None:
            (root / "script.json").write_text(json.dumps(script))
            self.env["RPCD_FAUX_SCRIPT"] = str(root / "script.json")

    def argv(self, *args: str) -> list[str]:
        return [daemon_python(), "-m", "rpcd.clients", "--agent-dir", str(self.agent), "--cwd", str(self.project),
                *args]

    def __call__(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
        done = subprocess.run(self.argv(*args), input=stdin, capture_output=True, env=self.env, cwd=self.project,
                              check=False, timeout=120)
        out = subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())
        assert "Traceback" not in out.stderr, out.stderr
        return out

    def json(self, *args: str, stdin: bytes = b"", code: int = 0) -> Any:
        done = self("--json", *args, stdin=stdin)
        assert done.returncode == code, (done.stdout, done.stderr)
        [line] = done.stdout.splitlines()
        return json.loads(line)


def test_piped_stdin_is_merged_into_the_prompt_and_a_dash_places_it(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    assert ctl.json("prompt", "review", "this", stdin=b"DIFF\n")["text"] == "echo: review this\n\nDIFF"
    placed = ctl.json("prompt", "summarize", "-", "briefly", stdin=b"  NOTES  \n")["text"]
    assert placed == "echo: summarize\n\nNOTES\n\nbriefly"
    assert ctl.json("prompt", "-", stdin=b"only stdin")["text"] == "echo: only stdin"
    empty = ctl("prompt", stdin=b"")
    assert empty.returncode == 2 and "the text is empty" in empty.stderr


def test_a_prompt_json_result_sums_the_cost_and_usage_of_every_reply_of_the_turn(tmp_path: Path) -> None:
    """Issue 37 M1: ``cost``/``usage`` are the whole turn's (a tool round, then the answer), ``text`` the
    last reply's, and the session is named — not only the first or last message's figures."""
    script = [{"toolCall": {"name": "ls", "arguments": {}, "id": "call_1"}, "cost": 0.25},
              {"text": "listed it", "cost": 0.5}]
    ctl = Ctl(tmp_path, script)
    result = ctl.json("prompt", "list the project")
    assert (result["stopReason"], result["text"], result["isError"]) == ("stop", "listed it", False)
    assert result["cost"] == 0.75
    entries = [json.loads(line) for line in Path(result["sessionFile"]).read_text().splitlines()]
    assert entries[0]["id"] == result["sessionId"]
    replies = [e["message"]["usage"] for e in entries
               if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert len(replies) == 2
    for key in ("input", "output", "totalTokens"):
        assert result["usage"][key] == sum(u[key] for u in replies) > 0, key


def test_non_utf8_input_is_replaced_with_a_warning_and_non_utf8_arguments_are_refused(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    replaced = ctl("prompt", "what", stdin=b"caf\xe9")
    assert replaced.returncode == 0 and "echo: what\n\ncaf\ufffd" in replaced.stdout
    assert "stdin is not UTF-8 (first bad byte at offset 3)" in replaced.stderr
    refused = subprocess.run([*ctl.argv(), "prompt", os.fsdecode(b"a\xff")], capture_output=True, text=True,
                             env=ctl.env, check=False, timeout=60)
    assert refused.returncode == 2 and "is not valid UTF-8" in refused.stderr and "Traceback" not in refused.stderr


def test_a_reader_that_goes_away_ends_the_run_with_141_and_no_traceback(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path, [{"text": "line\n" * 20000, "chunkSize": 200}])
    with subprocess.Popen(ctl.argv("prompt", "talk"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=ctl.env) as run:
        assert run.stdout is not None and run.stderr is not None
        assert run.stdout.readline() == b"line\n"
        run.stdout.close()  # `rpcctl prompt talk | head -1`
        assert run.wait(timeout=60) == 141
        assert b"Traceback" not in run.stderr.read()


def test_sessions_by_partial_id_export_force_and_import_from_stdin(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    first = ctl.json("prompt", "first")
    session, file = first["sessionId"], Path(first["sessionFile"])
    state = ctl.json("--session", session[:13], "state")  # Pi's --session <partial id>
    assert state["sessionFile"] == str(file)
    listing = ctl("sessions", "--all")
    assert listing.returncode == 0 and "cwd" in listing.stdout.splitlines()[0]
    assert str(ctl.project).replace(os.path.expanduser("~"), "~") in listing.stdout
    missing = ctl("--session", "ffffffff", "state")
    assert missing.returncode == 2 and "no session has an id starting with 'ffffffff'" in missing.stderr

    target = tmp_path / "branch.jsonl"
    assert ctl("--session", session, "export", "jsonl", str(target)).returncode == 0
    refused = ctl("--session", session, "export", "jsonl", str(target))
    assert refused.returncode == 3 and "never overwritten" in refused.stderr
    target.write_text("stale")
    forced = ctl.json("--session", session, "export", "jsonl", str(target), "--force")
    assert forced["replaced"] is True and target.read_text().startswith('{"type":"session"')
    assert not [p for p in tmp_path.iterdir() if ".rpcctl-" in p.name]  # no scratch file left

    imported = ctl.json("import", "-", stdin=file.read_bytes())
    assert Path(imported["sessionFile"]).name == file.name.replace(".jsonl", "-1.jsonl")  # named as the session
    assert ctl.json("resume", session[:13])["sessionFile"] in (str(file), imported["sessionFile"])


def test_one_shot_new_names_no_file_and_trust_approvals_list_bare(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    created = ctl.json("new")
    assert created["saved"] is False and created["sessionFile"] is None
    human = ctl("new")
    assert "file: (not saved)" in human.stdout and ".jsonl" not in human.stdout
    assert ctl.json("trust") == {"decisions": [], "diagnostics": []}  # bare `trust` lists
    saved = ctl.json("trust", "add", str(ctl.project))
    assert saved == {"decision": {"directory": os.path.realpath(ctl.project), "trusted": True}}
    assert json.loads((ctl.agent / "trust.json").read_text()) == {os.path.realpath(ctl.project): True}
    assert ctl.json("approvals")["rules"] == []  # bare `approvals` lists
    assert ctl("--timeout", "-1", "state").returncode == 2


def test_pi_flags_reach_the_daemon(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--model", "faux/faux-1", "--thinking", "high", "--provider", "faux",
                                      "--api-key", "k", "--session-dir", "/s", "-t", "read,bash", "-nc", "-xt",
                                      "write", "--flag", "x=1", "--sandbox", "workspace-write",
                                      "--sandbox-network", "on", "state"])
    assert daemon_args(args) == ["--session-dir", "/s", "--provider", "faux", "--model", "faux/faux-1",
                                 "--thinking", "high", "--api-key", "k", "--tools", "read,bash",
                                 "--exclude-tools", "write", "--sandbox", "workspace-write", "--sandbox-network",
                                 "on", "--no-context-files", "--flag", "x=1"]
    ctl = Ctl(tmp_path)
    state = ctl.json("--model", "faux/faux-1", "--thinking", "low", "--session-dir", str(tmp_path / "s"), "state")
    assert state["model"] == {"provider": "faux", "modelId": "faux-1"}
    assert state["sessionFile"].startswith(str(tmp_path / "s"))
    assert state["sandbox"]["mode"] == "off"
    # the sandbox: passed on, and shown by `state` (enforced by bwrap/Landlock, or why it cannot be)
    sandboxed = ctl.json("--sandbox", "read-only", "state")["sandbox"]
    assert (sandboxed["mode"], sandboxed["network"]) == ("read-only", False)
    line = next(x for x in ctl("--sandbox", "read-only", "state").stdout.splitlines() if x.startswith("sandbox"))
    assert line.split(None, 1)[1].startswith("read-only (")


def test_json_chat_prints_each_turns_result_and_thinking_off_a_terminal_is_framed(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path, [{"thinking": "let me see", "text": "first answer"},
                         {"thinking": "pondering", "text": "second answer"}])
    chatted = ctl("--json", "chat", stdin=b"one\n")
    assert chatted.returncode == 0, chatted.stderr
    [turn] = [json.loads(line) for line in chatted.stdout.splitlines()]  # the reply is kept, one document
    assert (turn["text"], turn["isError"], turn["stopReason"]) == ("first answer", False, "stop")
    shown = ctl("--show-thinking", "prompt", "two")  # stdout is a pipe: thinking framed, the answer after
    assert shown.stdout == "<thinking>\nlet me see\n</thinking>\nfirst answer\n", shown.stdout


def test_chat_runs_pis_slash_commands_and_sends_none_of_them_to_the_model(tmp_path: Path) -> None:
    """Issue 37 M5: /compact, /export, /import, /trust, /models, /session and an unknown /word were sent
    to the model as prompts; each is chat's own now (an unknown word refused), read from a pipe too."""
    ctl = Ctl(tmp_path)
    out = tmp_path / "out.jsonl"
    lines = ["one", "/compact", f"/export {out}", f"/import {out}", "/trust", "/models", "/session", "/nonsense x",
             "two"]
    chatted = ctl("chat", stdin="\n".join(lines).encode() + b"\n")
    assert chatted.returncode == 0, chatted.stderr
    replies = [line for line in chatted.stdout.splitlines() if line.startswith("echo: ")]
    assert replies == ["echo: one", "echo: one", "echo: two"]  # the import's conversation shown once; no /word
    assert "Nothing to compact (session too small)" in chatted.stderr  # Pi's refusal, not a model turn
    assert f"exported to {out}" in chatted.stdout and out.is_file()
    assert json.loads((ctl.agent / "trust.json").read_text()) == {os.path.realpath(ctl.project): True}
    assert "faux-1" in chatted.stdout and "messages  " in chatted.stdout  # /models, /session
    assert "unknown command /nonsense" in chatted.stderr


def test_a_session_held_by_another_process_says_so_without_restart_advice(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    file = ctl.json("prompt", "keep")["sessionFile"]
    (tmp_path / "slow.json").write_text(json.dumps([{"text": "x" * 300, "chunkSize": 1, "chunkDelay": 0.2}]))
    slow_env = ctl.env | {"RPCD_FAUX_SCRIPT": str(tmp_path / "slow.json")}
    with subprocess.Popen(ctl.argv("--resume", file, "prompt", "hold it"), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=slow_env) as holder:
        try:
            assert holder.stdout is not None
            holder.stdout.read(1)  # its turn streams: it holds the session file
            refused = ctl("--resume", file, "state")
            assert refused.returncode == 3 and "SessionLocked" in refused.stderr, refused.stderr
            assert "restart" not in refused.stderr and "another rpcd process" in refused.stderr
        finally:
            holder.kill()


@pytest.mark.parametrize("command", ["prompt", "sessions", "export", "chat", "models"])
def test_help_of_a_command_is_its_own_with_examples_and_every_exit_code(command: str, capsys: Any) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = capsys.readouterr().out
    assert "--agent-dir" not in text and "--trust-policy" not in text  # the globals are not repeated
    examples = text.split("examples:\n")[1].split("\n\n")[0].splitlines()
    assert examples and all("rpcctl " in e and command in e for e in examples)
    for code, _ in EXIT_CODES:
        assert f"\n  {code} " in text
