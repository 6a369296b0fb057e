"""Pi's automatic retry of a failed turn (``AgentSession._prepareRetry`` and friends).

When a turn ends with a transient provider failure (``rpcd.providers.failures``:
overloaded / 529, rate limited / 429, 5xx, a connection error or timeout, a stream that
stopped early — never a context overflow or an exhausted quota), the session:

1. reports ``agent_end`` with ``willRetry: true``;
2. emits ``auto_retry_start {attempt, maxAttempts, delayMs, errorMessage}`` with
   ``delayMs = retry.baseDelayMs × 2^(attempt-1)`` (2 s, 4 s, 8 s);
3. keeps the failed assistant message in the session file but drops it from the model's
   context, waits (``abort`` cancels the wait: ``auto_retry_end {success: false,
   finalError: "Retry cancelled"}``), and continues the turn (``agent_start`` again);
4. when an attempt produces an assistant message that is not an error, emits
   ``auto_retry_end {success: true, attempt}``; when the retries run out, or the failure
   is not retryable, ``auto_retry_end {success: false, attempt, finalError}``.

Every ``auto_retry_start`` is paired with exactly one ``auto_retry_end``.
Settings: ``retry.enabled`` (true), ``retry.maxRetries`` (3), ``retry.baseDelayMs`` (2000).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import anyio
import attrs

from rpcd.core.errors import ContextOverflowError
from rpcd.providers.failures import context_overflow, is_retryable_error
from rpcd.runtime.turns.agent import Agent

RETRY_CANCELLED: Final = "Retry cancelled"


@attrs.frozen
class RetrySettings:
    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: float = 2000.0

    @classmethod
    def from_settings(cls, settings: Any) -> RetrySettings:
        getter = getattr(settings, "get", None)
        retry = getter("retry") if callable(getter) else None
        if not isinstance(retry, Mapping):
            return cls()
        default = cls()
        max_retries = retry.get("maxRetries", default.max_retries)
        base = retry.get("baseDelayMs", default.base_delay_ms)
        return cls(
            enabled=retry.get("enabled", True) is not False,
            max_retries=int(max_retries) if isinstance(max_retries, int | float) and not isinstance(max_retries, bool)
            and max_retries >= 0 else default.max_retries,
            base_delay_ms=float(base) if isinstance(base, int | float) and not isinstance(base, bool) and base >= 0
            else default.base_delay_ms,
        )


class _Compaction(Protocol):
    async def check(self, message: Mapping[str, Any]) -> bool: ...


class RetryHost(Protocol):
    """What the retry uses of its session (``AgentSession``), without importing it."""

    @property
    def agent(self) -> Agent: ...
    @property
    def compaction(self) -> _Compaction: ...
    def settings(self) -> Any: ...
    def notify(self, event: dict[str, Any]) -> None: ...


class SessionRetry:
    """The retry state of one session (one turn's retries at a time)."""

    def __init__(self, session: RetryHost) -> None:
        self._session = session
        self.attempt = 0
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False
        self.enabled_override: bool | None = None
        """What ``setAutoRetry`` chose for this session (its settings were read before)."""

    def _settings(self) -> RetrySettings:
        settings = RetrySettings.from_settings(self._session.settings())
        override = self.enabled_override
        return settings if override is None else attrs.evolve(settings, enabled=override)

    @property
    def enabled(self) -> bool:
        """``_settings().enabled`` without building the settings (``getState`` asks it every call)."""
        override = self.enabled_override
        if override is not None:
            return override
        getter = getattr(self._session.settings(), "get", None)
        retry = getter("retry") if callable(getter) else None
        return retry.get("enabled", True) is not False if isinstance(retry, Mapping) else True

    @property
    def waiting(self) -> bool:
        """A retry is waiting for its delay (what ``abortRetry`` cancels)."""
        return self._scope is not None

    def _context_window(self) -> int:
        model = self._session.agent.model
        return int(getattr(model, "context_window", 0) or 0)

    def _last_assistant(self) -> Mapping[str, Any] | None:
        for message in reversed(self._session.agent.messages):
            if message.get("role") == "assistant":
                found: Mapping[str, Any] = message
                return found
        return None

    def retryable(self, message: Mapping[str, Any]) -> bool:
        return is_retryable_error(message, self._context_window())

    def will_retry(self, produced: Sequence[Mapping[str, Any]]) -> bool:
        """``agent_end.willRetry`` (Pi's ``_willRetryAfterAgentEnd``)."""
        settings = self._settings()
        if not settings.enabled or self.attempt >= settings.max_retries:
            return False
        for message in reversed(produced):
            if message.get("role") == "assistant":
                return self.retryable(message)
        return False

    def on_assistant_end(self, message: Mapping[str, Any]) -> None:
        """An attempt produced a non-error reply: the retry sequence succeeded."""
        if message.get("stopReason") != "error" and self.attempt > 0:
            attempt, self.attempt = self.attempt, 0
            self._session.notify({"type": "auto_retry_end", "success": True, "attempt": attempt})

    async def after_run(self) -> bool:
        """Decide after a run whether to continue it (``True``: the caller runs again): a retry
        first, then Pi's ``_checkCompaction`` (a context overflow is compacted and retried once,
        a context over the threshold is compacted)."""
        message = self._last_assistant()
        if message is None or self._cancelled:
            return self._end_cancelled()
        if self.retryable(message) and await self._prepare(message):
            return True
        if message.get("stopReason") == "error" and self.attempt > 0:
            self._end(str(message.get("errorMessage") or ""))
        elif self.attempt > 0:  # aborted while retrying: the sequence still ends
            self._end(str(message.get("errorMessage") or "Request was aborted"))
        if self._session.agent.abort_requested or self._cancelled:
            return False
        return await self._session.compaction.check(message)

    def _end(self, final_error: str) -> None:
        attempt, self.attempt = self.attempt, 0
        self._session.notify({"type": "auto_retry_end", "success": False, "attempt": attempt,
                               "finalError": final_error})

    def _end_cancelled(self) -> bool:
        self._cancelled = False
        if self.attempt > 0:
            self._end(RETRY_CANCELLED)
        return False

    async def _prepare(self, message: Mapping[str, Any]) -> bool:
        settings = self._settings()
        if not settings.enabled or self._session.agent.abort_requested:
            return False
        self.attempt += 1
        if self.attempt > settings.max_retries:
            self.attempt -= 1
            return False
        delay_ms = settings.base_delay_ms * 2 ** (self.attempt - 1)
        self._session.notify({
            "type": "auto_retry_start",
            "attempt": self.attempt,
            "maxAttempts": settings.max_retries,
            "delayMs": int(delay_ms) if float(delay_ms).is_integer() else delay_ms,
            "errorMessage": str(message.get("errorMessage") or "Unknown error"),
        })
        messages = self._session.agent.messages
        if messages and messages[-1].get("role") == "assistant":
            messages.pop()  # kept in the file, not in the model's context
        self._cancelled = False
        with anyio.CancelScope() as scope:
            self._scope = scope
            await anyio.sleep(delay_ms / 1000)
        self._scope = None
        if scope.cancelled_caught or self._cancelled:
            self._cancelled = False
            self._end(RETRY_CANCELLED)
            return False
        return True

    def cancel(self) -> None:
        """``abort`` during the wait: the retry is cancelled (and ended)."""
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    def overflow_of(self, message: Mapping[str, Any] | None) -> ContextOverflowError | None:
        """The context overflow ``message`` reports (``None``: none, or no message)."""
        return context_overflow(message, self._context_window()) if message is not None else None
