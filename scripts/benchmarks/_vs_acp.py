"""``--vs-pi acp``: ``rpcd acp`` against what a Zed user would install instead — the Pi ACP adapter
``pi-acp`` (npm, ``_pi_acp.py``) running real Pi 0.85.0 (``pi --mode rpc``) under it.

Per pass and side: spawn -> ``initialize`` -> ``session/new`` answered (from the spawn: pi-acp starts
its Pi for the session, asks it ``get_state`` and ``get_available_models`` and runs ``pi --version``;
rpcd builds its session in process), then ``PROMPTS`` ``session/prompt`` round trips (sent ->
answered with its stop reason; the first separately) against the loopback model (``_loopback.py``,
a short unpaced text answer, the same bytes to both), and the CPU time of the process tree up to
``session/new`` answered. Both read the model from ``models.json`` and ``settings.json``
(``defaultProvider`` / ``defaultModel``) in their agent dir and persist their sessions. The agent's
own requests are answered as a client without capabilities would (permission: cancelled).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Mapping
from typing import Any

import orjson

from benchmarks._harness import Measurement
from benchmarks._loopback import MODEL_ID, PROVIDER, LoopbackModel, models_json, text_deltas, text_stream
from benchmarks._pi_acp import bin_dir, ensure_pi_acp
from benchmarks._rpc import REPO
from benchmarks._sides import Context, Samples, Side, clean_env, interleave, rpcd_request, rpcd_response_id, running

PROMPTS = 6


def _acp_answer(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("method") == "session/request_permission":
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "cancelled"}}}
    return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}}


def _acp_event(message: dict[str, Any]) -> dict[str, Any] | None:
    if message.get("method") == "session/update":
        update: dict[str, Any] = message["params"].get("update") or {}
        return update
    return None


def _side(name: str, argv: list[str], env: Mapping[str, str], cwd: str) -> Side:
    return Side(name, argv, dict(env), cwd, rpcd_request, rpcd_response_id, _acp_event, on_request=_acp_answer)


def measure_acp(ctx: Context) -> Samples:
    entry = ensure_pi_acp()
    stream = text_stream(text_deltas(30))
    model = LoopbackModel(lambda index, body: stream)
    tools = bin_dir(ctx.oracle, ctx.tmp / "pi-acp")

    def one(which: str) -> dict[str, float]:
        home, project = ctx.home(f"acp-{which}")
        agent = home / "agent"
        (agent / "models.json").write_text(orjson.dumps(models_json(model.base_url)).decode())
        (agent / "settings.json").write_text(orjson.dumps({"defaultProvider": PROVIDER,
                                                           "defaultModel": MODEL_ID}).decode())
        model.reset()
        if which == "rpcd":
            env = clean_env(home, {"PYTHONPATH": str(REPO)})
            argv = [*(ctx.python or [sys.executable, "-P"]), "-m", "rpcd", "acp", "--agent-dir", str(agent)]
        else:
            env = clean_env(home, {"PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
                                   "PI_ACP_PI_COMMAND": str(tools / "pi"), "RPCD_PI_ORACLE_DIR": str(ctx.oracle.root)})
            argv = [str(ctx.oracle.node), str(entry)]
        result: dict[str, float] = {}
        with running(_side(which, argv, env, str(project))) as proc:
            proc.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            session = proc.call("session/new", {"cwd": str(project), "mcpServers": []})["result"]["sessionId"]
            result["new_session_ms"] = (time.perf_counter() - proc.started) * 1000
            result["new_session_cpu_ms"] = proc.cpu_ms()
            trips = []
            for number in range(PROMPTS):
                sent = time.perf_counter()
                answer = proc.call("session/prompt", {"sessionId": session,
                                                      "prompt": [{"type": "text", "text": f"hello {number}"}]})
                trips.append((time.perf_counter() - sent) * 1000)
                if answer["result"].get("stopReason") != "end_turn":
                    raise AssertionError(f"{which}: prompt ended with {answer['result']}")
            if len(model.served) != PROMPTS:
                raise AssertionError(f"{which}: {len(model.served)} model requests for {PROMPTS} prompts")
        result["first_prompt_ms"] = trips[0]
        result["warm_prompt_ms"] = statistics.median(trips[1:])
        return result

    try:
        return interleave(ctx, one)
    finally:
        model.close()


def rows_acp(samples: Samples, ctx: Context, passes: str) -> list[Measurement]:
    def med(side: str, key: str) -> float:
        return statistics.median(samples[side][key])

    return [
        Measurement("acp: spawn -> session/new answered", med("rpcd", "new_session_ms"), "ms",
                    "pi-acp + pi --mode rpc, same", med("pi", "new_session_ms"), note=passes),
        Measurement("  CPU time to session/new answered (process tree)", med("rpcd", "new_session_cpu_ms"), "ms",
                    "pi-acp + pi, same", med("pi", "new_session_cpu_ms")),
        Measurement("acp: session/prompt round trip (warm)", med("rpcd", "warm_prompt_ms"), "ms",
                    "pi-acp + pi, same loopback answer", med("pi", "warm_prompt_ms"),
                    note=f"first prompt of the session: rpcd {med('rpcd', 'first_prompt_ms'):.0f} ms, "
                         f"pi-acp {med('pi', 'first_prompt_ms'):.0f} ms"),
        Measurement("acp: first session/prompt round trip", med("rpcd", "first_prompt_ms"), "ms",
                    "pi-acp + pi, same", med("pi", "first_prompt_ms")),
    ]
