"""Session control for extension commands (Pi's ``commandContextActions``), through the host.

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

from rpcd.core.values import ForkPosition, ReplaceResult
from rpcd.host.host import ReplacementOutcome, SerializedHost

__all__ = ["HostCommandActions"]


def _result(outcome: ReplacementOutcome) -> ReplaceResult:
    return ReplaceResult(outcome.cancelled, outcome.selected_text, outcome.session_id)


class HostCommandActions:
    """``rpcd.core.values.CommandActions`` over a serialized host (given, or looked up at each call:
    a front that binds its first session while its host is being made)."""

    def __init__(self, host: SerializedHost | Callable[[], SerializedHost]) -> None:
        self._get = host if callable(host) and not isinstance(host, SerializedHost) else None
        self._fixed = host if isinstance(host, SerializedHost) else None

    @property
    def _host(self) -> SerializedHost:
        host = self._fixed if self._fixed is not None else (self._get() if self._get is not None else None)
        if host is None:
            raise RuntimeError("no host")
        return host

    async def new_session(self, *, parent_session: str | None = None,
                          setup: Callable[[Any], Any] | None = None) -> ReplaceResult:
        return _result(await self._host.new_session(parent_session=parent_session, setup=setup))

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult:
        pending = self._host.clone(entry_id) if position == "at" else self._host.fork(entry_id)
        return _result(await pending)

    async def switch_session(self, session_path: str) -> ReplaceResult:
        return _result(await self._host.resume(session_path))

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool | None = None, label: str | None = None) -> Mapping[str, Any]:
        return await self._host.navigate_tree(target_id, summarize=summarize, custom_instructions=custom_instructions,
                                              replace_instructions=replace_instructions, label=label)

    async def reload(self) -> None:
        await self._host.reload()

    async def compact(self, custom_instructions: str | None = None) -> Mapping[str, Any]:
        return await self._host.compact(custom_instructions)

    async def run_turn(self, operation: str, work: Callable[[], Awaitable[Any]]) -> Any:
        return await self._host.run_for_session(operation, work)
