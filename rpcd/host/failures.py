"""Failure context and flat failure aggregation for the host (seed §5, §7-§9).

``FailureContext`` says which operation failed, in which phase, on which target,
and whether the host is now terminal. It rides on the exception object itself
(``attach_context`` / ``context_of``) so a primary failure can be re-raised
*unchanged* and still be described on the wire.

``SessionBindingFailure`` is the Python form of the seed's ``AggregateError``: one
flat group whose ``exceptions`` are ``(primary, *cleanup_failures)`` in the order
they happened and whose ``__cause__`` is the primary. It is never nested: a member
that is itself an exception group is spliced in by its leaves, so a reader (the
wire layer, a log line) can always walk exactly one level.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import NoReturn

import attrs

_CONTEXT_ATTR = "__rpcd_failure_context__"


class Phase(enum.StrEnum):
    """Where a host operation failed, in the seed's words (one place: host, tests and wire agree)."""

    AVAILABILITY = "host availability"
    STARTUP = "startup"
    PRE_VALIDATION = "pre-validation"
    REPLACEMENT = "session replacement"
    PERSISTENCE = "replacement persistence"
    BINDING = "replacement session binding"
    INVALIDATION_CLEANUP = "replacement invalidation cleanup"
    INITIAL_BINDING = "initial session binding"
    FINAL_DISPOSAL = "final session runtime disposal"
    SESSION_ACCESS = "session access"


@attrs.frozen
class FailureContext:
    operation: str
    """The wire method or host step: ``newSession``, ``resume``, ``fork``, ``clone``, ``importJsonl``,
    ``dispose``, ``startup``, ``prompt``, ..."""
    phase: Phase
    """Where it failed (``Phase``: the seed's words)."""
    cwd: str | None = None
    session_path: str | None = None
    entry_id: str | None = None
    terminal: bool = False


def attach_context(exc: BaseException, context: FailureContext) -> BaseException:
    """Record ``context`` on ``exc`` (replacing an earlier one) and return ``exc``."""
    setattr(exc, _CONTEXT_ATTR, context)
    return exc


def context_of(exc: BaseException) -> FailureContext | None:
    value = getattr(exc, _CONTEXT_ATTR, None)
    return value if isinstance(value, FailureContext) else None


class SessionBindingFailure(ExceptionGroup[Exception]):
    """A primary failure plus the cleanup failures that followed it, flat and ordered.

    ``exceptions[0]`` is the primary (also ``__cause__`` and ``primary``);
    ``exceptions[1:]`` are cleanup failures in occurrence order (``cleanup_failures``).
    """

    def __new__(cls, message: str, exceptions: Sequence[Exception]) -> SessionBindingFailure:
        return super().__new__(cls, message, list(_flatten(exceptions)))

    def __init__(self, message: str, exceptions: Sequence[Exception]) -> None:
        super().__init__(message, list(_flatten(exceptions)))
        self.__cause__ = self.exceptions[0]

    @property
    def primary(self) -> Exception:
        return self.exceptions[0]

    @property
    def cleanup_failures(self) -> tuple[Exception, ...]:
        return tuple(self.exceptions[1:])


def _flatten(exceptions: Iterable[BaseException]) -> Iterable[Exception]:
    for exc in exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _flatten(exc.exceptions)
        elif isinstance(exc, Exception):
            yield exc


def raise_session_binding_failure(
    primary: Exception,
    cleanup_failures: Sequence[Exception],
    context: FailureContext,
) -> NoReturn:
    """The seed's ``throwSessionBindingFailure``, with context on the failure and every member.

    With no cleanup failures the primary is re-raised unchanged (same object, so its
    traceback and type survive); otherwise one flat ``SessionBindingFailure`` is raised
    exactly once. Members that already carry a context keep it (it names where *they*
    failed); members without one get ``context``.
    """
    if isinstance(primary, BaseExceptionGroup) and not cleanup_failures and not isinstance(
        primary, SessionBindingFailure
    ):
        # A foreign group as primary would be nested inside ours later; flatten it now.
        leaves = list(_flatten([primary]))
        primary, cleanup_failures = leaves[0], leaves[1:]
    if not cleanup_failures:
        attach_context(primary, context)
        raise primary
    failure = SessionBindingFailure(f"{context.phase} failed and cleanup also failed", [primary, *cleanup_failures])
    for member in failure.exceptions:
        if context_of(member) is None:
            attach_context(member, context)
    attach_context(failure, context)
    raise failure
