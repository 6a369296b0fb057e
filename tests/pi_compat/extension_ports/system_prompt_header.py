"""Port of Pi's ``examples/extensions/system-prompt-header.ts``: ``ctx.get_system_prompt()`` shown
as a status entry."""

from __future__ import annotations

from typing import Any


def _js_length(text: str) -> int:
    """A JavaScript string's ``length``: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def register(pi: Any) -> None:
    def on_agent_start(event: dict[str, Any], ctx: Any) -> None:
        prompt = ctx.get_system_prompt()
        ctx.ui.set_status("system-prompt", f"System: {_js_length(prompt)} chars")

    def on_shutdown(event: dict[str, Any], ctx: Any) -> None:
        ctx.ui.set_status("system-prompt", None)

    pi.on("agent_start", on_agent_start)
    pi.on("session_shutdown", on_shutdown)
