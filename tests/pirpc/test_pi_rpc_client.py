"""Pi 0.85.0's own RPC client (``dist/modes/rpc/rpc-client.js``, what embedding tools use) drives real
``pi --mode rpc`` and ``rpcd --mode rpc`` through the same calls (``rpc_client.mjs``: every client
method, a prompt collected to its settling, steer and follow-up during a tool round, fork, clone,
a new session with a parent, a switch back): every call resolves alike and the events a prompt
collects are the same, after normalising what differs by nature (``tests/pirpc/wire.py``)."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.driver import DAEMON, daemon_env
from tests.pi_compat.oracle import PiOracle
from tests.pirpc.wire import EXTENSION, NO_CHECKPOINTS, Normaliser, join_deltas, stats_tokens

HERE = Path(__file__).resolve().parent
SCRIPT = [{"text": "hello from the model"},
          {"toolCall": {"name": "bash", "arguments": {"command": "sleep 0.8; echo slow"}, "id": "call_client"}},
          {"text": "after the tool"}, {"text": "after the steer"}, {"text": "after the follow-up"},
          {"text": "## Goal\nThe client's summary."}]


def _run(oracle: PiOracle, root: Path, side: str) -> dict[str, Any]:
    base = root / side
    agent, project = base / "agent", base / "project"
    agent.mkdir(parents=True)
    project.mkdir(parents=True)
    script = base / "script.json"
    node_bin = str(oracle.node.parent)
    env = {"PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(agent),
           "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "PI_TELEMETRY": "0", "NO_COLOR": "1",
           "RPCD_PI_ORACLE_DIR": str(oracle.root), "RPCD_FAUX_SCRIPT": str(script)}
    model = ["--provider", "faux", "--model", "faux-1"]
    if side == "pi":
        script.write_text(json.dumps(SCRIPT))
        cli = oracle.root / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
        argv = [str(cli), str(project), *model, "-e", str(EXTENSION)]
    else:
        script.write_text(json.dumps({"steps": SCRIPT, "chunkSize": 8}))
        (agent / "settings.json").write_text(json.dumps(NO_CHECKPOINTS))  # a custom entry Pi never writes
        env = daemon_env({**env, "RPCD_SHIM_ARGV": json.dumps(DAEMON)})
        argv = [str(HERE / "rpcd_shim.mjs"), str(project), *model]
    done = subprocess.run([str(oracle.node), str(HERE / "rpc_client.mjs"), *argv], env=env, capture_output=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    result = json.loads(done.stdout)
    norm = Normaliser(base)
    calls = []
    for name, value in result["calls"]:
        value = norm.value(value)
        if isinstance(value, list) and value and isinstance(value[0], dict) and "type" in value[0]:
            value = join_deltas(value)  # a prompt's collected events
        calls.append((name, value))
    return {"calls": calls, "stderr": result["stderr"]}


def test_pis_own_rpc_client_sees_rpcd_as_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        theirs_future = pool.submit(_run, pi_oracle, tmp_path, "pi")
        ours = _run(pi_oracle, tmp_path, "rpcd")
        theirs = theirs_future.result()
    stats = [value for name, value in ours["calls"] if name == "getSessionStats"]
    for name, value in (*theirs["calls"], *ours["calls"]):
        if name == "getCommands":
            value[:] = [c for c in value if c.get("sourceInfo", {}).get("source") != "inline"]  # Pi's bundled llama
        if name == "getSessionStats":
            value.update(stats_tokens(value))
    assert [name for name, _ in ours["calls"]] == [name for name, _ in theirs["calls"]]
    for (name, mine), (_, pis) in zip(ours["calls"], theirs["calls"], strict=True):
        assert mine == pis, f"{name} differs"
    assert stats and "sessionId" in stats[0]
