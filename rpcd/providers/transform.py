"""The context every API sees, built as Pi builds it before its vendor conversion.

* ``convert_to_llm``: pi-coding-agent's ``convertToLlm`` — ``bashExecution``, ``custom``,
  ``branchSummary`` and ``compactionSummary`` messages become user messages; other
  roles pass through; unknown roles are dropped.
* ``transform_messages``: pi-ai's ``transformMessages`` — images downgraded to a placeholder
  for text-only models, thinking from another model turned into text (or dropped when
  empty / redacted), tool-call ids normalised for the target API, errored and aborted
  assistant turns skipped, orphaned tool calls answered with a synthetic error result.
* token estimates and output limits: pi-ai's ``estimateContextTokens``,
  ``clampMaxTokensToContext`` and the thinking-budget arithmetic of ``simple-options``.

JavaScript measures strings in UTF-16 code units; the estimates here do too, so the
``max_tokens`` we send near a context limit is the one Pi sends.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from rpcd.core.jstext import js_length

Message = dict[str, Any]

COMPACTION_SUMMARY_PREFIX: Final = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX: Final = "\n</summary>"
BRANCH_SUMMARY_PREFIX: Final = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX: Final = "</summary>"
NON_VISION_USER_IMAGE_PLACEHOLDER: Final = "(image omitted: model does not support images)"
NON_VISION_TOOL_IMAGE_PLACEHOLDER: Final = "(tool image omitted: model does not support images)"
CONTEXT_SAFETY_TOKENS: Final = 4096
MIN_ANSWER_TOKENS: Final = 1024
DEFAULT_THINKING_BUDGETS: Final = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}

_LONE_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def sanitize_surrogates(text: str) -> str:
    """pi-ai's ``sanitizeSurrogates``: drop unpaired UTF-16 surrogates (a Python string holds
    a valid pair as one code point, so every surrogate left in it is unpaired)."""
    # Every message's text goes through here on every request (the whole context, each turn): the
    # common cases answer without scanning in Python's regex engine (~10 us per KB). An ASCII string
    # is known as one (``isascii`` reads a flag); any other encodes to UTF-8 unless it holds a
    # surrogate code point (a C loop, 5-8x quicker than the search).
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return text
    with contextlib.suppress(UnicodeError):  # a pair split over two code points: keep the character
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return _LONE_SURROGATE.sub("", text)


def js_stringify(value: Any) -> str:
    """``JSON.stringify`` for JSON-like values (compact, non-ASCII kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)


# -- convertToLlm ---------------------------------------------------------------------------


def bash_execution_to_text(msg: Mapping[str, Any]) -> str:
    text = f"Ran `{msg.get('command', '')}`\n"
    output = msg.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = msg.get("exitCode")
    if msg.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if msg.get("truncated") and msg.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {msg['fullOutputPath']}]"
    return text


def convert_to_llm(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    out: list[Message] = []
    for m in messages:
        role = m.get("role")
        if role == "bashExecution":
            if m.get("excludeFromContext"):
                continue
            out.append({"role": "user", "content": [{"type": "text", "text": bash_execution_to_text(m)}],
                        "timestamp": m.get("timestamp")})
        elif role == "custom":
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            out.append({"role": "user", "content": blocks, "timestamp": m.get("timestamp")})
        elif role == "branchSummary":
            text = BRANCH_SUMMARY_PREFIX + str(m.get("summary", "")) + BRANCH_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": m.get("timestamp")})
        elif role == "compactionSummary":
            text = COMPACTION_SUMMARY_PREFIX + str(m.get("summary", "")) + COMPACTION_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": m.get("timestamp")})
        elif role in ("user", "assistant", "toolResult"):
            out.append(dict(m))
    return out


# -- transformMessages --------------------------------------------------------------------


def _blocks(content: Any) -> list[Any]:
    return content if isinstance(content, list) else []


def _replace_images(content: list[Any], placeholder: str) -> list[Any]:
    result: list[Any] = []
    previous_was_placeholder = False
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "image":
            if not previous_was_placeholder:
                result.append({"type": "text", "text": placeholder})
            previous_was_placeholder = True
            continue
        result.append(block)
        previous_was_placeholder = isinstance(block, Mapping) and block.get("text") == placeholder
    return result


def transform_messages(
    messages: Sequence[Mapping[str, Any]],
    model: Any,
    normalize_tool_call_id: Callable[[str, Any, Mapping[str, Any]], str] | None = None,
) -> list[Message]:
    """Pi's ``transformMessages``; ``model`` needs ``provider``, ``api``, ``id``, ``input``."""
    normalized = [{**m, "content": []} if m.get("content") is None else dict(m) for m in messages]
    if "image" not in tuple(getattr(model, "input", ("text",))):
        for m in normalized:
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                m["content"] = _replace_images(m["content"], NON_VISION_USER_IMAGE_PLACEHOLDER)
            elif m.get("role") == "toolResult" and isinstance(m.get("content"), list):
                m["content"] = _replace_images(m["content"], NON_VISION_TOOL_IMAGE_PLACEHOLDER)
    id_map: dict[str, str] = {}
    transformed: list[Message] = []
    for msg in normalized:
        role = msg.get("role")
        if role == "toolResult":
            mapped = id_map.get(str(msg.get("toolCallId")))
            if mapped and mapped != msg.get("toolCallId"):
                msg = {**msg, "toolCallId": mapped}
            transformed.append(msg)
            continue
        if role != "assistant":
            transformed.append(msg)
            continue
        same_model = (msg.get("provider") == model.provider and msg.get("api") == model.api
                      and msg.get("model") == model.id)
        content: list[Any] = []
        for block in _blocks(msg.get("content")):
            if not isinstance(block, Mapping):
                content.append(block)
                continue
            kind = block.get("type")
            if kind == "thinking":
                if block.get("redacted"):
                    if same_model:
                        content.append(block)
                    continue
                if same_model and block.get("thinkingSignature"):
                    content.append(block)
                    continue
                thinking = block.get("thinking")
                if not thinking or not str(thinking).strip():
                    continue
                content.append(block if same_model else {"type": "text", "text": thinking})
            elif kind == "text":
                content.append(block if same_model else {"type": "text", "text": block.get("text")})
            elif kind == "toolCall":
                call = dict(block)
                if not same_model and call.get("thoughtSignature"):
                    call.pop("thoughtSignature", None)
                if not same_model and normalize_tool_call_id is not None:
                    new_id = normalize_tool_call_id(str(call.get("id", "")), model, msg)
                    if new_id != call.get("id"):
                        id_map[str(call.get("id", ""))] = new_id
                        call["id"] = new_id
                content.append(call)
            else:
                content.append(block)
        transformed.append({**msg, "content": content})

    result: list[Message] = []
    pending: list[Mapping[str, Any]] = []
    seen: set[str] = set()

    def flush() -> None:
        nonlocal pending, seen
        for call in pending:
            if call.get("id") not in seen:
                result.append({
                    "role": "toolResult",
                    "toolCallId": call.get("id"),
                    "toolName": call.get("name"),
                    "content": [{"type": "text", "text": "No result provided"}],
                    "isError": True,
                    "timestamp": int(time.time() * 1000),
                })
        pending = []
        seen = set()

    for msg in transformed:
        role = msg.get("role")
        if role == "assistant":
            flush()
            if msg.get("stopReason") in ("error", "aborted"):
                continue
            calls = [b for b in msg.get("content") or () if isinstance(b, Mapping) and b.get("type") == "toolCall"]
            if calls:
                pending = calls
                seen = set()
            result.append(msg)
        elif role == "toolResult":
            seen.add(str(msg.get("toolCallId")))
            result.append(msg)
        elif role == "user":
            flush()
            result.append(msg)
        else:
            result.append(msg)
    flush()
    return result


# -- token estimates (pi-ai utils/estimate.ts) ------------------------------------------------

CHARS_PER_TOKEN: Final = 4
ESTIMATED_IMAGE_CHARS: Final = 4800


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_length(content)
    chars = 0
    for block in content or ():
        if isinstance(block, Mapping) and block.get("type") == "text":
            chars += js_length(str(block.get("text", "")))
        else:
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def estimate_message_tokens(message: Mapping[str, Any]) -> int:
    role = message.get("role")
    if role in ("user", "toolResult"):
        return _ceil_div(_content_chars(message.get("content")), CHARS_PER_TOKEN)
    chars = 0
    for block in message.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            chars += js_length(str(block.get("text", "")))
        elif kind == "thinking":
            chars += js_length(str(block.get("thinking", "")))
        else:
            chars += js_length(str(block.get("name", ""))) + js_length(_safe_stringify(block.get("arguments")))
    return _ceil_div(chars, CHARS_PER_TOKEN)


def _safe_stringify(value: Any) -> str:
    if value is None:
        return "undefined"
    try:
        return js_stringify(value)
    except (TypeError, ValueError):
        return "[unserializable]"


def _usage_tokens(usage: Any) -> int:
    if not isinstance(usage, Mapping):
        return 0
    total = usage.get("totalTokens")
    if isinstance(total, int | float) and total:
        return int(total)
    return int(sum(v for k in ("input", "output", "cacheRead", "cacheWrite")
                   if isinstance(v := usage.get(k, 0), int | float)))


def estimate_context_tokens(system_prompt: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> int:
    latest_prefix = float("-inf")
    usage_index: int | None = None
    usage_tokens = 0
    for i, m in enumerate(messages):
        timestamp = m.get("timestamp")
        ts = float(timestamp) if isinstance(timestamp, int | float) else float("nan")
        if m.get("role") == "assistant":
            applies = ts >= latest_prefix
            tokens = _usage_tokens(m.get("usage"))
            if applies and m.get("stopReason") not in ("aborted", "error") and tokens > 0:
                usage_index, usage_tokens = i, tokens
        # Math.max: a NaN (missing timestamp) poisons the running maximum, in JS as here
        latest_prefix = max(latest_prefix, ts) if ts == ts and latest_prefix == latest_prefix else float("nan")
    if usage_index is not None:
        trailing = sum(estimate_message_tokens(m) for m in messages[usage_index + 1 :])
        added = {n for m in messages[usage_index + 1 :] if m.get("role") == "toolResult"
                 for n in (m.get("addedToolNames") or ())}
        added_tools = [t for t in tools if _tool_name(t) in added]
        return usage_tokens + trailing + _tools_tokens(added_tools)
    total = sum(estimate_message_tokens(m) for m in messages)
    prefix = (_ceil_div(js_length(system_prompt), CHARS_PER_TOKEN) if system_prompt else 0) + _tools_tokens(tools)
    return total + prefix


def _tool_name(tool: Any) -> str:
    return str(tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", ""))


def _tools_tokens(tools: Sequence[Any]) -> int:
    if not tools:
        return 0
    plain = [_tool_plain(t) for t in tools]
    return _ceil_div(js_length(_safe_stringify(plain)), CHARS_PER_TOKEN)


def _tool_plain(tool: Any) -> dict[str, Any]:
    if isinstance(tool, Mapping):
        return dict(tool)
    return {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}


def clamp_max_tokens_to_context(context_window: int, context_tokens: int, max_tokens: int) -> int:
    """pi-ai's ``clampMaxTokensToContext``."""
    if context_window <= 0:
        return max(1, max_tokens)
    available = context_window - context_tokens - CONTEXT_SAFETY_TOKENS
    return min(max_tokens, max(1, available))


def clamp_reasoning(level: str) -> str:
    return "high" if level in ("xhigh", "max") else level


def thinking_budget(level: str, budgets: Mapping[str, Any] | None) -> int:
    merged = {**DEFAULT_THINKING_BUDGETS, **{k: v for k, v in (budgets or {}).items() if isinstance(v, int)}}
    return int(merged.get(clamp_reasoning(level), DEFAULT_THINKING_BUDGETS["high"]))


def adjust_max_tokens_for_thinking(
    base_max_tokens: int | None, model_max_tokens: int, level: str, budgets: Mapping[str, Any] | None
) -> tuple[int, int]:
    """pi-ai's ``adjustMaxTokensForThinking``: ``(maxTokens, thinkingBudget)``."""
    budget = thinking_budget(level, budgets)
    max_tokens = model_max_tokens if base_max_tokens is None else min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
    return max_tokens, budget
