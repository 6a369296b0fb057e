"""Wire handler of the spending caps (``setLimits``) and the caps as ``getState`` shows them."""

from __future__ import annotations

from collections.abc import Awaitable

from rpcd.core.values import LimitOverrides, LimitsState
from rpcd.host.host import Pending, SerializedHost
from rpcd.protocol import types as t
from rpcd.protocol.names import SET_LIMITS
from rpcd.wire.calls import session_call, tracked
from rpcd.wire.convert import limits_info
from rpcd.wire.handlers import InvalidParamsError, answered
from rpcd.wire.notifications import EventPump


class LimitMethods:
    def __init__(self, host: SerializedHost, pump: EventPump) -> None:
        self._host = host
        self._pump = pump

    def set_limits(self, params: t.SetLimitsParams | None = None) -> Awaitable[t.SetLimitsResult]:
        given = params or t.SetLimitsParams()
        for name in ("max_cost", "max_tokens", "max_cost_per_day", "max_tokens_per_day"):
            value = getattr(given, name)
            if value is not None and (value < 0 or value != value or value == float("inf")):
                camel = name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])
                raise InvalidParamsError(SET_LIMITS, f"{camel} must be a number >= 0", f"$.{camel}")
        overrides = LimitOverrides(max_cost=given.max_cost, max_tokens=given.max_tokens,
                                   max_cost_per_day=given.max_cost_per_day, max_tokens_per_day=given.max_tokens_per_day)
        return self._set(tracked(session_call(self._host, SET_LIMITS, lambda session: session.set_limits(overrides))))

    async def _set(self, pending: Pending[LimitsState | None]) -> t.SetLimitsResult:
        return t.SetLimitsResult(limits=limits_info(await answered(self._pump, pending)))
