"""The Python twin of ``sequential_probe.ts`` (rpcd's own test probe, not one of Pi's examples)."""

from __future__ import annotations

import asyncio
from typing import Any

PARAMETERS = {
    "type": "object",
    "properties": {"n": {"type": "number"}, "wait": {"type": "number"}},
    "required": ["n", "wait"],
}


def register(pi: Any) -> None:
    def make(name: str, execution_mode: str | None) -> dict[str, Any]:
        async def execute(tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> Any:
            await asyncio.sleep(params["wait"] / 1000)
            pi.append_entry("finished", {"tool": name, "n": params["n"]})
            return {"content": [{"type": "text", "text": f"{name} {params['n']}"}], "details": {"n": params["n"]}}

        spec: dict[str, Any] = {"name": name, "label": name, "parameters": PARAMETERS, "execute": execute,
                                "description": f"Record n after wait ms ({execution_mode or 'parallel'})"}
        if execution_mode:
            spec["executionMode"] = execution_mode
        return spec

    pi.register_tool(make("step", "sequential"))
    pi.register_tool(make("pstep", None))
