"""Process-wide sink the tracer extension writes to (extensions are imported fresh per
services instance, so their state cannot live in the extension module itself)."""

from __future__ import annotations

from typing import Any

LINES: list[str] = []
CANCEL: dict[str, bool] = {}
"""event type -> return ``{"cancel": True}`` from the tracer's handler."""
EXT_COUNT = [0]
HOOKS: dict[str, Any] = {}
"""event type -> callable(event, ctx) run by the tracer after recording (e.g. file checks)."""


def reset() -> None:
    LINES.clear()
    CANCEL.clear()
    HOOKS.clear()
    EXT_COUNT[0] = 0
