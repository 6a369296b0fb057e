"""Process-wide state for the probe extension used by ``test_real_runtime`` (extensions are
imported fresh per services instance, so their state cannot live in the extension module)."""

from __future__ import annotations

from typing import Any

SEEN: list[tuple[str, str]] = []
"""(event type, ctx.cwd) for every handled event, in order."""
CANCEL: dict[str, bool] = {}
RAISE: set[str] = set()
HOLD: dict[str, tuple[Any, Any]] = {}
"""event type -> (reached, release) ``anyio.Event`` pair: the handler sets ``reached`` and waits for ``release``."""


def reset() -> None:
    SEEN.clear()
    CANCEL.clear()
    RAISE.clear()
    HOLD.clear()
