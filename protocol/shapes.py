"""The shapes the params, the results, the events and the daemon's own messages share (re-exported
by ``rpcd.protocol.types``): the leaf of the protocol's modules, so ``types`` can re-export the
others without an import circle.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

ProgressToken: TypeAlias = int | str
HostStatus: TypeAlias = Literal["ready", "replacing", "unusable", "disposed"]
DiagnosticType: TypeAlias = Literal["info", "warning", "error"]
StreamingBehavior: TypeAlias = Literal["steer", "followUp"]
"""How input sent while a turn runs is queued: ``steer`` (after the current tool round) or
``followUp`` (when the agent would otherwise stop)."""
ApprovalDecision: TypeAlias = Literal["allowOnce", "allowAlways", "rejectOnce", "rejectAlways"]
ToolKind: TypeAlias = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "other"]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
"""Pi's thinking levels, in order; a model supports a subset (``getAvailableThinkingLevels``)."""


@attrs.frozen
class CommandSourceInfo:
    """Where a command comes from (Pi's ``sourceInfo``)."""

    path: str
    """The extension, template or SKILL.md file."""
    source: str
    """``auto`` (discovered), ``local`` (a settings entry), ``cli`` (``-e``)."""
    scope: str
    """``user``, ``project`` or ``temporary``."""
    origin: str
    base_dir: str | None = None


@attrs.frozen
class CommandInfo:
    name: str
    """Invoke it with ``prompt {"text": "/<name> args"}`` (skills are ``skill:<name>``)."""
    source: Literal["extension", "prompt", "skill"]
    source_info: CommandSourceInfo
    description: str | None = None
    argument_hint: str | None = None
    """E.g. ``<file> [focus]`` (prompt templates' ``argument-hint``)."""


@attrs.frozen
class QueueContents:
    """Queued input, in delivery order."""

    steering: list[str]
    follow_up: list[str]


CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]
