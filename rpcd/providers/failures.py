"""What a failed turn means: retry it, compact first, or give up — decided as Pi decides.

Both rules read the assistant message a provider produced (``stopReason: "error"`` and its
``errorMessage``), which every API module words as Pi's SDKs do, so the decision here is
Pi's decision for the same failure:

* ``context_overflow`` — pi-ai ``utils/overflow.ts``: the request did not fit the model's
  context window. Recognised per API by the texts the providers send back (Anthropic
  ``prompt is too long`` / ``request_too_large``, OpenAI ``exceeds the context window`` /
  ``context_length_exceeded``, Gemini ``input token count … exceeds the maximum``, and the
  OpenAI-compatible servers' phrasings), or silently (usage above the window). It is the
  ONE error type for this condition: ``ContextOverflowError`` (``rpcd.core.errors``), which
  compaction (issue 17) builds on. Overflow is never retried as a transient failure.
* ``is_retryable_error`` — pi-ai ``utils/retry.ts``: overload, rate limits, 5xx, connection
  and timeout failures, streams that ended early; never quota/billing exhaustion.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

from rpcd.core.errors import ContextOverflowError

# The patterns are compiled by the first failed turn that needs them (compiling the ~30 of them at
# import was ~15 ms of every daemon's start, before its first answer).
OVERFLOW_PATTERNS: Final = (
    r"prompt is too long",
    r"request_too_large",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (?:max )?context length",
    r"range of input length should be",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
)
NON_OVERFLOW_PATTERNS: Final = (
    r"^(Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
)
_NON_RETRYABLE: Final = "|".join((
    "GoUsageLimitError", "FreeUsageLimitError", "Monthly usage limit reached", "available balance",
    "insufficient_quota", "out of budget", "quota exceeded", "billing",
))
_RETRYABLE: Final = "|".join((
    "overloaded", "rate.?limit", "too many requests", "429", "500", "502", "503", "504", "524",
    "service.?unavailable", "server.?error", "internal.?error", "provider.?returned.?error",
    "exceeded request buffer limit while retrying upstream", "network.?error", "connection.?error",
    "connection.?refused", "connection.?lost", "other side closed", "fetch failed", "getaddrinfo", "ENOTFOUND",
    "EAI_AGAIN", "upstream.?connect", "reset before headers", "socket hang up", "socket connection was closed",
    "timed? out", "timeout", "terminated", "websocket.?closed", "websocket.?error", "ended without",
    "stream ended before message_stop", "stream ended before a terminal response event",
    "http2 request did not get a response", "retry delay", "you can retry your request",
    "try your request again", "please retry your request", "ResourceExhausted",
))


@functools.cache
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def _usage(message: Mapping[str, Any], key: str) -> int:
    usage = message.get("usage")
    value = usage.get(key) if isinstance(usage, Mapping) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def context_overflow(message: Mapping[str, Any], context_window: int = 0) -> ContextOverflowError | None:
    """The overflow this assistant message reports, or ``None`` (pi-ai ``isContextOverflow``)."""
    stop = message.get("stopReason")
    error = message.get("errorMessage")
    provider, model = str(message.get("provider", "")), str(message.get("model", ""))
    if (stop == "error" and isinstance(error, str) and error
            and not any(p.search(error) for p in _compiled(NON_OVERFLOW_PATTERNS))
            and any(p.search(error) for p in _compiled(OVERFLOW_PATTERNS))):
            return ContextOverflowError(f"Context window exceeded for {provider}/{model}", provider=provider,
                                        model=model, reason="error", provider_message=error)
    inputs = _usage(message, "input") + _usage(message, "cacheRead")
    if context_window and stop == "stop" and inputs > context_window:
        return ContextOverflowError(f"Context window exceeded for {provider}/{model} (usage above the window)",
                                    provider=provider, model=model, reason="silent")
    if context_window and stop == "length" and _usage(message, "output") == 0 and inputs >= context_window * 0.99:
        return ContextOverflowError(f"Context window exceeded for {provider}/{model} (input filled the window)",
                                    provider=provider, model=model, reason="length")
    return None


def is_recoverable_length(message: Mapping[str, Any], desired_max_output: int) -> bool:
    """pi-ai ``isRecoverableLength``: a ``length`` stop below the model's own output limit (context
    pressure or a provider cut), worth one compact-and-retry."""
    return (message.get("stopReason") == "length" and desired_max_output > 0
            and _usage(message, "output") < desired_max_output)


def is_retryable_error(message: Mapping[str, Any], context_window: int = 0) -> bool:
    """Pi's ``_isRetryableError``: a transient provider failure, and not a context overflow."""
    if context_overflow(message, context_window) is not None:
        return False
    return is_retryable_assistant_error(message)


def is_retryable_assistant_error(message: Mapping[str, Any]) -> bool:
    """pi-ai ``isRetryableAssistantError`` (summary calls retry on it without the overflow check)."""
    error = message.get("errorMessage")
    if message.get("stopReason") != "error" or not isinstance(error, str) or not error:
        return False
    if _compiled((_NON_RETRYABLE,))[0].search(error):
        return False
    return bool(_compiled((_RETRYABLE,))[0].search(error))
