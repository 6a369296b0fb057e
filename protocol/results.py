"""The results of the requests a client makes after the first answer (replacements, listing,
export, stats, models, approval rules, trust, ...) and the shapes inside them, as attrs classes.

``rpcd.protocol.types`` re-exports every name here on first use, so ``t.ReplacementResult`` works
as before while the daemon's way to its first answer (``initialize``, ``getState``) never builds
these classes. The conventions are those of ``rpcd.protocol.types``.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from rpcd.protocol._fields import nullable
from rpcd.protocol.outgoing import DiagnosticItem
from rpcd.protocol.shapes import (
    CommandInfo,
    LimitsInfo,
    McpServerInfo,
    QueueContents,
    StreamingBehavior,
    ThinkingLevel,
)


@attrs.frozen
class ReplacementResult:
    cancelled: bool
    """True if an extension cancelled the replacement; the old session stays current."""
    session_id: str
    cwd: str
    generation: int
    """The host generation, bumped on each successful replacement."""
    session_file: str | None = None
    dropped_queue: QueueContents | None = None
    """Steering / follow-up input the replaced session had queued and never delivered (absent when
    there was none): give it back to the user."""


@attrs.frozen
class ForkResult:
    cancelled: bool
    session_id: str
    cwd: str
    generation: int
    session_file: str | None = None
    selected_text: str | None = None
    """The text of the user message the fork was taken before (to put back in an editor)."""
    dropped_queue: QueueContents | None = None
    """As for the other replacements."""


@attrs.frozen
class GetMessagesResult:
    messages: list[dict[str, Any]]
    """The current context in Pi's AgentMessage shapes."""


@attrs.frozen
class GetTreeResult:
    entries: list[dict[str, Any]]
    """Raw entries in file order (no header)."""
    labels: dict[str, str]
    """entryId -> label."""
    leaf_id: str | float | None = nullable()
    """As ``getState``'s (a number for a hand-edited file's numeric id)."""
    tree: list[dict[str, Any]] | None = None
    """With ``nested``: Pi's ``get_tree`` roots, each node ``{entry, children, label?, labelTimestamp?}``,
    children oldest first (entries without a known parent are roots too)."""


@attrs.frozen
class RestoredFile:
    path: str
    """Absolute."""
    action: Literal["restore", "recreate", "delete"]
    """``restore``: back to its old content; ``recreate``: the agent deleted it; ``delete``: the agent created it."""
    applied: bool
    """Written (never in a dry run)."""
    restorable: bool
    """``false``: its old content was not kept (over the snapshot's bounds), or it is a directory now."""
    conflict: str | None = None
    """Why writing it would lose someone else's change (written only with ``force``)."""
    diff: str | None = None
    """Unified diff from the current content to the restored one (text files, bounded)."""
    binary: bool | None = None


@attrs.frozen
class RestoreCheckpointResult:
    entry_id: str
    """The checkpoint restored (its ``custom`` entry)."""
    checkpoint_id: str
    dry_run: bool
    files: list[RestoredFile]
    """Every file the agent changed since the checkpoint that is not already as it was."""
    unchanged: list[str]
    """Files it changed that are already back as they were."""
    notes: list[str]
    """What the snapshots could not cover (files too large, a scan's bound)."""
    restore_entry_id: str | None = None
    """The restore's own checkpoint (restore it to undo this restore); absent when nothing was written."""


@attrs.frozen
class CheckpointSummary:
    entry_id: str
    checkpoint_id: str
    kind: Literal["git", "files"]
    """``git``: a git tree of the worktree; ``files``: a bounded copy of the project's files."""
    root: str
    created_at: str
    reason: Literal["run", "restore"]
    available: bool
    """The store still holds it (``false``: pruned, or another agent dir's)."""
    finished: bool
    """Its run ended and was snapshotted."""
    restored_to: str | None = None
    """For a restore's checkpoint: the checkpoint id it restored."""
    partial: str | None = None
    prompt_entry_id: str | None = None
    """The user message whose run it belongs to."""
    prompt: str | None = None
    changed_files: list[str] | None = None
    """With ``files: true``: what the run changed."""


@attrs.frozen
class ListCheckpointsResult:
    checkpoints: list[CheckpointSummary]
    """Oldest first (the session file's order)."""
    undo_entry_id: str | None = None
    """What ``restoreCheckpoint`` without ``entryId`` (``undo``) restores."""


@attrs.frozen
class SetLimitsResult:
    limits: LimitsInfo | None = nullable()  # noqa: RUF009 - attrs field metadata (always sent, null: no cap)
    """The caps in force now (``null``: none)."""


@attrs.frozen
class SearchSnippet:
    kind: Literal["session", "name", "user", "assistant", "thinking", "toolCall", "toolResult", "bash", "custom",
                  "summary"]
    text: str
    """The matching text around the first hit (``…`` where it was cut), whitespace folded."""
    start: int
    end: int
    """Where the hit is in ``text`` (code points)."""
    entry_id: str | None = None
    """The entry it comes from (absent: the session's id and cwd)."""


@attrs.frozen
class SearchHit:
    session_id: str
    session_file: str
    cwd: str
    title: str
    created_at: str
    updated_at: str
    message_count: int
    match_count: int
    """How many pieces of text matched (``snippets`` shows the first five)."""
    snippets: list[SearchSnippet]
    name: str | None = None


@attrs.frozen
class SearchSessionsResult:
    results: list[SearchHit]
    """Newest first (last activity), like ``listSessions``."""
    next_cursor: str | None = None


@attrs.frozen
class ReadSessionResult:
    session_file: str
    header: dict[str, Any]
    entries: list[dict[str, Any]]
    """Raw, append order (after ``since``)."""
    leaf_id: str | None = nullable()
    """The file's leaf (its last entry), as Pi opens it."""
    next_since: str | None = None
    """More entries follow: pass it as ``since``."""


@attrs.frozen
class ExportMarkdownResult:
    path: str | None = None
    """The file written (absent with ``inline``)."""
    markdown: str | None = None
    """The document (only with ``inline``)."""


@attrs.frozen(kw_only=True)
class NavigateTreeResult:
    cancelled: bool
    """An extension cancelled the navigation, or it was aborted (``aborted``); nothing changed."""
    leaf_id: str | float | None = nullable()
    """The leaf afterwards."""
    aborted: bool | None = None
    editor_text: str | None = None
    summary_entry: dict[str, Any] | None = None
    """The ``branch_summary`` entry written."""
    restore: RestoreCheckpointResult | None = None
    """With ``restoreFiles``: what happened to the files (absent: no checkpoint after the target)."""


@attrs.frozen
class SessionSummary:
    session_id: str
    session_file: str
    cwd: str
    title: str
    """The session name, else the first user message (shortened)."""
    created_at: str
    """ISO-8601 UTC."""
    updated_at: str
    message_count: int
    parent_session: str | None = None


@attrs.frozen
class ListSessionsResult:
    sessions: list[SessionSummary]
    next_cursor: str | None = None


@attrs.frozen
class DeleteSessionResult:
    method: Literal["trash", "unlink"]
    """``trash``: moved to the user's trash (freedesktop.org Trash, macOS ``~/.Trash``); ``unlink``:
    deleted (no usable trash)."""
    trash_path: str | None = None
    """Where the file is now (``trash``)."""


@attrs.frozen
class RenameSessionResult:
    name: str
    """The name as stored (trimmed as Pi trims it, CR/LF runs as one space)."""


@attrs.frozen
class ExportResult:
    path: str
    """The file written."""


@attrs.frozen
class PromptResult:
    stop_reason: str | None = None
    """Pi's stop reason of the last assistant message (``stop``, ``length``, ``aborted``, ``error``, ...);
    absent when an extension command handled the prompt or when the prompt was queued."""
    command: str | None = None
    """Set when the text was ``/name args`` of an extension command: the command ran, no turn did."""
    queued: StreamingBehavior | None = None
    """Set when a turn was running and the prompt was queued (``streamingBehavior``); its events
    come later, in that turn."""
    handled: bool | None = None
    """``true`` when an extension's ``input`` handler took the text: no turn ran."""


@attrs.frozen
class GetCommandsResult:
    commands: list[CommandInfo]
    """Extension commands, then prompt templates, then skills (Pi's ``get_commands`` order)."""


@attrs.frozen
class ListMcpServersResult:
    servers: list[McpServerInfo]
    """The MCP servers the current session named, in the order they were named."""


@attrs.frozen
class CycleThinkingLevelResult:
    level: ThinkingLevel | None = nullable()  # noqa: RUF009 - attrs field, not a dataclass default
    """The new level; ``null`` when the model does not reason (nothing changed)."""


@attrs.frozen
class AvailableThinkingLevelsResult:
    levels: list[ThinkingLevel]
    """The current model's levels in order (``["off"]`` for a model that does not reason)."""


@attrs.frozen
class TokenStats:
    input: int
    output: int
    cache_read: int
    cache_write: int
    total: int


@attrs.frozen
class ContextUsage:
    """How full the model's context window is (an estimate between provider reports)."""

    context_window: int
    tokens: int | None = nullable()
    percent: float | None = nullable()
    """``tokens / contextWindow * 100``."""


@attrs.frozen
class SessionStatsResult:
    """Pi's ``getSessionStats``: counts over the session file's entries, tokens and cost over every
    assistant message (and tool-reported usage), the context estimate of the current branch."""

    session_id: str
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int
    total_messages: int
    tokens: TokenStats
    cost: float
    session_file: str | None = None
    context_usage: ContextUsage | None = None
    """Absent when there is no model."""


@attrs.frozen
class BashResult:
    output: str
    """The (tail-truncated) output, stdout and stderr interleaved."""
    cancelled: bool
    """Stopped by ``abortBash``, a timeout, a replacement or the daemon's end."""
    truncated: bool
    exit_code: int | None = None
    """Absent when cancelled or killed by a signal."""
    full_output_path: str | None = None
    """The temp file with the whole output (when it outgrew the limits)."""


@attrs.frozen
class LastAssistantTextResult:
    text: str | None = nullable()
    """The text of the last assistant message; ``null`` when there is none."""


@attrs.frozen
class ForkMessage:
    entry_id: str
    """A user-message entry ``fork`` accepts."""
    text: str


@attrs.frozen
class ForkMessagesResult:
    messages: list[ForkMessage]
    """The user messages of the current branch, oldest first."""


@attrs.frozen
class GetEntriesResult:
    entries: list[dict[str, Any]]
    """Raw entries in append order (no header), every branch, pre-compaction history included."""
    leaf_id: str | float | None = nullable()
    """As ``getState``'s (a number for a hand-edited file's numeric id)."""


@attrs.frozen
class ApprovalRule:
    """A remembered ``allowAlways``/``rejectAlways``: one project, one tool, one matcher."""

    id: str
    project: str
    """The project's directory (canonical: absolute, symbolic links resolved)."""
    tool_name: str
    decision: Literal["allow", "reject"]
    created_at: str
    """ISO-8601 UTC."""
    command: str | None = None
    """``bash``: ``first words *`` (that prefix and anything after it) or one whole command (exactly)."""
    path: str | None = None
    """File tools: a glob over the path relative to ``project`` (absolute outside it)."""


@attrs.frozen
class ListApprovalRulesResult:
    rules: list[ApprovalRule]
    diagnostics: list[DiagnosticItem]
    """A warning when the rules file cannot be used (then no rule applies and none is listed)."""


@attrs.frozen
class RevokeApprovalRuleResult:
    rule: ApprovalRule
    """The rule that was removed."""


@attrs.frozen
class TrustDecision:
    """A saved project-trust decision (``<agentDir>/trust.json``, shared with Pi)."""

    directory: str
    """The canonical directory; it and every directory below it (without a nearer decision) follow it."""
    trusted: bool


@attrs.frozen
class ListTrustResult:
    decisions: list[TrustDecision]
    """Sorted by directory."""
    diagnostics: list[DiagnosticItem]
    """A warning when ``trust.json`` cannot be used (then nothing is listed)."""


@attrs.frozen
class AuthProviderInfo:
    """A provider ``login`` can log in to (Pi's ``/login`` list), with what auth.json holds for it."""

    id: str
    name: str
    oauth: bool
    """It has a subscription login (``login {provider}``)."""
    api_key: bool
    """It takes a stored API key (``login {provider, method: "api_key"}``)."""
    subscription: bool
    stored: Literal["oauth", "api_key"] | None = nullable()
    """What ``<agentDir>/auth.json`` (shared with Pi) holds for it now (``null``: nothing); never a value."""
    expires: int | None = None
    """A stored OAuth login's access-token expiry, ms since the epoch (refreshed before it, by rpcd or Pi)."""


@attrs.frozen
class ListAuthProvidersResult:
    providers: list[AuthProviderInfo]


@attrs.frozen
class LoginResult:
    provider: str
    type: Literal["oauth", "api_key"]
    """What was stored in auth.json (never the value)."""
    expires: int | None = None


@attrs.frozen
class LogoutResult:
    provider: str
    removed: bool
    """``False``: auth.json held nothing for it."""


@attrs.frozen
class RevokeTrustResult:
    decision: TrustDecision
    """The decision that was removed: the directory is asked about again (or the default applies)."""


@attrs.frozen
class SaveTrustResult:
    decision: TrustDecision
    """The decision as saved (the directory canonical); it applies to sessions started from now on."""


@attrs.frozen
class ModelCost:
    """Dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@attrs.frozen(kw_only=True)
class ModelDescription:
    """A model as Pi lists it (no URLs, headers or credentials)."""

    provider: str
    id: str
    name: str
    api: str
    reasoning: bool
    thinking_levels: list[str]
    """The thinking levels this model supports, in order (``off`` … ``xhigh``/``max``)."""
    input: list[str]
    """``text``, and ``image`` for models that accept images."""
    context_window: int
    max_tokens: int
    cost: ModelCost
    credential_source: str | None = None
    """Where its provider's credential comes from — ``--api-key``, ``auth.json``, ``OAuth``,
    ``models.json apiKey``, or the environment variable's name (``ANTHROPIC_API_KEY``); never the
    value. Absent for the offline model and outside ``getAvailableModels``."""


@attrs.frozen
class GetAvailableModelsResult:
    models: list[ModelDescription]
    """The models usable now (credentials present, API implemented), in Pi's order; the offline
    ``faux/faux-1`` only when nothing else is usable."""


@attrs.frozen(kw_only=True)
class CycleModelResult:
    model: ModelDescription | None = nullable()  # noqa: RUF009 - attrs field factory, not a shared default
    """The model switched to; ``null`` when there is nothing to cycle to (at most one model)."""
    thinking_level: str
    """The session's thinking level after the switch (clamped to the model)."""
    is_scoped: bool
    """The cycle went over the scoped models (settings ``enabledModels`` / ``--models``)."""
