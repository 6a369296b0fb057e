"""Session control for extension commands (Pi's ``commandContextActions``), through the host — for
the sessions of every front.

A command's ``ctx.new_session()`` / ``ctx.fork()`` / ``ctx.switch_session()`` is one host call,
made the way a wire request makes it: queued behind everything requested before it (the host's
FIFO), named like the request (the runtime gives its lifecycle reason ``new``/``fork``/``resume``),
and failing closed like one. Never around the host: the runtime is not touched from here.

Why this does not deadlock: a command runs inside ``prompt``, but outside the host lock and
without marking its session busy (as in Pi), so the replacement's teardown finds no turn to wait
for; a command started while a turn streams gets that turn aborted and persisted first. The host
refuses a call from inside one of its own operations (an extension handler of ``session_*``) and
the runtime refuses one from inside a turn (a tool, a turn's event handler): both would wait for
themselves.
"""

from __future__ import annotations

from rpcd.core.errors import HostUnavailableError
from rpcd.core.values import ForkPosition, ReplaceResult
from rpcd.host.host import ReplacementOutcome, SerializedHost

__all__ = ["HostCommandActions"]


def _result(outcome: ReplacementOutcome) -> ReplaceResult:
    return ReplaceResult(outcome.cancelled, outcome.selected_text, outcome.session_id)


class HostCommandActions:
    """``rpcd.core.values.CommandActions`` over one serialized host (given now, or once it is bound:
    ``attach``; a command cannot run before its session is bound)."""

    def __init__(self, host: SerializedHost | None = None) -> None:
        self._host = host

    def attach(self, host: SerializedHost) -> None:
        self._host = host

    def _require(self) -> SerializedHost:
        if self._host is None:
            raise HostUnavailableError("the session is not bound yet")
        return self._host

    async def new_session(self) -> ReplaceResult:
        return _result(await self._require().new_session())

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult:
        host = self._require()
        pending = host.clone(entry_id) if position == "at" else host.fork(entry_id)
        return _result(await pending)

    async def switch_session(self, session_path: str) -> ReplaceResult:
        return _result(await self._require().resume(session_path))
