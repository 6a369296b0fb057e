"""TypeScript extensions through the Node extension host, against the same extension in Python (the
baseline, same daemon build, same run): ratio = through the host / in-process Python.

* ``command round trip``: ``prompt /ping`` N times — the command runs in the host and calls
  ``ctx.ui.notify`` back into the daemon (a request each way, then the answer);
* ``tool call``: a faux turn calling the extension's tool N times, one call per step (no event
  handlers yet);
* ``streamed event``: a reply streamed as ~N ``message_update`` events, each forwarded to the
  extension's ``message_update`` handler (with ``turn_*``/``message_*`` handlers too, registered by a
  command after loading), per event;
* ``host start``: the first session's wait for Node and Pi's loader (one sample per run).

N = 100 (``--full``: 1,000). Node 22 and the host's packages come as in the tests
(``tests/node_host.py``); without them the section says why and returns no rows.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import Measurement, median

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TS = """
export default function (pi) {
  pi.registerCommand("ping", { handler: async (args, ctx) => { ctx.ui.notify(`pong ${args}`, "info"); } });
  pi.registerTool({ name: "echo", label: "Echo", description: "Echo", parameters: { type: "object", properties: {} },
    async execute(id, params) { return { content: [{ type: "text", text: "echo" }], details: {} }; } });
  let seen = 0;
  pi.registerCommand("listen", { handler: async () => {
    for (const e of ["turn_start", "turn_end", "message_start", "message_end", "message_update"]) {
      pi.on(e, () => { seen++; });
    }
  } });
}
"""
PY = """
def register(pi):
    async def ping(args, ctx):
        ctx.ui.notify(f"pong {args}", "info")

    async def echo(tool_call_id, params, signal, on_update, ctx):
        return {"content": [{"type": "text", "text": "echo"}], "details": {}}

    seen = []

    async def listen(args, ctx):
        for event in ("turn_start", "turn_end", "message_start", "message_end", "message_update"):
            pi.on(event, lambda e, ctx: seen.append(1))

    pi.register_command("ping", ping)
    pi.register_command("listen", listen)
    pi.register_tool(name="echo", label="Echo", description="Echo", parameters={"type": "object", "properties": {}},
                     execute=echo)
"""


def _measure(root: Path, kind: str, n: int, env: dict[str, str]) -> dict[str, float]:
    from tests.driver import Daemon

    agent, project = root / kind / "agent", root / kind / "project"
    (agent / "extensions").mkdir(parents=True)
    project.mkdir(parents=True)
    (agent / "extensions" / ("ext.ts" if kind == "ts" else "ext.py")).write_text(TS if kind == "ts" else PY)
    tools = [{"toolCalls": [{"name": "echo", "arguments": {}, "id": f"c{i}"}]} for i in range(n)]
    script = {"steps": [*tools, {"text": "done"}, {"text": "x" * n}], "chunkSize": 1}
    (root / kind / "script.json").write_text(json.dumps(script))
    out: dict[str, float] = {}
    started = time.perf_counter()
    with Daemon("--cwd", str(project), "--agent-dir", str(agent),
                env={**env, "RPCD_FAUX_SCRIPT": str(root / kind / "script.json"), "HOME": str(root),
                     "RPCD_LOG_LEVEL": "warning"}) as d:
        d.initialize({"extensionUi": {}})
        assert any(c["name"] == "ping" for c in d.call("getCommands")["commands"]), "the extension did not load"
        out["start"] = (time.perf_counter() - started) * 1000
        samples = []
        for i in range(n):
            t0 = time.perf_counter()
            d.call("prompt", {"text": f"/ping {i}"})
            samples.append((time.perf_counter() - t0) * 1000)
        out["command"] = median(samples)
        t0 = time.perf_counter()
        d.call("prompt", {"text": "call the tool"}, timeout=600)
        out["tool"] = (time.perf_counter() - t0) * 1000 / n
        d.call("prompt", {"text": "/listen"})
        t0 = time.perf_counter()
        d.call("prompt", {"text": "stream"}, timeout=600)
        updates = sum(1 for m in d.notifications("session/event")
                      if m["params"]["event"]["type"] == "message_update")
        out["event"] = (time.perf_counter() - t0) * 1000 / max(1, updates)
    return out


def run(full: bool) -> list[Measurement]:
    try:
        import pytest

        from tests.node_host import node_host_env
    except ImportError as exc:
        print(f"[ts_extensions] skipped: {exc}", file=sys.stderr)
        return []
    try:
        env = node_host_env()
    except pytest.skip.Exception as exc:  # type: ignore[attr-defined]
        print(f"[ts_extensions] skipped: {exc}", file=sys.stderr)
        return []
    n = 1000 if full else 100
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        py = _measure(root, "py", n, env)
        ts = _measure(root, "ts", n, env)
    rows: list[tuple[str, str, Any]] = [
        ("command round trip (TypeScript, host)", "command", "ms"),
        ("tool call (TypeScript, host)", "tool", "ms"),
        ("streamed event, 5 handlers (TypeScript, host)", "event", "ms"),
        ("daemon start to first answer with the extension", "start", "ms"),
    ]
    return [Measurement(name, ts[key], unit, baseline_name=name.replace("TypeScript, host", "Python").replace(
        "with the extension", "with the Python extension"), baseline_value=py[key]) for name, key, unit in rows]
