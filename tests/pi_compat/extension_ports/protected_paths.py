"""Port of Pi's ``examples/extensions/protected-paths.ts``: ``write``/``edit`` to protected paths blocked."""

from __future__ import annotations

from typing import Any

PROTECTED = [".env", ".git/", "node_modules/"]


def register(pi: Any) -> None:
    async def on_tool_call(event: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        if event["toolName"] not in ("write", "edit"):
            return None
        path = event["input"]["path"]
        if any(p in path for p in PROTECTED):
            if ctx.has_ui:
                ctx.ui.notify(f"Blocked write to protected path: {path}", "warning")
            return {"block": True, "reason": f'Path "{path}" is protected'}
        return None

    pi.on("tool_call", on_tool_call)
