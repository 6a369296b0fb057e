"""``rpcd --mode rpc`` on its own (no Pi needed): what the differential programs cannot show — the
bytes on the wire, Pi's start and its refusals, rpcd's deliberate differences (docs/pi-compat.md),
the bounds, dialogs that time out or outlive the client, and a replacement that fails after the old
session was torn down (fail closed, answered in Pi's shape)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.driver import DAEMON, REPO, daemon_env
from tests.pirpc.wire import Wire, rpcd_wire

HERE = Path(__file__).resolve().parent


def _answers(wire: Wire) -> list[dict[str, Any]]:
    return [x for x in wire.lines if x.get("type") == "response"]


def _start(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A start that fails before a line is read: ``rpcd --mode rpc`` with stdin closed at once."""
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    env = daemon_env({"PI_CODING_AGENT_DIR": str(agent), "HOME": str(agent)})
    return subprocess.run([*DAEMON, "--mode", "rpc", *args], input="", capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60, check=False)


def test_lines_are_json_stringify_and_lf_only(tmp_path: Path) -> None:
    """Answers are ``JSON.stringify`` + LF: UTF-8 as is (U+2028 inside a string, not a record separator),
    keys in Pi's order, no ``id`` when the command had none; a CRLF line, a line split across writes and
    a last line without LF are commands like any other."""
    with rpcd_wire(tmp_path, [{"text": "é\u2028 done"}]) as wire:
        wire.ready()
        wire.write(b'{"id":"a","type":"prompt","message":"x\\u2028y"}\r\n')
        wire.answer("a")
        wire.wait_for(lambda lines: any(x.get("type") == "agent_settled" for x in lines))
        wire.idle()
        wire.write(b'{"id":"b","type":"get_last_')
        wire.write(b'assistant_text"}\n{"type":"abort"}\n{"id":"c","type":"get_state"}')
        wire.close_stdin()
        wire.wait_exit()
    raw = {json.loads(r).get("id"): r for r in wire.raw if b'"type":"response"' in r}
    assert raw["b"] == '{"id":"b","type":"response","command":"get_last_assistant_text","success":true,' \
                      '"data":{"text":"é\u2028 done"}}'.encode()
    assert raw[None] == b'{"type":"response","command":"abort","success":true}'
    assert raw["c"].startswith(b'{"id":"c","type":"response","command":"get_state","success":true,"data":{"model":')
    user = next(x for x in wire.lines if x.get("type") == "message_start")["message"]
    assert user["content"] == [{"type": "text", "text": "x\u2028y"}]


def test_a_null_line_is_answered_where_pi_exits_with_a_type_error(tmp_path: Path) -> None:
    """Pi reads ``command.id`` of ``null`` twice (the second time in its error handler) and dies of the
    unhandled TypeError; rpcd answers it as any JSON value that is not a command, and goes on."""
    with rpcd_wire(tmp_path, []) as wire:
        wire.ready()
        wire.write(b'null\n{"id":1,"type":"get_state"}\n')
        wire.answer(1)
    assert _answers(wire)[0] == {"type": "response", "success": False, "error": "Unknown command: undefined"}
    assert wire.proc.returncode == 0


def test_an_oversized_line_is_drained_and_answered(tmp_path: Path) -> None:
    with rpcd_wire(tmp_path, [], "--max-message-bytes", "200") as wire:
        wire.ready()
        wire.write(b'{"type":"prompt","message":"' + b"x" * 5000 + b'"}\n{"id":2,"type":"get_state"}\n')
        wire.answer(2)
    refused = _answers(wire)[0]
    assert refused == {"type": "response", "command": "parse", "success": False,
                       "error": "Failed to parse command: the line is longer than the limit of 200 bytes "
                                "(--max-message-bytes)"}
    assert not any(x.get("type") == "agent_start" for x in wire.lines)  # nothing of it ran


def test_startup_refusals_are_pis(tmp_path: Path) -> None:
    """As Pi: the start fails before a line is read, ``Error: …`` on stderr, exit 1."""
    cases = {("--session", "no-such-id"): "Error: No session found matching 'no-such-id'",
             ("--name", "   "): "Error: --name requires a non-empty value",
             ("-q",): "Error: Unknown option: -q",
             ("-e", str(tmp_path / "missing_extension.py")): "Error: ",
             ("--mode", "json"): "Error: rpcd speaks only Pi's RPC mode"}
    for args, said in cases.items():
        done = _start(tmp_path, *args)
        assert done.returncode == 1, (args, done.stderr[-500:])
        assert done.stdout == ""
        assert said in done.stderr, (args, done.stderr[-500:])
    assert "Warning: --system-prompt is not supported by rpcd; ignored" in _start(
        tmp_path, "--system-prompt", "hi").stderr


def test_the_start_opens_the_session_the_flags_name(tmp_path: Path) -> None:
    """``--session`` of a path that does not exist is a new session written there (as Pi); ``--name``
    names it; ``--continue`` opens the most recent one; ``--no-session`` writes nothing."""
    target = tmp_path / "rpcd" / "chosen.jsonl"
    with rpcd_wire(tmp_path, [{"text": "saved"}], "--session", str(target), "--name", " named ") as wire:
        wire.ready()
        state = wire.command("get_state")["data"]
        assert (state["sessionFile"], state["sessionName"]) == (str(target), "named")
        wire.command("prompt", message="write me")
        wire.wait_for(lambda lines: any(x.get("type") == "agent_settled" for x in lines))
    entries = [json.loads(line) for line in target.read_text().splitlines()]
    assert [e["type"] for e in entries][:2] == ["session", "session_info"]
    agent = tmp_path / "rpcd" / "agent"
    with Wire([*DAEMON, "--mode", "rpc", "--continue", "--session-dir", str(target.parent)],
              env=daemon_env({"PI_CODING_AGENT_DIR": str(agent), "HOME": str(agent)}),
              cwd=tmp_path / "rpcd" / "project",
              root=tmp_path / "rpcd") as again:
        again.ready()
        assert again.command("get_state")["data"]["sessionFile"] == str(target)
    with rpcd_wire(tmp_path / "memory", [], "--no-session") as memory:
        memory.ready()
        assert "sessionFile" not in memory.command("get_state")["data"]
    assert not (tmp_path / "memory" / "rpcd" / "agent" / "sessions").exists()


DIALOG = """
def register(pi):
    async def wait(args, ctx):
        ctx.ui.notify(f"got {await ctx.ui.input('Name?')}", "info")

    pi.register_command("wait", "a dialog without a timeout", wait)
"""


def test_a_dialog_without_timeout_waits_as_pis_and_resolves_at_the_end(tmp_path: Path) -> None:
    """No timeout sent and none kept (Pi's dialogs wait for as long as the process lives); ``--ui-timeout``
    gives one; at the end of input an open dialog resolves to its default and the command finishes."""
    extension = tmp_path / "dialog.py"
    extension.write_text(DIALOG)
    with rpcd_wire(tmp_path / "a", [], "-e", str(extension)) as wire:
        wire.ready()
        wire.send({"id": "w", "type": "prompt", "message": "/wait"})
        wire.wait_for(lambda lines: any(x.get("type") == "extension_ui_request" for x in lines))
        request = next(x for x in wire.lines if x.get("type") == "extension_ui_request")
        assert request == {"type": "extension_ui_request", "id": request["id"], "method": "input", "title": "Name?"}
        wire.close_stdin()
        assert wire.wait_exit() == 0
    # the command finished with the dialog's default (its answer is written: the end waits for what settles)
    assert any(x.get("type") == "response" and x.get("id") == "w" for x in wire.lines)
    with rpcd_wire(tmp_path / "b", [], "-e", str(extension), "--ui-timeout", "0.2") as timed:
        timed.ready()
        timed.command("prompt", message="/wait")
    notes = [x["message"] for x in timed.lines if x.get("method") == "notify"]
    assert notes == ["got None"]


def test_a_replacement_that_fails_after_teardown_leaves_the_front_unusable(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    project = tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    argv = [sys.executable, "-P", "-m", "tests.pirpc.failing_factory", "--mode", "rpc"]
    env = daemon_env({"PI_CODING_AGENT_DIR": str(agent), "HOME": str(agent), "PYTHONPATH": str(REPO)})
    with Wire(argv, env=env, cwd=project, root=tmp_path) as wire:
        wire.ready()
        failed = wire.command("new_session")
        assert failed == {"id": failed["id"], "type": "response", "command": "new_session", "success": False,
                          "error": "injected: the factory cannot build another session"}
        later = wire.command("get_messages")
        assert later["success"] is False and "no usable current session" in later["error"]
        assert wire.command("get_state")["success"] is False
    assert wire.proc.returncode == 0
