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


McpServerStatus: TypeAlias = Literal["starting", "ready", "failed", "stopped"]
McpTransport: TypeAlias = Literal["stdio", "http", "sse"]


@attrs.frozen(kw_only=True)
class McpServerInfo:
    """One MCP server a session named (no env values, no headers, no URL userinfo)."""

    name: str
    transport: McpTransport
    """``stdio``, ``http`` (streamable HTTP) or ``sse``."""
    target: str
    """The command line it runs, or the URL it connects to."""
    status: McpServerStatus
    """``starting``; ``ready``; ``failed`` (``lastError`` says why: it exited, refused to start, did not
    answer in time); ``stopped`` (no session holds it any more)."""
    tools: list[str]
    """The server's own tool names; the session's tools are ``mcp__<server>__<tool>``."""
    prompts: list[str]
    """Its prompts; a prompt is the command ``/mcp__<server>__<prompt>``."""
    resources: int
    sessions: int
    """How many sessions of this process hold it (one server for every session naming the same config)."""
    source: str
    """The ``mcp.json`` file that named it, or ``acp`` (the ACP client's ``mcpServers``)."""
    last_error: str | None = None
    server_name: str | None = None
    server_version: str | None = None


@attrs.frozen
class QueueContents:
    """Queued input, in delivery order."""

    steering: list[str]
    follow_up: list[str]


CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]


@attrs.frozen
class LimitsInfo:
    """Spending caps (settings ``limits.*``, ``setLimits``) and the spend they are checked against
    before every model call; a cap that is absent is not set."""

    cost: float
    """The session's cost so far (USD): every reply, summary and tool-reported usage of its file."""
    tokens: int
    """Its tokens so far (input + output + cache read + cache write)."""
    max_cost: float | None = None
    max_tokens: int | None = None
    max_cost_per_day: float | None = None
    max_tokens_per_day: int | None = None
    cost_today: float | None = None
    """Every rpcd session of this agent dir since local midnight (only with a per-day cap)."""
    tokens_today: int | None = None
    reached: Literal["maxCost", "maxTokens", "maxCostPerDay", "maxTokensPerDay"] | None = None
    """A cap at or over its limit: the next model call will not happen."""
