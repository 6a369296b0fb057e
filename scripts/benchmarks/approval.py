"""What the approval point costs a tool call, beside the same call without it (ratio = with / without).

Each row times the seam's preparation of one ``bash`` call (lookup, validation, hooks — not its
execution) in this process, median over many calls: without a gate (Pi's path, the baseline), with
the policy ``auto`` (the gate says yes at once), with ``ask-writes`` decided by a remembered allow
rule in a rules file holding 200 rules (checked on every call — another process may have changed
it — and re-read only when it did), and with ``ask-writes`` asking an in-process approver (the cost of
describing the call and building the question; the wire and the person are not included).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

from benchmarks._harness import Measurement, median

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rpcd.core.values import ApprovalRule, ToolApprovalAnswer, ToolApprovalRequest  # noqa: E402
from rpcd.tools import (  # noqa: E402
    AbortSignal,
    ApprovalGate,
    ApprovalRules,
    Block,
    ToolCall,
    ToolCallHooks,
    ToolSeam,
    builtin_profile,
    create_builtin_tools,
)

CALLS = 400
FULL_CALLS = 4000
RULES = 200


async def _time_prepare(seam: ToolSeam, calls: int) -> float:
    args = {"command": "npm test -- --watch"}
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        prepared = await seam.prepare(f"c{i}", "bash", args, AbortSignal())
        samples.append(time.perf_counter() - started)
        assert not hasattr(prepared, "is_error") or not prepared.is_error, prepared
    return median(samples) * 1e6


def _seam(cwd: str, gate: ApprovalGate | None, approver: object = None) -> ToolSeam:
    tools = create_builtin_tools(cwd)
    if gate is None:
        return ToolSeam(tools)

    async def authorize(call: ToolCall, signal: AbortSignal) -> Block | None:
        return await gate.authorize(call, signal, cwd=cwd, profile=builtin_profile(call.tool_name),
                                    approver=approver)  # type: ignore[arg-type]

    return ToolSeam(tools, ToolCallHooks(authorize=authorize))


async def _run(calls: int, cwd: str) -> list[Measurement]:
    rules = ApprovalRules(os.path.join(cwd, "agent", "rpcd", "approvals.json"))
    for i in range(RULES - 1):
        rules.add(ApprovalRule(id=f"r{i}", project=f"/elsewhere/{i}", tool_name="bash", decision="allow",
                               created_at="2026-01-01T00:00:00.000Z", command=f"tool{i} *"))
    rules.add(ApprovalRule(id="npm", project=cwd, tool_name="bash", decision="allow",
                           created_at="2026-01-01T00:00:00.000Z", command="npm test *"))

    async def approve(request: ToolApprovalRequest) -> ToolApprovalAnswer:
        return ToolApprovalAnswer("allowOnce")

    baseline = await _time_prepare(_seam(cwd, None), calls)
    auto = await _time_prepare(_seam(cwd, ApprovalGate(rules, policy="auto")), calls)
    ruled = await _time_prepare(_seam(cwd, ApprovalGate(rules, policy="ask-writes")), calls)
    asked = await _time_prepare(_seam(cwd, ApprovalGate(None, policy="ask-writes"), approve), calls)
    base = "prepare without a gate"
    return [
        Measurement("prepare, policy auto", auto, "µs", base, baseline),
        Measurement(f"prepare, ask-writes, remembered rule ({RULES} rules)", ruled, "µs", base, baseline,
                    note="a stat of the rules file per call; re-read only when it changed"),
        Measurement("prepare, ask-writes, asking (in-process approver)", asked, "µs", base, baseline),
    ]


def run(full: bool) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-approval-") as tmp:
        result: list[Measurement] = anyio.run(_run, FULL_CALLS if full else CALLS, os.path.realpath(tmp))
    return result
