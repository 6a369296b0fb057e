"""Port of Pi's ``examples/extensions/permission-gate.ts``: a dialog before dangerous bash commands."""

from __future__ import annotations

import re
from typing import Any

DANGEROUS = [re.compile(r"\brm\s+(-rf?|--recursive)", re.I), re.compile(r"\bsudo\b", re.I),
             re.compile(r"\b(chmod|chown)\b.*777", re.I)]


def register(pi: Any) -> None:
    async def on_tool_call(event: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        if event["toolName"] != "bash":
            return None
        command = event["input"]["command"]
        if any(pattern.search(command) for pattern in DANGEROUS):
            if not ctx.has_ui:
                return {"block": True, "reason": "Dangerous command blocked (no UI for confirmation)"}
            choice = await ctx.ui.select(f"\u26a0\ufe0f Dangerous command:\n\n  {command}\n\nAllow?", ["Yes", "No"])
            if choice != "Yes":
                return {"block": True, "reason": "Blocked by user"}
        return None

    pi.on("tool_call", on_tool_call)
