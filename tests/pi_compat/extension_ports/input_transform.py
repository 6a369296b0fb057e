"""Port of Pi's ``examples/extensions/input-transform.ts``: the ``input`` event transforms
(``?quick``) or handles (``ping``, ``time``) input before skill and template expansion."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _locale_string(now: datetime) -> str:
    """JavaScript's ``new Date().toLocaleString()`` in the en-US locale."""
    hour = now.hour % 12 or 12
    return f"{now.month}/{now.day}/{now.year}, {hour}:{now:%M:%S} {'AM' if now.hour < 12 else 'PM'}"


def register(pi: Any) -> None:
    def on_input(event: dict[str, Any], ctx: Any) -> dict[str, Any]:
        if event["source"] == "extension":
            return {"action": "continue"}
        text: str = event["text"]
        if text.startswith("?quick "):
            query = text[7:].strip()
            if not query:
                ctx.ui.notify("Usage: ?quick <question>", "warning")
                return {"action": "handled"}
            return {"action": "transform", "text": f"Respond briefly in 1-2 sentences: {query}"}
        if text.lower() == "ping":
            ctx.ui.notify("pong", "info")
            return {"action": "handled"}
        if text.lower() == "time":
            ctx.ui.notify(_locale_string(datetime.now()), "info")
            return {"action": "handled"}
        return {"action": "continue"}

    pi.on("input", on_input)
