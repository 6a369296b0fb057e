"""Process-wide state for the probe extension used by ``test_real_runtime`` (extensions are
imported fresh per services instance, so their state cannot live in the extension module)."""

from __future__ import annotations

SEEN: list[tuple[str, str]] = []
"""(event type, ctx.cwd) for every handled event, in order."""
CANCEL: dict[str, bool] = {}
RAISE: set[str] = set()


def reset() -> None:
    SEEN.clear()
    CANCEL.clear()
    RAISE.clear()
