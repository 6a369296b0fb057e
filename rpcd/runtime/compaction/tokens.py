"""Token arithmetic of Pi 0.85.0's compaction (``compaction/compaction.ts``).

``estimate_tokens`` is the coding agent's own chars/4 estimate of one ``AgentMessage`` (it
knows ``bashExecution``, ``custom`` and the summary roles, unlike pi-ai's provider-side
estimate in ``rpcd.providers.transform``); ``estimate_context_tokens`` takes the last
valid provider usage and adds estimates for what came after it; ``should_compact`` is the
threshold ``contextTokens > contextWindow - reserveTokens``.

Settings (``compaction.*`` and ``branchSummary.reserveTokens`` in settings.json, project
values only for a trusted project, as every setting): Pi's defaults 16384 / 20000.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rpcd.core.jstext import js_length, json_length

ESTIMATED_IMAGE_CHARS: Final = 4800
DEFAULT_RESERVE_TOKENS: Final = 16384
DEFAULT_KEEP_RECENT_TOKENS: Final = 20000


@attrs.frozen
class CompactionSettings:
    """Pi's ``CompactionSettings``."""

    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS

    @classmethod
    def from_settings(cls, settings: Any, *, enabled: bool | None = None) -> CompactionSettings:
        """``compaction`` of the effective settings; ``enabled`` overrides the setting
        (``setAutoCompaction``)."""
        raw = _section(settings, "compaction")
        default = cls()
        return cls(
            enabled=cls.enabled_in(settings) if enabled is None else enabled,
            reserve_tokens=_number(raw.get("reserveTokens"), default.reserve_tokens),
            keep_recent_tokens=_number(raw.get("keepRecentTokens"), default.keep_recent_tokens),
        )

    @staticmethod
    def enabled_in(settings: Any) -> bool:
        """``compaction.enabled`` of the effective settings (anything but ``false`` is on)."""
        return _section(settings, "compaction").get("enabled", True) is not False

    def to_pi(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "reserveTokens": self.reserve_tokens,
                "keepRecentTokens": self.keep_recent_tokens}


def branch_summary_reserve_tokens(settings: Any) -> int:
    """``branchSummary.reserveTokens`` (Pi's ``getBranchSummarySettings``)."""
    return _number(_section(settings, "branchSummary").get("reserveTokens"), DEFAULT_RESERVE_TOKENS)


def _section(settings: Any, key: str) -> Mapping[str, Any]:
    getter = getattr(settings, "get", None)
    value = getter(key) if callable(getter) else None
    return value if isinstance(value, Mapping) else {}


def _number(value: Any, default: int) -> int:
    """Pi reads these with ``?? default``; a whole number is taken as it is, anything else is the default."""
    if isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer():
        return int(value)
    return default


# -- estimates -----------------------------------------------------------------------------------


def _ceil_quarter(chars: int) -> int:
    return -(-chars // 4)


def _text_and_image_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_length(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    chars += js_length(text)
            elif kind == "image":
                chars += ESTIMATED_IMAGE_CHARS
    return chars


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """Pi's ``estimateTokens``: chars/4, rounded up (conservative)."""
    role = message.get("role")
    if role in ("user", "toolResult", "custom"):
        return _ceil_quarter(_text_and_image_chars(message.get("content")))
    if role == "assistant":
        chars = 0
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += _length(block.get("text"))
            elif kind == "thinking":
                chars += _length(block.get("thinking"))
            elif kind == "toolCall":
                chars += _length(block.get("name")) + json_length(block.get("arguments"))
        return _ceil_quarter(chars)
    if role == "bashExecution":
        return _ceil_quarter(_length(message.get("command")) + _length(message.get("output")))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil_quarter(_length(message.get("summary")))
    return 0


def _length(value: Any) -> int:
    return js_length(value) if isinstance(value, str) else 0


def estimate_messages_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """``estimatedTokensAfter``: the plain sum over a rebuilt context."""
    return sum(estimate_tokens(m) for m in messages)


def calculate_context_tokens(usage: Mapping[str, Any]) -> int:
    """Pi's ``calculateContextTokens``: ``totalTokens`` when set, else the sum of its parts."""
    total = _num(usage.get("totalTokens"))
    if total:
        return total
    return sum(_num(usage.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite"))


def _num(value: Any) -> int:
    """A usage count (providers write integers; anything else counts as none)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def assistant_usage(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The usage of a successful assistant message (aborted, errored and all-zero ones have none)."""
    if message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if message.get("stopReason") in ("aborted", "error") or not isinstance(usage, Mapping):
        return None
    return usage if calculate_context_tokens(usage) > 0 else None


@attrs.frozen
class ContextEstimate:
    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: Sequence[Mapping[str, Any]]) -> ContextEstimate:
    """Pi's ``estimateContextTokens``: the last valid usage plus estimates for later messages."""
    for index in range(len(messages) - 1, -1, -1):
        usage = assistant_usage(messages[index])
        if usage is None:
            continue
        usage_tokens = calculate_context_tokens(usage)
        trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
        return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated = sum(estimate_tokens(m) for m in messages)
    return ContextEstimate(estimated, 0, estimated, None)


def should_compact(context_tokens: float, context_window: float, settings: CompactionSettings) -> bool:
    """Pi's ``shouldCompact``."""
    return settings.enabled and context_tokens > context_window - settings.reserve_tokens
