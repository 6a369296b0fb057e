"""Our side of the tool differential test: the same input and output as ``tools.mjs``, run by
rpcd's tools through the seam the agent loop uses (preparation, validation, execution).

``python -m tests.pi_compat.our_tools < cases.json`` — one JSON line per case on stdout.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

import anyio

from rpcd.tools import AbortSignal, ToolOptions, ToolSeam, create_builtin_tools


async def run_case(case: dict[str, Any]) -> dict[str, Any]:
    cwd = case["cwd"]
    tools = create_builtin_tools(cwd, ToolOptions(agent_dir=os.environ.get("PI_CODING_AGENT_DIR")))
    seam = ToolSeam({case["tool"]: tools[case["tool"]]})
    signal = AbortSignal()
    updates: list[Any] = []
    record: dict[str, Any] = {"id": case["id"], "updates": updates}
    async with anyio.create_task_group() as group:
        if "abortAfterMs" in case:

            async def abort_later() -> None:
                await anyio.sleep(case["abortAfterMs"] / 1000)
                signal.abort()

            group.start_soon(abort_later)
        outcome = await seam.run("call-1", case["tool"], case["args"], signal,
                                 lambda u: updates.append(json.loads(json.dumps(u))))
        group.cancel_scope.cancel()
    if outcome.is_error:
        record["error"] = outcome.content[0]["text"] if outcome.content else ""
    else:
        result: dict[str, Any] = {"content": outcome.content}
        if outcome.details is not None:
            result["details"] = outcome.details
        record["result"] = json.loads(json.dumps(result))
    files: dict[str, str | None] = {}
    for rel in case.get("snapshot", []):
        try:
            data = await anyio.Path(cwd, rel).read_bytes()
            files[rel] = base64.b64encode(data).decode("ascii")
        except OSError:
            files[rel] = None
    record["files"] = files
    return record


async def main() -> None:
    document = json.loads(sys.stdin.read())
    for case in document.get("cases", []):
        sys.stdout.write(json.dumps(await run_case(case), ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main)
