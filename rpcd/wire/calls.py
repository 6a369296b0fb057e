"""Session calls as the method table spells them: the door each request takes (the table's column)
and the one generic handler of a plain session call.

A row with ``session`` set (``rpcd.protocol.methods.MethodSpec.session``) needs no handler of its own:
its params' fields are the session member's keywords, its call goes through the host's one generic
call at the row's door, and the session's value becomes the row's result type field by field
(``as_result``) — a core value whose fields the protocol class shares, or the one field of a
single-field result.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union, get_args, get_origin

import attrs

from rpcd.host.host import Pending, SerializedHost
from rpcd.host.port import SessionPort
from rpcd.protocol.methods import MethodSpec, session_door
from rpcd.wire.server import current_call

__all__ = ["arguments", "as_result", "generic_handler", "session_call", "tracked"]

NOT_ARGUMENTS = frozenset({"work_done_token"})
"""Params fields that are the request's, not the session call's."""

_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    """A protocol class's field types, resolved once (``get_type_hints`` evaluates every annotation)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def tracked(pending: Pending[Any]) -> Pending[Any]:
    """Hand the arriving request's cancellation to its host operation."""
    call = current_call()
    if call is not None:
        call.on_cancel = pending.cancel
    return pending


def session_call(host: SerializedHost, name: str, act: Callable[[SessionPort], Any], *,
                 stop: Callable[[SessionPort], typing.Coroutine[Any, Any, None]] | None = None) -> Pending[Any]:
    """``act(session)`` through the door the table gives ``name``, its place taken now."""
    return host.call(name, act, session_door(name), stop=stop)


def arguments(params: Any) -> dict[str, Any]:
    """A request's params as the keywords of its session call (no params: none)."""
    if params is None or not attrs.has(type(params)):
        return {}
    return {f.name: getattr(params, f.name) for f in attrs.fields(type(params)) if f.name not in NOT_ARGUMENTS}


def as_result(value: Any, result: type[Any] | None) -> Any:
    """The session's ``value`` as the request's ``result`` type (``None``: the result is ``null``)."""
    if result is None:
        return None
    fields = attrs.fields(result)
    if not attrs.has(type(value)) and len(fields) == 1:
        hint = _hints(result)[fields[0].name]
        return result(**{fields[0].name: _coerce(value, hint)})
    return _coerce(value, result)


def _coerce(value: Any, hint: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        members = [a for a in get_args(hint) if a is not type(None)]
        return _coerce(value, members[0]) if len(members) == 1 else value
    if isinstance(hint, type) and attrs.has(hint):
        if isinstance(value, hint):
            return value
        hints = _hints(hint)
        values = {}
        for field in attrs.fields(hint):
            if hasattr(value, field.name):
                values[field.name] = _coerce(getattr(value, field.name), hints[field.name])
        return hint(**values)
    if origin is list and isinstance(value, Sequence) and not isinstance(value, str | bytes):
        (item,) = get_args(hint)
        return [_coerce(v, item) for v in value]
    if origin is dict and isinstance(value, Mapping):
        return dict(value)
    return value


def generic_handler(host: SerializedHost, spec: MethodSpec,
                    answered: Callable[[Pending[Any]], typing.Awaitable[Any]]) -> Callable[[Any], Any]:
    """The handler of a plain session call (``spec.session``): its params as keywords, its value as
    its result, answered once the pump has flushed what it produced (``answered``)."""
    member = spec.session
    assert member is not None, spec.name

    def handle(params: Any = None) -> typing.Awaitable[Any]:
        kwargs = arguments(params)
        pending = tracked(session_call(host, spec.name, lambda session: getattr(session, member)(**kwargs)))

        async def answer() -> Any:
            value = await answered(pending)
            return as_result(value, spec.result)  # its type is looked up now: the first answer needs none

        return answer()

    handle.__name__ = spec.name
    return handle
