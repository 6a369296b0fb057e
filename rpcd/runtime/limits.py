"""Spending and token caps: what a session may still spend, checked before every model call.

Caps (settings ``limits.maxCost`` in USD, ``limits.maxTokens``, and the per-day
``limits.maxCostPerDay`` / ``limits.maxTokensPerDay``; ``setLimits`` for the daemon's sessions):

* a session's spend is what ``getSessionStats`` bills: the cost and the tokens (input, output,
  cache read and write) of every assistant reply, tool-reported usage, compaction and branch
  summary of the session file, all branches — counted once from the file, then as entries are
  appended (``UsageMeter``), so a check costs nothing per model call;
* a day's spend is the usage ledger's (``rpcd.store.usage_ledger``): every model reply of every
  rpcd session of this agent dir since local midnight (Pi's own sessions do not write it);
* the effective cap of each kind is the ``setLimits`` value when one was given, else the smaller
  of the global and the project setting (a project can lower a cap, never raise it);
* a cap is reached when the spend is at or over it: the next model call does not happen — the
  run stops with stop reason ``limit`` and a ``limit_reached`` event, nothing is half-written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

from rpcd.core.values import LimitOverrides, LimitsState

__all__ = ["BILLED_ROLES", "BILLED_TYPES", "LIMIT_NAMES", "UsageMeter", "configured_limits", "limit_reached"]

LimitName = Literal["maxCost", "maxTokens", "maxCostPerDay", "maxTokensPerDay"]
LIMIT_NAMES: Final[tuple[LimitName, ...]] = ("maxCost", "maxTokens", "maxCostPerDay", "maxTokensPerDay")
SETTING: Final = "limits"
BILLED_TYPES: Final = frozenset({"message", "compaction", "branch_summary"})
BILLED_ROLES: Final = frozenset({"assistant", "toolResult"})
"""The entry types (and message roles) that can bill usage (``billed_usage``); only those are read."""


def _cap(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def configured_limits(global_settings: Mapping[str, Any], project_settings: Mapping[str, Any],
                      overrides: LimitOverrides) -> dict[LimitName, float]:
    """The caps in force: ``setLimits`` first, else the smaller of the global and project settings."""
    found: dict[LimitName, float] = {}
    for name in LIMIT_NAMES:
        chosen = overrides.get(name)
        if chosen is None:
            values = [cap for scope in (global_settings, project_settings)
                      if (cap := _cap(_section(scope).get(name))) is not None]
            chosen = min(values) if values else None
        if chosen is not None:
            found[name] = chosen
    return found


def _section(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    section = settings.get(SETTING)
    return section if isinstance(section, Mapping) else {}


class UsageMeter:
    """A session's billed tokens and cost, counted over the session manager's entries once, then
    only over the entries appended since (the same sums as ``getSessionStats``)."""

    def __init__(self) -> None:
        self.tokens = 0
        self.cost = 0.0
        self._seen = 0

    def update(self, entries: Iterable[Mapping[str, Any]], count: int) -> None:
        """``entries``: the session's entries from index ``self._seen`` on; ``count``: how many it has."""
        if count < self._seen:  # another file (a replacement's manager): count again
            self.tokens, self.cost, self._seen = 0, 0.0, 0
            return
        for entry in entries:
            for usage in billed_usage(entry):
                tokens, cost = usage_totals(usage)
                self.tokens += tokens
                self.cost += cost
        self._seen = count

    @property
    def seen(self) -> int:
        return self._seen


def billed_usage(entry: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """The usage an entry bills (``getSessionStats``' rules)."""
    kind = entry.get("type")
    if kind in ("branch_summary", "compaction"):
        usage = entry.get("usage")
        if isinstance(usage, Mapping):
            yield usage
        return
    message = entry.get("message")
    if kind == "message" and isinstance(message, Mapping) and message.get("role") in ("assistant", "toolResult"):
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            yield usage


def usage_totals(usage: Mapping[str, Any]) -> tuple[int, float]:
    """``(tokens, cost)`` of one usage object: input + output + cache read + cache write, cost total."""
    tokens = 0
    for key in ("input", "output", "cacheRead", "cacheWrite"):
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            tokens += int(value)
    cost_info = usage.get("cost")
    total = cost_info.get("total") if isinstance(cost_info, Mapping) else None
    cost = float(total) if isinstance(total, int | float) and not isinstance(total, bool) and math.isfinite(total) \
        else 0.0
    return tokens, cost


def limit_reached(state: LimitsState) -> dict[str, Any] | None:
    """The ``limit_reached`` event for the first cap ``state`` is at or over, else ``None``."""
    spends: dict[LimitName, float | None] = {
        "maxCost": state.cost, "maxTokens": float(state.tokens),
        "maxCostPerDay": state.cost_today, "maxTokensPerDay": None if state.tokens_today is None
        else float(state.tokens_today)}
    for name in LIMIT_NAMES:
        cap = state.cap(name)
        used = spends[name]
        if cap is not None and used is not None and used >= cap:
            tokens = name in ("maxTokens", "maxTokensPerDay")
            return {"type": "limit_reached", "limit": name, "scope": "day" if name.endswith("PerDay") else "session",
                    "used": int(used) if tokens else used, "max": int(cap) if tokens else cap}
    return None
