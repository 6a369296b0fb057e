"""The summary model calls: Pi 0.85.0's ``compact``, ``generateSummary``,
``generateTurnPrefixSummary``, ``generateBranchSummary`` and ``completeSummarization``.

A summary is one call to the session's model through the session's provider (the same
module every turn uses, ``rpcd.providers``), with Pi's request rules:

* system prompt ``SUMMARIZATION_SYSTEM_PROMPT``, one user message holding the serialized
  conversation in ``<conversation>`` tags, the previous summary in ``<previous-summary>``
  tags when there is one, then the instructions (``Additional focus: …`` for custom ones);
* ``maxTokens``: ``min(floor(0.8 × reserveTokens), model.maxTokens)`` for a summary,
  ``0.5 ×`` for a split turn's prefix, ``min(4096, model.maxTokens)`` for a branch summary
  (then clamped to the context window by the provider, as every request);
* the session's thinking level for compaction summaries on a reasoning model, none for
  branch summaries; no prompt-cache writes (``cacheRetention: "none"``) and a fresh routing
  session id per call;
* transient failures are retried with the session's ``retry`` settings (Pi's
  ``retryAssistantCall``), reported as ``summarization_retry_scheduled`` /
  ``summarization_retry_attempt_start`` / ``summarization_retry_finished``.

A summary that stopped on an error or on the token cap (``length``: partial text) is refused
(``SummaryError``): nothing is written from it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import anyio

from rpcd.core.jstext import content_text, js_truthy
from rpcd.core.redact import redact
from rpcd.providers.base import DEFAULT_CONTEXT_WINDOW, ModelInfo, Provider, ProviderRequest, new_assistant_message
from rpcd.providers.failures import is_retryable_assistant_error
from rpcd.runtime.compaction.branch import prepare_branch_entries
from rpcd.runtime.compaction.prepare import CompactionPreparation
from rpcd.runtime.compaction.prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from rpcd.runtime.compaction.serialize import (
    compute_file_lists,
    format_file_operations,
    llm_messages,
    serialize_conversation,
)
from rpcd.runtime.turns.retry import RetrySettings
from rpcd.store._ids import uuid7
from rpcd.tools.base import AbortSignal

_log = logging.getLogger("rpcd.runtime.compaction")

BRANCH_SUMMARY_MAX_TOKENS = 4096
NO_CONTENT_TO_SUMMARIZE = "No content to summarize"

EventSink = Callable[[dict[str, Any]], None]


class SummaryError(Exception):
    """A summary that must not become a session checkpoint (the message is Pi's)."""


# -- prompts (what the differential tests compare with Pi's requests) ---------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def summary_prompt(messages: Sequence[Mapping[str, Any]], custom_instructions: str | None = None,
                   previous_summary: Any = None) -> str:
    """The user message of ``generateSummary``."""
    base = UPDATE_SUMMARIZATION_PROMPT if js_truthy(previous_summary) else SUMMARIZATION_PROMPT
    if custom_instructions:
        base = f"{base}\n\nAdditional focus: {custom_instructions}"
    text = f"<conversation>\n{serialize_conversation(llm_messages(messages))}\n</conversation>\n\n"
    if js_truthy(previous_summary):
        text += f"<previous-summary>\n{_text(previous_summary)}\n</previous-summary>\n\n"
    return text + base


def turn_prefix_prompt(messages: Sequence[Mapping[str, Any]]) -> str:
    """The user message of ``generateTurnPrefixSummary``."""
    conversation = serialize_conversation(llm_messages(messages))
    return f"<conversation>\n{conversation}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"


def branch_summary_prompt(messages: Sequence[Mapping[str, Any]], custom_instructions: str | None = None,
                          replace_instructions: bool | None = None) -> str:
    """The user message of ``generateBranchSummary``."""
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    conversation = serialize_conversation(llm_messages(messages))
    return f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}"


def _cap(fraction_of: float, model: ModelInfo) -> int:
    limit = model.max_tokens if model.max_tokens > 0 else math.inf
    return int(min(math.floor(fraction_of), limit))


def summary_max_tokens(reserve_tokens: float, model: ModelInfo) -> int:
    return _cap(0.8 * reserve_tokens, model)


def turn_prefix_max_tokens(reserve_tokens: float, model: ModelInfo) -> int:
    return _cap(0.5 * reserve_tokens, model)


def branch_summary_max_tokens(model: ModelInfo) -> int:
    return _cap(BRANCH_SUMMARY_MAX_TOKENS, model)


# -- the model call -----------------------------------------------------------------------------


class Summarizer:
    """One compaction's (or branch summary's) model calls; ``abort()`` stops them.

    ``thinking_level`` is used only on a reasoning model and only where Pi uses it.
    """

    def __init__(self, *, provider: Provider, model: ModelInfo, thinking_level: str = "off",
                 retry: RetrySettings | None = None, on_event: EventSink | None = None,
                 source: Mapping[str, Any] | None = None) -> None:
        self.provider = provider
        self.model = model
        self.thinking_level = thinking_level
        self.retry = retry or RetrySettings()
        self.on_event = on_event
        self.source = dict(source or {})
        self.signal = AbortSignal()
        self._scope: anyio.CancelScope | None = None

    def abort(self) -> None:
        self.signal.abort()
        if self._scope is not None:
            self._scope.cancel()

    @property
    def aborted(self) -> bool:
        return self.signal.aborted

    def _emit(self, event: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def request(self, prompt_text: str, max_tokens: int, *, reasoning: bool) -> ProviderRequest:
        level = self.thinking_level if reasoning and self.model.reasoning and self.thinking_level != "off" else "off"
        message = {"role": "user", "content": [{"type": "text", "text": prompt_text}],
                   "timestamp": int(time.time() * 1000)}
        return ProviderRequest(model=self.model, system_prompt=SUMMARIZATION_SYSTEM_PROMPT, messages=[message],
                               tools=(), thinking_level=level, session_id=uuid7(), max_tokens=max_tokens,
                               cache_retention="none")

    async def complete(self, prompt_text: str, max_tokens: int, *, reasoning: bool) -> dict[str, Any]:
        """``completeSummarization``: one call, retried on transient failures."""
        request = self.request(prompt_text, max_tokens, reasoning=reasoning)
        max_attempts = self.retry.max_retries if self.retry.enabled else 0
        attempt = 0
        retried = False
        while True:
            response = await self._once(request)
            stop = response.get("stopReason")
            if stop != "error" or attempt >= max_attempts or not is_retryable_assistant_error(response):
                if retried:
                    self._emit({"type": "summarization_retry_finished"})
                return response
            attempt += 1
            retried = True
            delay_ms = self.retry.base_delay_ms * 2 ** (attempt - 1)
            self._emit({"type": "summarization_retry_scheduled", "attempt": attempt, "maxAttempts": max_attempts,
                        "delayMs": int(delay_ms) if float(delay_ms).is_integer() else delay_ms,
                        "errorMessage": str(response.get("errorMessage") or "Unknown error")})
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self.signal.aborted:
                    scope.cancel()
                await anyio.sleep(delay_ms / 1000)
            self._scope = None
            if self.signal.aborted:
                self._emit({"type": "summarization_retry_finished"})
                aborted = {k: v for k, v in response.items() if k != "errorMessage"}
                aborted["stopReason"] = "aborted"
                return aborted
            self._emit({"type": "summarization_retry_attempt_start", **self.source})

    async def _once(self, request: ProviderRequest) -> dict[str, Any]:
        final: dict[str, Any] | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self.signal.aborted:
                scope.cancel()
            try:
                async with aclosing(self.provider.stream(request)) as stream:  # type: ignore[type-var]
                    async for event in stream:
                        kind = event.get("type")
                        if kind == "done":
                            final = dict(event["message"])
                            break
                        if kind == "error":
                            final = dict(event["error"])
                            break
            except Exception as exc:  # a provider bug ends the summary, never the daemon
                _log.warning("summary call to %s failed: %s", self.model.provider, type(exc).__name__)
                final = new_assistant_message(self.model)
                final["stopReason"] = "error"
                final["errorMessage"] = redact(str(exc)) or type(exc).__name__
        self._scope = None
        if final is None:
            final = new_assistant_message(self.model)
            if self.signal.aborted or scope.cancelled_caught:
                final["stopReason"] = "aborted"
                final["errorMessage"] = "Request was aborted"
            else:
                final["stopReason"] = "error"
                final["errorMessage"] = "Provider stream ended without a result"
        return final


def summarization_failure(response: Mapping[str, Any], label: str) -> str | None:
    """Pi's ``getSummarizationFailure``: an error, or a summary cut off by the token cap."""
    stop = response.get("stopReason")
    if stop == "error":
        return f"{label} failed: {response.get('errorMessage') or 'Unknown error'}"
    if stop == "length":
        return f"{label} failed: generation hit the token cap and the summary is incomplete"
    return None


def _calls_a_tool(response: Mapping[str, Any]) -> bool:
    content = response.get("content")
    return isinstance(content, list) and any(isinstance(b, Mapping) and b.get("type") == "toolCall" for b in content)


def _checked_text(response: Mapping[str, Any], label: str) -> str:
    failure = summarization_failure(response, label)
    if failure is not None:
        raise SummaryError(failure)
    if _calls_a_tool(response):
        raise SummaryError(f"{label} attempted to call a tool")
    return content_text(response.get("content") or [])


async def generate_summary(messages: Sequence[Mapping[str, Any]], summarizer: Summarizer, reserve_tokens: float,
                           custom_instructions: str | None = None,
                           previous_summary: Any = None) -> tuple[str, Any]:
    """Pi's ``generateSummaryWithUsage``: ``(text, usage)``."""
    prompt = summary_prompt(messages, custom_instructions, previous_summary)
    response = await summarizer.complete(prompt, summary_max_tokens(reserve_tokens, summarizer.model),
                                         reasoning=True)
    return _checked_text(response, "Summarization"), response.get("usage")


async def generate_turn_prefix_summary(messages: Sequence[Mapping[str, Any]], summarizer: Summarizer,
                                       reserve_tokens: float) -> tuple[str, Any]:
    response = await summarizer.complete(turn_prefix_prompt(messages),
                                         turn_prefix_max_tokens(reserve_tokens, summarizer.model), reasoning=True)
    return _checked_text(response, "Turn prefix summarization"), response.get("usage")


def combine_usage(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """Pi's ``combineUsage`` (the two calls of a split-turn compaction)."""
    def n(usage: Mapping[str, Any], key: str) -> Any:
        return usage.get(key, 0) or 0

    out: dict[str, Any] = {key: n(first, key) + n(second, key) for key in ("input", "output", "cacheRead",
                                                                             "cacheWrite")}
    for key in ("cacheWrite1h", "reasoning"):
        if key in first or key in second:
            out[key] = n(first, key) + n(second, key)
    out["totalTokens"] = n(first, "totalTokens") + n(second, "totalTokens")
    first_cost = first.get("cost") if isinstance(first.get("cost"), Mapping) else {}
    second_cost = second.get("cost") if isinstance(second.get("cost"), Mapping) else {}
    assert isinstance(first_cost, Mapping) and isinstance(second_cost, Mapping)
    out["cost"] = {key: n(first_cost, key) + n(second_cost, key)
                   for key in ("input", "output", "cacheRead", "cacheWrite", "total")}
    return out


async def compact(preparation: CompactionPreparation, summarizer: Summarizer,
                  custom_instructions: str | None = None) -> dict[str, Any]:
    """Pi's ``compact``: the summary (two merged for a split turn), with the file lists appended.
    Returns Pi's ``CompactionResult`` (``summary, firstKeptEntryId, tokensBefore, usage, details``)."""
    reserve = preparation.settings.reserve_tokens
    if preparation.is_split_turn and preparation.turn_prefix_messages:
        history_text, history_usage = "No prior history.", None
        if preparation.messages_to_summarize:
            history_text, history_usage = await generate_summary(
                preparation.messages_to_summarize, summarizer, reserve, custom_instructions,
                preparation.previous_summary)
        prefix_text, prefix_usage = await generate_turn_prefix_summary(
            preparation.turn_prefix_messages, summarizer, reserve)
        summary = f"{history_text}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix_text}"
        usage = combine_usage(history_usage, prefix_usage) if isinstance(history_usage, Mapping) \
            and isinstance(prefix_usage, Mapping) else prefix_usage
    else:
        summary, usage = await generate_summary(preparation.messages_to_summarize, summarizer, reserve,
                                                custom_instructions, preparation.previous_summary)
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    summary += format_file_operations(read_files, modified_files)
    result: dict[str, Any] = {"summary": summary, "firstKeptEntryId": preparation.first_kept_entry_id,
                              "tokensBefore": preparation.tokens_before}
    if usage is not None:
        result["usage"] = usage
    result["details"] = {"readFiles": read_files, "modifiedFiles": modified_files}
    return result


async def generate_branch_summary(entries: Sequence[dict[str, Any]], summarizer: Summarizer, *,
                                  reserve_tokens: float, custom_instructions: str | None = None,
                                  replace_instructions: bool | None = None) -> dict[str, Any]:
    """Pi's ``generateBranchSummary``: ``{summary, usage?, readFiles, modifiedFiles}``,
    ``{aborted: True}`` or ``{error}``."""
    context_window = summarizer.model.context_window or DEFAULT_CONTEXT_WINDOW
    prepared = prepare_branch_entries(entries, context_window - reserve_tokens)
    if not prepared.messages:
        return {"summary": NO_CONTENT_TO_SUMMARIZE}
    prompt = branch_summary_prompt(prepared.messages, custom_instructions, replace_instructions)
    response = await summarizer.complete(prompt, branch_summary_max_tokens(summarizer.model), reasoning=False)
    if response.get("stopReason") == "aborted":
        return {"aborted": True}
    failure = summarization_failure(response, "Branch summarization")
    if failure is not None:
        return {"error": failure}
    if _calls_a_tool(response):
        return {"error": "Branch summarization attempted to call a tool"}
    summary = BRANCH_SUMMARY_PREAMBLE + content_text(response.get("content") or [])
    read_files, modified_files = compute_file_lists(prepared.file_ops)
    summary += format_file_operations(read_files, modified_files)
    out: dict[str, Any] = {"summary": summary or "No summary generated"}
    if response.get("usage") is not None:
        out["usage"] = response.get("usage")
    out["readFiles"] = read_files
    out["modifiedFiles"] = modified_files
    return out
