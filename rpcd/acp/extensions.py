"""rpcd's own session methods over ACP, as ACP extension methods (names starting with ``_``, ACP's
rule for custom methods: ``_rpcd/<method>``). Each takes ``sessionId`` and the params of the
JSON-RPC method of the same name, and answers its result (camelCase, as the JSON-RPC front does):

* ``_rpcd/listCheckpoints`` — ``listCheckpoints``;
* ``_rpcd/restoreCheckpoint`` — ``restoreCheckpoint`` (``dryRun`` for the diff preview, ``force``);
* ``_rpcd/setLimits`` — ``setLimits``;
* ``_rpcd/exportMarkdown`` — ``exportMarkdown``.

Both fronts call the same host operation and convert with the same functions
(``rpcd.wire.convert``), so they agree (``tests/e2e/test_limits.py`` and
``tests/e2e/test_checkpoints_fronts.py`` run over both).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from acp import RequestError

from rpcd.acp.errors import invalid_params, to_request_error
from rpcd.acp.session import AcpSession
from rpcd.core.values import LimitOverrides
from rpcd.host.host import Pending
from rpcd.protocol import types as t
from rpcd.protocol.converter import ParamsError, structure, unstructure
from rpcd.protocol.methods import session_door
from rpcd.protocol.names import EXPORT_MARKDOWN, LIST_CHECKPOINTS, RESTORE_CHECKPOINT, SET_LIMITS
from rpcd.wire.convert import checkpoint_summary, limits_info, restore_result

PREFIX: Final = "rpcd/"
"""ACP strips the leading ``_`` of an extension method before the agent sees it."""


async def _list(session: AcpSession, params: t.ListCheckpointsParams) -> Any:
    host = session.require_host()
    listing = await host.call(LIST_CHECKPOINTS, lambda s: s.checkpoint_listing(params.files is True),
                              session_door(LIST_CHECKPOINTS))
    return t.ListCheckpointsResult(checkpoints=[checkpoint_summary(c) for c in listing.checkpoints],
                                   undo_entry_id=listing.undo_entry_id)


async def _restore(session: AcpSession, params: t.RestoreCheckpointParams) -> Any:
    host = session.require_host()
    outcome = await host.call(RESTORE_CHECKPOINT, lambda s: s.restore_checkpoint(
        params.entry_id, files=params.files, force=params.force is True, dry_run=params.dry_run is True),
        session_door(RESTORE_CHECKPOINT))
    return restore_result(outcome)


async def _set_limits(session: AcpSession, params: t.SetLimitsParams) -> Any:
    host = session.require_host()
    overrides = LimitOverrides(max_cost=params.max_cost, max_tokens=params.max_tokens,
                               max_cost_per_day=params.max_cost_per_day, max_tokens_per_day=params.max_tokens_per_day)
    state = await host.call(SET_LIMITS, lambda s: s.set_limits(overrides), session_door(SET_LIMITS))
    return t.SetLimitsResult(limits=limits_info(state))


async def _markdown(session: AcpSession, params: t.ExportMarkdownParams) -> Any:
    host = session.require_host()
    pending: Pending[tuple[str | None, str | None]] = host.call(
        EXPORT_MARKDOWN, lambda s: s.export_markdown(params.output_path, inline=params.inline is True),
        session_door(EXPORT_MARKDOWN))
    path, text = await pending
    return t.ExportMarkdownResult(path=path, markdown=text)


Handler = Callable[[AcpSession, Any], Awaitable[Any]]
METHODS: Final[Mapping[str, tuple[type[Any], Handler]]] = {
    "listCheckpoints": (t.ListCheckpointsParams, _list),
    "restoreCheckpoint": (t.RestoreCheckpointParams, _restore),
    "setLimits": (t.SetLimitsParams, _set_limits),
    "exportMarkdown": (t.ExportMarkdownParams, _markdown),
}


async def call_extension(name: str, payload: Mapping[str, Any],
                         session_of: Callable[[str, str], AcpSession]) -> dict[str, Any]:
    """Serve ``_<name>``; ``session_of(method, session_id)`` finds the live session (or raises)."""
    method = f"_{name}"
    found = METHODS.get(name.removeprefix(PREFIX)) if name.startswith(PREFIX) else None
    if found is None:
        raise RequestError.method_not_found(method)
    params_type, handler = found
    session_id = payload.get("sessionId")
    if not isinstance(session_id, str):
        raise invalid_params(method, [{"path": "$.sessionId", "message": "expected a session id (string)"}])
    session = session_of(method, session_id)
    try:
        params = structure({k: v for k, v in payload.items() if k != "sessionId"}, params_type)
    except ParamsError as exc:
        raise invalid_params(method, [{"path": p.path, "message": p.message} for p in exc.problems]) from None
    try:
        result = await handler(session, params)
    except RequestError:
        raise
    except Exception as exc:
        raise to_request_error(exc, method) from None
    encoded: dict[str, Any] = unstructure(result)
    return encoded


__all__ = ["METHODS", "call_extension"]
