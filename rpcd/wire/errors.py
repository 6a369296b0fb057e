"""Map any exception a handler raises to the wire's ``{code, message, data}``.

The host raises either the primary exception unchanged or one flat ``ExceptionGroup`` whose
``.exceptions`` are ``[primary, *cleanup]``; the failure context (operation, phase, target,
terminal) rides on the exception (``rpcd.host.failures.context_of``). The code follows the context
first — a terminal replacement failure is REPLACEMENT_FAILED whatever its primary was, a failed
final disposal is DISPOSAL_FAILED — and otherwise the primary's class.

Never a traceback on the wire: an exception we did not expect becomes INTERNAL_ERROR with a
correlation id, and the traceback goes to stderr under the same id. Every string in ``data``
goes through the shared redactor.
"""

from __future__ import annotations

import enum
import errno
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from rpcd.core import errors as e
from rpcd.core.redact import default_redactor
from rpcd.host.failures import FailureContext, Phase, context_of
from rpcd.protocol.converter import unstructure
from rpcd.protocol.errors import (
    CODE_BY_KIND,
    DEFAULT_MESSAGES,
    ErrorCode,
    ErrorData,
    ErrorItem,
    ErrorObject,
    ErrorTarget,
)

log = logging.getLogger("rpcd.core.errors")

_DISPOSAL_OPERATIONS = frozenset({"dispose", "shutdown", "exit"})


class WirePhase(enum.StrEnum):
    """Where a message failed before (or instead of) reaching the host: ``data.phase`` of those errors."""

    FRAMING = "framing"
    PARSE = "parse"
    ENVELOPE = "envelope"
    HANDSHAKE = "handshake"
    DISPATCH = "dispatch"
    VALIDATION = "validation"
    CANCELLATION = "cancellation"
    REQUEST = "request"


class WireError(Exception):
    """A failure whose wire form is already decided (protocol-level errors raised by handlers)."""

    def __init__(self, error: ErrorObject) -> None:
        super().__init__(error.message)
        self.error = error


def protocol_error(
    code: ErrorCode,
    detail: str,
    *,
    operation: str = "transport",
    phase: WirePhase = WirePhase.REQUEST,
    item_type: str | None = None,
    items: Sequence[ErrorItem] | None = None,
) -> ErrorObject:
    """An error that concerns the message itself, not the host (parse, validation, handshake)."""
    data = ErrorData(
        operation=operation,
        phase=phase,
        target=ErrorTarget(),
        terminal=False,
        errors=list(items) if items is not None else [ErrorItem(item_type or _type_name(code), detail)],
    )
    return ErrorObject(int(code), DEFAULT_MESSAGES[code], data)


def _type_name(code: ErrorCode) -> str:
    """``NOT_INITIALIZED`` -> ``NotInitialized``, the same style as ``RpcdError.kind``."""
    return "".join(part.capitalize() for part in code.name.split("_"))


def flatten(exc: BaseException) -> list[BaseException]:
    """``[primary, *cleanup]``; a nested group (which the host never makes) is flattened defensively."""
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for sub in exc.exceptions:
            out.extend(flatten(sub))
        return out
    return [exc]


def _is_disposal(context: FailureContext) -> bool:
    return context.operation in _DISPOSAL_OPERATIONS or context.phase is Phase.FINAL_DISPOSAL


def code_of_kind(failure: e.RpcdError) -> ErrorCode | None:
    """The code of ``failure``'s stable kind, or of the nearest base class whose kind has one."""
    for cls in type(failure).__mro__:
        kind = getattr(cls, "kind", None)
        if isinstance(kind, str) and kind in CODE_BY_KIND:
            return CODE_BY_KIND[kind]
    return None


def code_for(primary: BaseException, context: FailureContext | None, default: ErrorCode) -> ErrorCode:
    if isinstance(primary, WireError):
        return ErrorCode(primary.error.code)
    # A call refused because the host is already terminal/disposed is not itself a failed
    # replacement or disposal: the contract answers HOST_UNAVAILABLE / HOST_DISPOSED (terminal: true).
    if isinstance(primary, e.HostDisposedError):
        return ErrorCode.HOST_DISPOSED
    if isinstance(primary, e.HostUnavailableError):
        return ErrorCode.HOST_UNAVAILABLE
    if context is not None and context.terminal and context.phase is Phase.STARTUP:
        return ErrorCode.HOST_UNAVAILABLE  # the daemon never got a session; errors say why
    if context is not None and context.terminal:
        return ErrorCode.DISPOSAL_FAILED if _is_disposal(context) else ErrorCode.REPLACEMENT_FAILED
    if context is not None and _is_disposal(context) and not isinstance(primary, e.HostError):
        return ErrorCode.DISPOSAL_FAILED
    code = code_of_kind(primary) if isinstance(primary, e.RpcdError) else None
    return default if code is None else code


def _item(exc: BaseException, correlation_id: str | None) -> ErrorItem:
    redact = default_redactor().redact
    if isinstance(exc, e.RpcdError):
        cause = exc.__cause__
        errno_name = getattr(cause, "errno", None)
        code = _errno_name(errno_name) if isinstance(errno_name, int) else None
        param = getattr(exc, "param", None)
        return ErrorItem(exc.kind, redact(exc.message), code, f"$.{param}" if isinstance(param, str) else None)
    if isinstance(exc, WireError):
        return ErrorItem(exc.error.data.errors[0].type if exc.error.data else "Error", redact(exc.error.message))
    if isinstance(exc, OSError) and exc.errno is not None:
        return ErrorItem("OSError", f"{exc.strerror or 'I/O error'} (see daemon log {correlation_id})",
                         _errno_name(exc.errno))
    # Unexpected: the text may hold anything (paths are fine, transcript text is not): keep the type only.
    return ErrorItem(type(exc).__name__, f"unexpected {type(exc).__name__} (see daemon log {correlation_id})")


def _errno_name(number: int) -> str | None:
    return errno.errorcode.get(number)


def to_error(
    exc: BaseException,
    *,
    operation: str,
    default_code: ErrorCode = ErrorCode.INTERNAL_ERROR,
) -> ErrorObject:
    """The wire error for ``exc`` raised while serving ``operation``; logs unexpected failures."""
    chain = flatten(exc)
    primary = chain[0]
    if isinstance(primary, WireError) and len(chain) == 1:
        return primary.error
    context = context_of(exc) or context_of(primary)
    code = code_for(primary, context, default_code)
    expected = all(isinstance(x, e.RpcdError | WireError) for x in chain)
    correlation_id = None if expected else uuid.uuid4().hex[:12]
    items = [_item(x, correlation_id) for x in chain]
    phase: Phase | WirePhase
    if context is not None:
        target = ErrorTarget(context.cwd, context.session_path, context.entry_id)
        phase, op, terminal = context.phase, context.operation, context.terminal
    else:
        cwd = getattr(primary, "cwd", None)
        session_path = getattr(primary, "session_path", None)
        entry_id = getattr(primary, "entry_id", None)
        target = ErrorTarget(cwd, session_path, entry_id)
        phase, op, terminal = WirePhase.REQUEST, operation, False
    if correlation_id is not None:
        report_bug(exc, operation=op, phase=phase, correlation_id=correlation_id)
    message = items[0].message if isinstance(primary, e.RpcdError) else DEFAULT_MESSAGES[code]
    data = ErrorData(op, phase, target, terminal, items, correlation_id)
    return ErrorObject(int(code), message, data)


def report_bug(
    exc: BaseException,
    *,
    operation: str,
    phase: str = WirePhase.REQUEST,
    correlation_id: str | None = None,
) -> str:
    """Log an unexpected failure (our bug) with its traceback under a correlation id; return the id."""
    correlation_id = correlation_id or uuid.uuid4().hex[:12]
    log.error(
        "unexpected failure in %s",
        operation,
        # The whole group, not just the primary: an unexpected *cleanup* failure's item also says
        # "see daemon log <id>", so its traceback must be there too.
        exc_info=(type(exc), exc, exc.__traceback__),
        extra={"correlationId": correlation_id, "operation": operation, "phase": str(phase),
               "failures": [type(x).__name__ for x in flatten(exc)]},
    )
    return correlation_id


def to_wire_dict(error: ErrorObject) -> dict[str, Any]:
    """The JSON ``error`` member, redacted."""
    plain: dict[str, Any] = unstructure(error)
    redacted: dict[str, Any] = default_redactor().redact_value(plain)
    return redacted
