"""Port of Pi's ``examples/extensions/model-status.ts``: the ``model_select`` event."""

from __future__ import annotations

import sys
from typing import Any


def register(pi: Any) -> None:
    async def on_model_select(event: dict[str, Any], ctx: Any) -> None:
        model, previous, source = event["model"], event.get("previousModel"), event["source"]
        following = f"{model['provider']}/{model['id']}"
        before = f"{previous['provider']}/{previous['id']}" if previous else "none"
        if source != "restore":
            ctx.ui.notify(f"Model: {following}", "info")
        ctx.ui.set_status("model", f"\U0001f916 {model['id']}")
        print(f"[model_select] {before} \u2192 {following} ({source})", file=sys.stderr)

    pi.on("model_select", on_model_select)
