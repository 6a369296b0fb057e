"""Messages in the shapes Pi 0.85.0 stores (``message`` entries), for building session files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_T0 = 1_768_471_200_000
_clock = [_T0]


def _ms() -> int:
    _clock[0] += 1500
    return _clock[0]


def _usage(inp: int = 1200, out: int = 80) -> dict[str, Any]:
    return {
        "input": inp,
        "output": out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": inp + out,
        "cost": {"input": 0.0036, "output": 0.0012, "cacheRead": 0, "cacheWrite": 0, "total": 0.0048},
    }


def user(text: str, *, blocks: bool = False) -> dict[str, Any]:
    """A user prompt; AgentSession stores prompts as a block array, SDK callers may store a string."""
    content: Any = [{"type": "text", "text": text}] if blocks else text
    return {"role": "user", "content": content, "timestamp": _ms()}


def user_with_image(text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}],
        "timestamp": _ms(),
    }


def assistant(
    text: str,
    *,
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    thinking: str | None = None,
    tool_calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
    stop_reason: str = "stop",
    error_message: str | None = None,
    thinking_level: str | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "thinkingSignature": "sig_01"})
    if text:
        content.append({"type": "text", "text": text})
    for call_id, name, arguments in tool_calls:
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
        "usage": _usage(),
        "stopReason": "toolUse" if tool_calls and stop_reason == "stop" else stop_reason,
    }
    if error_message is not None:
        message["errorMessage"] = error_message
    message["timestamp"] = _ms()
    if thinking_level is not None:
        message["thinkingLevel"] = thinking_level
    return message


def tool_result(call_id: str, name: str, text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "timestamp": _ms(),
    }


def bash_execution(command: str, output: str, *, exit_code: int = 0, exclude: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": exit_code,
        "cancelled": False,
        "truncated": False,
        "timestamp": _ms(),
    }
    if exclude:
        message["excludeFromContext"] = True
    return message
