"""Token accounting as Pi does it: session statistics and the context-window estimate.

* ``session_stats`` — ``AgentSession.getSessionStats``: counts over *every* entry of the file
  (other branches and compacted history included, so the totals are what was billed): user,
  assistant and tool-result messages, the tool calls in assistant content; tokens and cost summed
  over assistant usage, tool-reported usage and compaction / branch-summary usage.
* ``estimate_tokens`` / ``estimate_context_tokens`` — pi-coding-agent's ``compaction.ts``
  (chars / 4, images 4800 chars, the last valid assistant usage plus estimates of what follows);
  compaction (issue 17) decides with the same functions.
* ``context_usage`` — ``getContextUsage``: unknown (``null``) after a compaction until an
  assistant reply after it reported usage.

Character counts are JavaScript string lengths (UTF-16 code units), so estimates match Pi's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from rpcd.core.values import ContextUsage, SessionStats, TokenTotals
from rpcd.tools.truncate import utf16_len as js_length

ESTIMATED_IMAGE_CHARS: Final = 4800


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class _Totals:
    def __init__(self) -> None:
        self.input = self.output = self.cache_read = self.cache_write = 0
        self.cost = 0.0

    def add(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        self.input += _tokens(usage, "input")
        self.output += _tokens(usage, "output")
        self.cache_read += _tokens(usage, "cacheRead")
        self.cache_write += _tokens(usage, "cacheWrite")
        cost = usage.get("cost")
        if isinstance(cost, Mapping):
            self.cost += _number(cost.get("total"))


def session_stats(
    entries: Iterable[Mapping[str, Any]],
    *,
    session_id: str,
    session_file: str | None,
    context: ContextUsage | None,
) -> SessionStats:
    user = assistant = tool_results = tool_calls = total = 0
    totals = _Totals()
    for entry in entries:
        kind = entry.get("type")
        if kind in ("branch_summary", "compaction") and entry.get("usage"):
            totals.add(entry["usage"])
        if kind != "message":
            continue
        message = entry.get("message")
        if not isinstance(message, Mapping):
            continue
        total += 1
        role = message.get("role")
        if role == "user":
            user += 1
        elif role == "toolResult":
            tool_results += 1
            if message.get("usage"):
                totals.add(message["usage"])
        elif role == "assistant":
            assistant += 1
            content = message.get("content")
            if isinstance(content, list):
                tool_calls += sum(1 for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall")
            totals.add(message.get("usage"))
    return SessionStats(
        session_id=session_id,
        session_file=session_file,
        user_messages=user,
        assistant_messages=assistant,
        tool_calls=tool_calls,
        tool_results=tool_results,
        total_messages=total,
        tokens=TokenTotals(totals.input, totals.output, totals.cache_read, totals.cache_write),
        cost=totals.cost,
        context_usage=context,
    )


def calculate_context_tokens(usage: Mapping[str, Any]) -> int:
    """``totalTokens``, else the sum of its parts."""
    total = _tokens(usage, "totalTokens")
    if total:
        return total
    return sum(_tokens(usage, key) for key in ("input", "output", "cacheRead", "cacheWrite"))


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_length(content)
    chars = 0
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            chars += js_length(block["text"])
        elif block.get("type") == "image":
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """Pi's ``estimateTokens``: characters / 4, rounded up."""
    role = message.get("role")
    chars = 0
    if role in ("user", "custom", "toolResult"):
        chars = _content_chars(message.get("content"))
    elif role == "assistant":
        for block in message.get("content") or ():
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text":
                chars += js_length(str(block.get("text", "")))
            elif block.get("type") == "thinking":
                chars += js_length(str(block.get("thinking", "")))
            elif block.get("type") == "toolCall":
                arguments = json.dumps(block.get("arguments"), separators=(",", ":"), ensure_ascii=False)
                chars += js_length(str(block.get("name", ""))) + js_length(arguments)
    elif role == "bashExecution":
        chars = js_length(str(message.get("command", ""))) + js_length(str(message.get("output", "")))
    elif role in ("branchSummary", "compactionSummary"):
        chars = js_length(str(message.get("summary", "")))
    else:
        return 0
    return math.ceil(chars / 4)


def valid_usage(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The usage a context size may be taken from: an assistant message that did not end ``aborted`` or
    ``error``, with some tokens counted (Pi's rule: an aborted reply's zeros say nothing)."""
    if message.get("role") != "assistant" or message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    if isinstance(usage, Mapping) and calculate_context_tokens(usage) > 0:
        return usage
    return None


def estimate_context_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Pi's ``estimateContextTokens(...).tokens``: the last valid assistant usage plus estimates of
    the messages after it (all messages estimated when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        usage = valid_usage(messages[index])
        if usage is not None:
            return calculate_context_tokens(usage) + sum(estimate_tokens(m) for m in messages[index + 1:])
    return sum(estimate_tokens(m) for m in messages)


def context_usage(
    context_window: int, branch: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, Any]]
) -> ContextUsage | None:
    """Pi's ``getContextUsage`` for a model with ``context_window`` (``None`` when it has none)."""
    if context_window <= 0:
        return None
    last_compaction = next((i for i in range(len(branch) - 1, -1, -1) if branch[i].get("type") == "compaction"), None)
    if last_compaction is not None:
        after = branch[last_compaction + 1:]
        if not any(
            e.get("type") == "message" and isinstance(e.get("message"), Mapping) and valid_usage(e["message"])
            for e in after
        ):
            return ContextUsage(context_window=context_window, tokens=None, percent=None)
    tokens = estimate_context_tokens(messages)
    return ContextUsage(context_window=context_window, tokens=tokens, percent=tokens / context_window * 100)
