"""Thinking levels as Pi records them (pi-ai ``models.ts``: ``getSupportedThinkingLevels``,
``clampThinkingLevel``; pi-coding-agent ``defaults.ts``).

A model that does not reason supports only ``off``. A reasoning model supports ``off``
through ``high``, plus ``xhigh`` / ``max`` only where its ``thinkingLevelMap`` names them;
a level mapped to ``null`` is not supported (``{"off": null}``: the model cannot stop
thinking). A requested level the model lacks is clamped the way Pi clamps it: the nearest
supported level *above* it first, else the nearest below — so ``xhigh`` and ``max`` become
``high`` on a model that stops at ``high``, and ``off`` becomes ``minimal`` on one that
cannot turn thinking off. An unknown name clamps to the model's first level.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

THINKING_LEVELS: Final = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""Every level Pi knows, in order (``EXTENDED_THINKING_LEVELS``)."""
DEFAULT_THINKING_LEVEL: Final = "medium"
"""Pi's default when neither the session, a flag nor settings name one (clamped per model)."""


def supported_thinking_levels(reasoning: bool, level_map: Mapping[str, Any] | None) -> list[str]:
    """The levels a model supports, in order."""
    if not reasoning:
        return ["off"]
    mapping = level_map or {}
    levels: list[str] = []
    for level in THINKING_LEVELS:
        present = level in mapping
        mapped = mapping.get(level)
        if present and mapped is None:
            continue
        if level in ("xhigh", "max") and not present:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(reasoning: bool, level_map: Mapping[str, Any] | None, level: str) -> str:
    """``level`` if supported, else Pi's nearest supported level (upwards first)."""
    available = supported_thinking_levels(reasoning, level_map)
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    index = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def is_thinking_level(value: object) -> bool:
    return isinstance(value, str) and value in THINKING_LEVELS
