"""The Python twin of ``lifecycle_probe.ts`` (rpcd's own test probe, not one of Pi's examples)."""

from __future__ import annotations

from typing import Any

EVENTS = ("session_start", "session_shutdown", "resources_discover", "session_info_changed", "model_select",
          "thinking_level_select")


def register(pi: Any) -> None:
    def make(name: str) -> Any:
        def handler(event: dict[str, Any], ctx: Any) -> None:
            model = event.get("model")
            detail = event.get("reason") or event.get("name") or event.get("level") or (
                f"{model['provider']}/{model['id']}" if model else "")
            if ctx.has_ui:
                ctx.ui.notify(f"{name}:{detail}", "info")
        return handler

    for name in EVENTS:
        pi.on(name, make(name))
