"""The process edges of ``rpcd acp``: stdout carries ACP only (bad input answered, stray prints of an
extension or a command go to stderr), logs are JSON lines on stderr, and each mode imports only its
own protocol stack — the JSON-RPC daemon never loads the ACP SDK or pydantic, ``rpcd acp`` never loads
pygls/lsprotocol (checked in real processes with ``python -X importtime``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.acp.conftest import Project
from tests.acp.peer import agent_env

PRINTING_EXTENSION = textwrap.dedent(
    """
    print("stray output of an extension at load")


    def register(pi):
        def on_start(event, ctx):
            print("stray output of an extension handler")

        pi.on("session_start", on_start)
    """
)


def _run(args: list[str], lines: list[dict[str, Any] | str], agent_dir: Path, *, importtime: bool = False
         ) -> subprocess.CompletedProcess[bytes]:
    data = b"".join((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n" for line in lines)
    command = [sys.executable, "-P", *(["-X", "importtime"] if importtime else []), "-m", "rpcd", *args]
    return subprocess.run(command, input=data, capture_output=True, timeout=120, env=agent_env(agent_dir),
                          check=False)


def _imported(stderr: bytes) -> set[str]:
    names = set()
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def _request(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def test_stdout_is_acp_only_and_bad_lines_are_answered(agent_dir: Path, project: Project, tmp_path: Path) -> None:
    cwd = project("p", [{"toolCall": {"name": "bash", "arguments": {"command": "echo from a command"}}},
                        {"text": "done"}])
    extension = tmp_path / "printing.py"
    extension.write_text(PRINTING_EXTENSION)
    done = _run(["acp", "--agent-dir", str(agent_dir), "--approval", "auto", "-e", str(extension)], [
        "this is not json",
        "[]",
        _request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}, "someFutureField": True}),
        _request(2, "session/new", {"cwd": str(cwd), "mcpServers": [{"name": "db", "command": "db-mcp", "args": [],
                                                                     "env": []}]}),
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt"},
        _request(4, "no/such/method", {}),
    ], agent_dir)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = [json.loads(line) for line in done.stdout.decode().splitlines()]  # every line is JSON
    assert all(message.get("jsonrpc") == "2.0" for message in out)
    by_id = {m.get("id"): m for m in out if "id" in m and m.get("id") is not None}
    errors_without_id = [m["error"]["code"] for m in out if "error" in m and m.get("id") is None]
    assert errors_without_id == [-32700, -32600]
    assert by_id[1]["result"]["protocolVersion"] == 1
    diagnostics = by_id[2]["result"]["_meta"]["rpcd/diagnostics"]
    # a server that cannot be started is said, and the session starts without it
    assert any("MCP server db is not running" in d["message"] and "'db-mcp'" in d["message"] for d in diagnostics)
    assert by_id[3]["error"]["code"] == -32602
    assert {e["path"] for e in by_id[3]["error"]["data"]["errors"]} >= {"$.sessionId", "$.prompt"}
    assert by_id[4]["error"]["code"] == -32601
    stderr = done.stderr.decode()
    assert "stray output of an extension at load" in stderr
    assert "stray output" not in done.stdout.decode()
    assert any(line.startswith("{") and json.loads(line).get("level") for line in stderr.splitlines())


def test_each_mode_imports_only_its_own_protocol_stack(agent_dir: Path, project: Project) -> None:
    cwd = project("p", [{"text": "hello"}])
    daemon = _run(["--agent-dir", str(agent_dir), "--in-memory"], [
        _request(1, "initialize", {"protocolVersion": 1}),
        _request(2, "prompt", {"text": "hi"}),
        _request(3, "shutdown", {}),
    ], agent_dir, importtime=True)
    assert b'"result"' in daemon.stdout
    daemon_modules = _imported(daemon.stderr)
    assert "rpcd.wire.server" in daemon_modules
    assert not {m for m in daemon_modules if m.split(".")[0] in ("acp", "pydantic") or m.startswith("rpcd.acp")}

    front = _run(["acp", "--agent-dir", str(agent_dir)], [
        _request(1, "initialize", {"protocolVersion": 1}),
        _request(2, "session/new", {"cwd": str(cwd), "mcpServers": []}),
    ], agent_dir, importtime=True)
    assert b'"sessionId"' in front.stdout
    front_modules = _imported(front.stderr)
    assert "rpcd.acp.agent" in front_modules and "acp" in front_modules
    assert not {m for m in front_modules if m.split(".")[0] in ("pygls", "lsprotocol")
                or m in ("rpcd.wire.server", "rpcd.wire.handlers", "rpcd.daemon.app")}


_SCHEMA_PROBE = textwrap.dedent(
    """
    import json, sys
    if sys.argv[1] == "rpcd":
        import rpcd.acp  # imports the SDK's schema its own way (rpcd.acp.sdk)
    import pydantic
    from pydantic._internal import _fields
    import acp.schema as s

    def refused(value):
        try:
            s.InitializeResponse.model_validate(value)
        except pydantic.ValidationError:
            return True
        return False

    answer = s.InitializeResponse.model_validate({
        "protocolVersion": 1, "agentCapabilities": {"loadSession": True, "mcpCapabilities": {"http": True}},
        "authMethods": [{"id": "k", "name": "Key", "description": None}]})
    update = s.SessionNotification.model_validate({"sessionId": "a", "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}})
    print(json.dumps({
        "answer": answer.model_dump(by_alias=True, exclude_none=True),
        "update": update.model_dump(by_alias=True, exclude_none=True),
        "refused": refused({"protocolVersion": "x"}),
        "defer_left": "defer_build" in pydantic.BaseModel.model_config,
        "extractor": getattr(_fields, "extract_docstrings_from_cls", refused).__module__,
        "described": s.InitializeResponse.model_fields["protocol_version"].description is not None,
    }))
    """
)


def test_the_sdks_schema_loaded_quickly_validates_and_writes_as_the_sdk_does() -> None:
    """``rpcd.acp.sdk`` skips the attribute docstrings (field descriptions: only a JSON Schema shows them)
    and builds the models on first use, for the import only: what they accept, refuse and write is the
    SDK's own, and pydantic is left as it was."""

    def probe(mode: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-P", "-c", _SCHEMA_PROBE, mode], capture_output=True, timeout=120,
                              check=True)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    ours, plain = probe("rpcd"), probe("sdk")
    assert ours["answer"] == plain["answer"] and ours["update"] == plain["update"]
    assert ours["refused"] and plain["refused"]
    assert not ours["defer_left"]
    if plain["extractor"] == "pydantic._internal._docs_extraction":  # the hook rpcd.acp.sdk uses is there
        assert ours["extractor"] == plain["extractor"]  # put back after the import
        assert plain["described"] and not ours["described"]  # skipped for the import (only a JSON Schema shows it)
