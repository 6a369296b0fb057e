"""The client's ``bash`` against Pi's own executor (``executeBashWithOperations`` with the local bash
operations): the same commands in the same directory give the same result (output after Pi's
sanitising and tail truncation, exit code, truncated), the same streamed text and the same
full-output file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.tools.base import AbortSignal
from rpcd.tools.bash import SESSION_ENV_KEYS, shell_env
from rpcd.tools.user_bash import execute_user_bash
from tests.pi_compat.oracle import PiOracle

SCRIPT = Path(__file__).resolve().with_name("user_bash.mjs")

CASES: dict[str, str] = {
    "plain output": "echo hello; echo world",
    "no output": "true",
    "exit code": "echo before; exit 7",
    "stderr": "echo to-stderr >&2",
    "ANSI escapes and carriage returns": r"printf '\033[31mred\033[0m\r\nline\rover\n\033]0;title\007end\n'",
    "control and format characters": r"printf 'a\001b\002c\tTab\xef\xbf\xb9z\n'",
    "invalid UTF-8": r"printf 'ok \377\376 bytes\n'",
    "a UTF-8 BOM first": r"printf '\357\273\277bom\n'",
    "2000 lines exactly": "seq 1 2000",
    "100000 lines: tail-truncated, full file": "seq 1 100000",
    "one huge line over 50 KB": "head -c 70000 /dev/zero | tr '\\0' 'x'; echo",
    "no trailing newline": "printf 'last'",
}


def _pi(oracle: PiOracle, cwd: Path) -> dict[str, dict[str, Any]]:
    cases = [{"id": name, "command": command, "cwd": str(cwd)} for name, command in CASES.items()]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "RPCD_PI_ORACLE_DIR": str(oracle.root),
           "PI_CODING_AGENT_DIR": str(cwd / ".agent"), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    done = subprocess.run([str(oracle.node), str(SCRIPT)], input=json.dumps({"cases": cases}), capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120, check=True)
    return {line["id"]: line for line in map(json.loads, done.stdout.splitlines())}


async def _ours(command: str, cwd: Path) -> dict[str, Any]:
    chunks: list[str] = []
    env = shell_env(None)
    for key in SESSION_ENV_KEYS:
        env.pop(key, None)
    result = await execute_user_bash(command, str(cwd), signal=AbortSignal(), env=env, on_chunk=chunks.append)
    line: dict[str, Any] = {"result": {"output": result.output, "cancelled": result.cancelled,
                                       "truncated": result.truncated}, "chunks": "".join(chunks)}
    if result.exit_code is not None:
        line["result"]["exitCode"] = result.exit_code
    if result.full_output_path is not None:
        line["result"]["fullOutputPath"] = result.full_output_path
        line["file"] = await anyio.Path(result.full_output_path).read_text(encoding="utf-8")
    return line


def test_client_bash_output_matches_pis_executor(pi_oracle: PiOracle, tmp_path: Path) -> None:
    pi = _pi(pi_oracle, tmp_path)

    async def run_all() -> dict[str, dict[str, Any]]:
        return {name: await _ours(command, tmp_path) for name, command in CASES.items()}

    ours = anyio.run(run_all)
    for name in CASES:
        theirs, mine = pi[name], ours[name]
        for side in (theirs, mine):
            path = side["result"].pop("fullOutputPath", None)
            assert (path is None) == ("file" not in side), name
            if path is not None:
                assert Path(path).name.startswith("pi-bash-") and path.endswith(".log")
                os.unlink(path)
        assert mine["result"] == theirs["result"], name
        assert mine["chunks"] == theirs["chunks"], name
        assert mine.get("file") == theirs.get("file"), name
    assert pi["100000 lines: tail-truncated, full file"]["result"]["truncated"] is True


@pytest.mark.parametrize("stop", ["abort", "timeout"])
def test_abort_and_timeout_stop_the_process_group_with_the_output_so_far(tmp_path: Path, stop: str) -> None:
    marker = f"rpcd-user-bash-{stop}-{os.getpid()}"

    seen: list[bool] = []

    async def run() -> Any:
        signal = AbortSignal()
        async with anyio.create_task_group() as group:
            async def watch() -> None:
                while not any(marker in _cmdline(p) for p in os.listdir("/proc") if p.isdigit()):  # noqa: ASYNC110
                    await anyio.sleep(0.02)  # polling /proc: no event to wait for
                seen.append(True)
                if stop == "abort":
                    signal.abort()

            group.start_soon(watch)
            result = await execute_user_bash(f"echo started; (exec -a {marker} sleep 60) & sleep 60", str(tmp_path),
                                             signal=signal, env=dict(os.environ),
                                             timeout=1.0 if stop == "timeout" else None)
        return result

    result = anyio.run(run)
    assert seen == [True], "the background child ran"
    assert (result.output, result.exit_code, result.cancelled) == ("started\n", None, True)
    left = [p for p in os.listdir("/proc") if p.isdigit() and marker in _cmdline(p)]
    assert left == [], "the background child of the group was stopped too"


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
