"""Process-wide state for the command extension of ``test_command_actions`` (extensions are
imported fresh per session, so their state cannot live in the extension module)."""

from __future__ import annotations

from typing import Any

RESULTS: list[tuple[Any, ...]] = []
STASH: dict[str, Any] = {}
HOLD: dict[str, tuple[Any, Any]] = {}
"""name -> (reached, release) ``anyio.Event`` pair."""
REENTER: set[str] = set()
"""Event types whose handler calls the stashed command ctx's ``new_session()``."""


def reset() -> None:
    RESULTS.clear()
    STASH.clear()
    HOLD.clear()
    REENTER.clear()
