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

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

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

    async def new_session(self, *, parent_session: str | None = None,
                          setup: Callable[[Any], Any] | None = None) -> ReplaceResult:
        return _result(await self._require().new_session(parent_session=parent_session, setup=setup))

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult:
        host = self._require()
        pending = host.clone(entry_id) if position == "at" else host.fork(entry_id)
        return _result(await pending)

    async def switch_session(self, session_path: str) -> ReplaceResult:
        return _result(await self._require().resume(session_path))

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool | None = None, label: str | None = None) -> Mapping[str, Any]:
        result: Mapping[str, Any] = await self._require().call("navigateTree", lambda session: session.navigate_tree(
            target_id, summarize=summarize, custom_instructions=custom_instructions,
            replace_instructions=replace_instructions, label=label), "outside")  # the table's door of navigateTree
        return result

    async def reload(self) -> None:
        await self._require().reload()

    async def compact(self, custom_instructions: str | None = None) -> Mapping[str, Any]:
        result: Mapping[str, Any] = await self._require().call(
            "compact", lambda session: session.compact(custom_instructions), "outside")  # the table's door of compact
        return result

    async def run_turn(self, operation: str, work: Callable[[], Awaitable[Any]]) -> Any:
        return await self._require().run_for_session(operation, work)
