"""Every event a session emits, typed: the ``event`` member of ``session/event`` and ``session/lifecycle``.

The shapes are Pi 0.85.0's (``AgentSessionEvent`` as its RPC mode sends it, ``toJsonEvent``:
``message_update`` without the partial message). The daemon sends these events as plain JSON
built by the runtime; these classes are the contract: the OpenRPC document publishes them (a
union discriminated on ``type``), and the end-to-end suite checks every event it sees against
them. Envelopes (the events themselves) are closed: a key not listed here is a bug. The Pi
payloads inside them (messages, content blocks, usage, entries) are open objects: Pi and its
providers add fields (signatures, response ids, per-provider usage) that a client must keep.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import attrs

from rpcd.protocol._fields import nullable, open_object
from rpcd.protocol.shapes import CommandInfo as CommandInfo
from rpcd.protocol.shapes import CommandSourceInfo as CommandSourceInfo
from rpcd.protocol.shapes import QueueContents as QueueContents
from rpcd.protocol.shapes import ThinkingLevel as ThinkingLevel

RequestId: TypeAlias = int | str
CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]

# -- content blocks (pi-ai ``types.ts``) -----------------------------------------------------------


@open_object
@attrs.frozen
class TextContent:
    """A text block."""

    type: Literal["text"]
    text: str


@open_object
@attrs.frozen
class ImageContent:
    """An image block: base64 data and its MIME type (``image/png``, ``image/jpeg``, ``image/gif``,
    ``image/webp``)."""

    type: Literal["image"]
    data: str
    """Base64 (standard alphabet, padded) of the image file's bytes."""
    mime_type: str


@open_object
@attrs.frozen
class ThinkingContent:
    """A reasoning block (``thinkingSignature`` / ``redacted`` may follow, per provider)."""

    type: Literal["thinking"]
    thinking: str


@open_object
@attrs.frozen
class ToolCallContent:
    """A tool call the assistant made."""

    type: Literal["toolCall"]
    id: str
    """The call id; ``toolResult.toolCallId`` and the ``tool_execution_*`` events repeat it."""
    name: str
    """The tool's name."""
    arguments: dict[str, Any]
    """The parsed JSON arguments."""


UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCallContent


@open_object
@attrs.frozen
class UsageCost:
    """Dollar cost of one model call, per token kind, and their total."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    total: float


@open_object
@attrs.frozen
class Usage:
    """Token counts of one model call as the provider reported them, and their cost."""

    input: int
    """Prompt tokens not served from the cache."""
    output: int
    cache_read: int
    cache_write: int
    total_tokens: int
    cost: UsageCost


# -- messages (pi-agent-core ``AgentMessage``, pi-coding-agent ``messages.ts``) --------------------


@open_object
@attrs.frozen
class UserMessage:
    """A user turn (a prompt, a delivered steering or follow-up message)."""

    role: Literal["user"]
    content: str | list[UserContent]
    """Text, or text and image blocks (images follow the text, as Pi builds them)."""
    timestamp: int
    """Milliseconds since the epoch."""


@open_object
@attrs.frozen
class AssistantMessage:
    """One model reply."""

    role: Literal["assistant"]
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    usage: Usage
    stop_reason: str
    """``stop``, ``length``, ``toolUse``, ``error`` or ``aborted``."""
    timestamp: int
    error_message: str | None = None
    """Set for ``error`` / ``aborted``."""


@open_object
@attrs.frozen
class ToolResultMessage:
    """The result of one tool call, in call order after the assistant message that made it."""

    role: Literal["toolResult"]
    tool_call_id: str
    tool_name: str
    content: list[UserContent]
    is_error: bool
    timestamp: int
    details: Any = None
    """Tool-specific details (a diff, truncation info, ...)."""
    usage: Usage | None = None
    """Model work the tool itself did (counted in the session's totals)."""


@open_object
@attrs.frozen
class BashExecutionMessage:
    """A command the client ran with ``bash``; the next model call sees it as a user message
    (``Ran `cmd` ...``) unless ``excludeFromContext``."""

    role: Literal["bashExecution"]
    command: str
    output: str
    cancelled: bool
    truncated: bool
    timestamp: int
    exit_code: int | None = None
    """Absent when the command was cancelled or killed by a signal."""
    full_output_path: str | None = None
    """The temp file with the whole output, when ``truncated``."""
    exclude_from_context: bool | None = None


@open_object
@attrs.frozen
class CustomMessage:
    """A message an extension added to the conversation (``sendMessage``)."""

    role: Literal["custom"]
    custom_type: str
    content: str | list[UserContent]
    display: bool
    timestamp: int
    details: Any = None


@open_object
@attrs.frozen
class BranchSummaryMessage:
    """The summary of an abandoned branch (tree navigation)."""

    role: Literal["branchSummary"]
    summary: str
    from_id: str
    timestamp: int


@open_object
@attrs.frozen
class CompactionSummaryMessage:
    """The summary that replaces compacted history in the context."""

    role: Literal["compactionSummary"]
    summary: str
    tokens_before: int
    timestamp: int


AgentMessage: TypeAlias = (
    UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
)
"""Pi's ``AgentMessage``, discriminated on ``role``."""


@open_object
@attrs.frozen
class SessionEntry:
    """One line of the session file (``message``, ``model_change``, ``thinking_level_change``,
    ``custom``, ``label``, ``session_info``, ``compaction``, ...); the other keys depend on ``type``."""

    type: str
    id: str
    timestamp: str
    """ISO-8601 UTC."""
    parent_id: str | None = nullable()
    """The previous entry on its branch; ``null`` for a root."""


@open_object
@attrs.frozen
class ToolResultPayload:
    """What a tool returned (or has produced so far): content blocks and tool-specific details."""

    content: list[UserContent]
    details: Any = None


@open_object
@attrs.frozen
class CompactionResult:
    """What a compaction produced (Pi's ``CompactionResult``): the ``compact`` result and
    ``compaction_end.result`` (one class for both)."""

    summary: str
    first_kept_entry_id: str
    """The first entry kept verbatim after the summary."""
    tokens_before: int
    """The estimated context size before compaction."""
    estimated_tokens_after: int | None = None
    """A heuristic estimate over the rebuilt context (chars/4), not a provider count."""
    usage: Usage | None = None
    """The model call(s) that wrote the summary (absent for an extension's summary without one)."""
    details: Any = None
    """``{readFiles, modifiedFiles}`` for Pi's own summaries; whatever an extension stored otherwise."""


# -- streamed deltas of an assistant message (``message_update.assistantMessageEvent``) ------------


@attrs.frozen
class TextStart:
    """A text block begins at ``contentIndex``."""

    type: Literal["text_start"]
    content_index: int


@attrs.frozen
class TextDelta:
    """More text for the block at ``contentIndex``."""

    type: Literal["text_delta"]
    content_index: int
    delta: str


@attrs.frozen
class TextEnd:
    """The text block at ``contentIndex`` is complete; ``content`` is all of it."""

    type: Literal["text_end"]
    content_index: int
    content: str


@attrs.frozen
class ThinkingStart:
    type: Literal["thinking_start"]
    content_index: int


@attrs.frozen
class ThinkingDelta:
    type: Literal["thinking_delta"]
    content_index: int
    delta: str


@attrs.frozen
class ThinkingEnd:
    type: Literal["thinking_end"]
    content_index: int
    content: str


@attrs.frozen
class ToolcallStart:
    """A tool call begins: its id and tool name are known, its arguments follow as deltas."""

    type: Literal["toolcall_start"]
    content_index: int
    id: str
    tool_name: str


@attrs.frozen
class ToolcallDelta:
    """A chunk of the tool call's JSON arguments (buffer them; parse at ``toolcall_end``)."""

    type: Literal["toolcall_delta"]
    content_index: int
    delta: str


@attrs.frozen
class ToolcallEnd:
    """The tool call is complete; ``toolCall`` is authoritative."""

    type: Literal["toolcall_end"]
    content_index: int
    tool_call: ToolCallContent


AssistantMessageEvent: TypeAlias = (
    TextStart | TextDelta | TextEnd | ThinkingStart | ThinkingDelta | ThinkingEnd | ToolcallStart | ToolcallDelta
    | ToolcallEnd
)

# -- session events (``session/event``) -------------------------------------------------------------


@attrs.frozen
class AgentStartEvent:
    """A low-level agent run begins (a prompt, a queued continuation, a retry)."""

    type: Literal["agent_start"]


@attrs.frozen
class AgentEndEvent:
    """A low-level agent run ended; retries, compaction or queued input may still follow."""

    type: Literal["agent_end"]
    messages: list[AgentMessage]
    """Every message the run produced, in order (the prompt's user message first)."""
    will_retry: bool
    """An automatic retry follows (``auto_retry_start`` comes next)."""


@attrs.frozen
class AgentSettledEvent:
    """The session-level run is over: no retry, compaction or queued input remains. The ``prompt``
    request answers after this event."""

    type: Literal["agent_settled"]


@attrs.frozen
class TurnStartEvent:
    """A turn (one model call and the tools it calls) begins."""

    type: Literal["turn_start"]


@attrs.frozen
class TurnEndEvent:
    """A turn ended: its assistant message and the tool results in call order."""

    type: Literal["turn_end"]
    message: AgentMessage
    tool_results: list[ToolResultMessage]


@attrs.frozen
class MessageStartEvent:
    """A message begins (a user, tool result or bash message arrives complete; an assistant message
    starts empty and streams)."""

    type: Literal["message_start"]
    message: AgentMessage


@attrs.frozen
class MessageUpdateEvent:
    """One streamed delta of the assistant message being generated (no cumulative snapshot:
    assemble it from ``message_start`` and the deltas, or wait for ``message_end``)."""

    type: Literal["message_update"]
    assistant_message_event: AssistantMessageEvent
    usage: Usage
    """The latest cumulative usage the provider reported (may stay zero until the end)."""


@attrs.frozen
class MessageEndEvent:
    """A message is complete; ``message`` is authoritative and is what the session file gets."""

    type: Literal["message_end"]
    message: AgentMessage


@attrs.frozen
class ToolExecutionStartEvent:
    """A tool call begins executing."""

    type: Literal["tool_execution_start"]
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]


@attrs.frozen
class ToolExecutionUpdateEvent:
    """Partial output of a running tool; ``partialResult`` is cumulative (replace, do not append)."""

    type: Literal["tool_execution_update"]
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    partial_result: ToolResultPayload


@attrs.frozen
class ToolExecutionEndEvent:
    """A tool call finished (before its ``toolResult`` message, which follows in call order)."""

    type: Literal["tool_execution_end"]
    tool_call_id: str
    tool_name: str
    result: ToolResultPayload
    is_error: bool


@attrs.frozen
class QueueUpdateEvent:
    """The queued steering / follow-up input changed (queued, delivered, cleared or dropped); the
    lists are the whole queue now, in delivery order."""

    type: Literal["queue_update"]
    steering: list[str]
    """Texts delivered after the current tool round, before the next model call."""
    follow_up: list[str]
    """Texts delivered when the agent would otherwise stop."""


@attrs.frozen
class CompactionStartEvent:
    """Compaction begins."""

    type: Literal["compaction_start"]
    reason: CompactionReason


@attrs.frozen
class CompactionEndEvent:
    """Compaction ended: ``result`` when it succeeded; ``aborted`` or ``errorMessage`` otherwise."""

    type: Literal["compaction_end"]
    reason: CompactionReason
    aborted: bool
    will_retry: bool
    """The overflowed prompt is retried on the compacted context."""
    result: CompactionResult | None = None
    error_message: str | None = None


@attrs.frozen
class AutoRetryStartEvent:
    """A transient provider failure will be retried after ``delayMs``."""

    type: Literal["auto_retry_start"]
    attempt: int
    """1 for the first retry."""
    max_attempts: int
    delay_ms: float
    error_message: str


@attrs.frozen
class AutoRetryEndEvent:
    """The retry sequence ended (every ``auto_retry_start`` is followed by exactly one of these)."""

    type: Literal["auto_retry_end"]
    success: bool
    attempt: int
    final_error: str | None = None
    """Why it gave up (``Retry cancelled`` after ``abortRetry`` / ``abort``)."""


@attrs.frozen
class SummarizationRetryScheduledEvent:
    """A compaction or branch-summary model call will be retried."""

    type: Literal["summarization_retry_scheduled"]
    attempt: int
    max_attempts: int
    delay_ms: float
    error_message: str


@attrs.frozen
class SummarizationRetryAttemptStartEvent:
    """A retried summarization call starts."""

    type: Literal["summarization_retry_attempt_start"]
    source: Literal["compaction", "branchSummary"]
    reason: CompactionReason | None = None
    """For ``compaction`` only."""


@attrs.frozen
class SummarizationRetryFinishedEvent:
    type: Literal["summarization_retry_finished"]


@attrs.frozen
class BashExecutionUpdateEvent:
    """A chunk of output of a client-run ``bash`` command (all of it streams, even what the result
    later truncates)."""

    type: Literal["bash_execution_update"]
    delta: str
    id: RequestId | None = None
    """The JSON-RPC id of the ``bash`` request that runs the command."""


@attrs.frozen
class SessionInfoChangedEvent:
    """The session's display name changed (``setSessionName``)."""

    type: Literal["session_info_changed"]
    name: str | None = None


@attrs.frozen
class ThinkingLevelChangedEvent:
    """The effective thinking level changed (a setter, a model switch); a ``thinking_level_change``
    entry was appended."""

    type: Literal["thinking_level_changed"]
    level: ThinkingLevel


@attrs.frozen
class EntryAppendedEvent:
    """An extension appended an entry (``appendEntry``)."""

    type: Literal["entry_appended"]
    entry: SessionEntry


@attrs.frozen
class ExtensionErrorEvent:
    """An extension handler failed; the session goes on."""

    type: Literal["extension_error"]
    extension_path: str
    event: str
    """The event (or ``command``, ``tool_call``, ...) whose handler failed."""
    error: str
    """The error message (redacted)."""


@attrs.frozen
class CommandsChangedEvent:
    """A replacement changed what ``getCommands`` lists (sent on the new session's channel)."""

    type: Literal["commands_changed"]
    commands: list[CommandInfo]


@attrs.frozen
class LimitReachedEvent:
    """A spending cap is reached (settings ``limits.*``, ``setLimits``): the next model call did not
    happen; the turn ends with stop reason ``limit`` and queued input stays queued (rpcd's; Pi has
    no caps)."""

    type: Literal["limit_reached"]
    limit: Literal["maxCost", "maxTokens", "maxCostPerDay", "maxTokensPerDay"]
    scope: Literal["session", "day"]
    used: float
    """Spent so far (USD for the cost caps, tokens for the token caps)."""
    max: float


@attrs.frozen
class CheckpointCreatedEvent:
    """The files of the project were snapshotted before this run's first change (or before a
    restore); ``entryId`` is its ``custom`` entry (``listCheckpoints``, ``restoreCheckpoint``)."""

    type: Literal["checkpoint_created"]
    entry_id: str
    checkpoint_id: str
    kind: Literal["git", "files"]
    root: str
    partial: str | None = None
    """What the snapshot could not cover, in words (files too large, the scan's bound)."""


@attrs.frozen
class CheckpointFailedEvent:
    """The files could not be snapshotted (or the snapshot at the run's end failed): the tools ran,
    but this run's changes cannot be undone by ``restoreCheckpoint``."""

    type: Literal["checkpoint_failed"]
    message: str


SessionEvent: TypeAlias = (
    AgentStartEvent
    | AgentEndEvent
    | AgentSettledEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | QueueUpdateEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
    | SummarizationRetryScheduledEvent
    | SummarizationRetryAttemptStartEvent
    | SummarizationRetryFinishedEvent
    | BashExecutionUpdateEvent
    | SessionInfoChangedEvent
    | ThinkingLevelChangedEvent
    | EntryAppendedEvent
    | ExtensionErrorEvent
    | CommandsChangedEvent
    | LimitReachedEvent
    | CheckpointCreatedEvent
    | CheckpointFailedEvent
)
"""Every event of ``session/event``, discriminated on ``type``."""

# -- lifecycle events (``session/lifecycle``) -------------------------------------------------------


@attrs.frozen
class SessionStartLifecycleEvent:
    """This (sessionId, generation) begins: nothing of it was sent before."""

    type: Literal["session_start"]
    reason: Literal["startup", "new", "resume", "fork", "reload"]
    previous_session_file: str | None = None


@attrs.frozen
class SessionShutdownLifecycleEvent:
    """This (sessionId, generation) ends: nothing of it is sent after."""

    type: Literal["session_shutdown"]
    reason: Literal["quit", "new", "resume", "fork", "reload"]
    target_session_file: str | None = None
    dropped_queue: QueueContents | None = None
    """Steering / follow-up input that was queued and never delivered (the session was replaced or
    disposed): give it back to the user."""


LifecycleEvent: TypeAlias = SessionStartLifecycleEvent | SessionShutdownLifecycleEvent
"""Every event of ``session/lifecycle``, discriminated on ``type``."""


# -- the notifications that carry them -------------------------------------------------------------


@attrs.frozen
class SessionEventParams:
    session_id: str
    generation: int
    seq: int
    """Starts at 1 per (sessionId, generation); a client drops anything older than what it has."""
    event: SessionEvent
    """The AgentSession event in Pi's shape; ``event.type`` names it."""


@attrs.frozen
class SessionLifecycleParams:
    session_id: str
    generation: int
    seq: int
    event: LifecycleEvent
