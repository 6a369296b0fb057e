"""Failure context and flat failure aggregation for the host (seed §5, §7-§9).

``FailureContext`` says which operation failed, in which phase, on which target,
and whether the host is now terminal. It rides on the exception object itself
(``attach_context`` / ``context_of``) so a primary failure can be re-raised
*unchanged* and still be described on the wire.
"""

from __future__ import annotations

import attrs

_CONTEXT_ATTR = "__rpcd_failure_context__"


@attrs.frozen
class FailureContext:
    operation: str
    """The wire method or host step: ``newSession``, ``resume``, ``fork``, ``clone``, ``importJsonl``,
    ``dispose``, ``startup``, ``prompt``, ..."""
    phase: str
    """Where it failed, in the seed's words: ``session replacement``, ``replacement persistence``,
    ``replacement session binding``, ``replacement invalidation cleanup``, ``initial session binding``,
    ``final session runtime disposal``, ``pre-validation``, ..."""
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
