"""Every params, result and notification shape of the wire, as attrs classes.

Python names are snake_case; the converter renames them to camelCase on the wire.
Optional fields default to ``None`` and are omitted when unset, except fields built with
``nullable()``, which are always present (``null`` when unset). Pi's own payloads that go
out as they are (messages, raw entries) stay ``dict[str, Any]`` in results; the session
events that carry them are typed in ``rpcd.protocol.events``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from rpcd.protocol._fields import nullable, open_object
from rpcd.protocol.names import PROTOCOL_VERSION as PROTOCOL_VERSION  # re-exported

if TYPE_CHECKING:
    from rpcd.protocol.events import SessionEventParams as SessionEventParams
    from rpcd.protocol.events import SessionLifecycleParams as SessionLifecycleParams

SUPPORTED_PROTOCOL_VERSIONS: frozenset[int] = frozenset({1})

RequestId: TypeAlias = int | str
ProgressToken: TypeAlias = int | str
Capability: TypeAlias = dict[str, Any]
"""A capability marker: an object present means "supported"; its keys are future sub-options."""
HostStatus: TypeAlias = Literal["ready", "replacing", "unusable", "disposed"]
DiagnosticType: TypeAlias = Literal["info", "warning", "error"]
StreamingBehavior: TypeAlias = Literal["steer", "followUp"]
"""How input sent while a turn runs is queued: ``steer`` (after the current tool round) or
``followUp`` (when the agent would otherwise stop)."""
QueueMode: TypeAlias = Literal["all", "one-at-a-time"]
"""How queued input is delivered: all of it at once, or one message per opportunity."""
ApprovalPolicy: TypeAlias = Literal["auto", "ask-writes", "ask-all", "deny-writes"]
ApprovalDecision: TypeAlias = Literal["allowOnce", "allowAlways", "rejectOnce", "rejectAlways"]
ToolKind: TypeAlias = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "other"]

# -- shapes the events share (``rpcd.protocol.events`` re-exports them) ------------------------------

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


# -- handshake -------------------------------------------------------------------------------------


@attrs.frozen
class ClientInfo:
    name: str
    version: str | None = None


@attrs.frozen
class ServerInfo:
    name: str
    version: str


@open_object
@attrs.frozen
class ClientCapabilities:
    """What the client can do; unknown capability keys are ignored (forward compatible)."""

    authorize_project: Capability | None = None
    """The client answers ``host/authorizeProject``."""
    extension_ui: Capability | None = None
    """The client answers ``ui/confirm``, ``ui/select``, ``ui/input`` and shows ``ui/notify``. Keys of
    the object opt into more of Pi's extension UI: ``editor`` (it answers ``ui/editor``),
    ``setStatus``, ``setWidget``, ``setTitle``, ``setEditorText`` (it takes those notifications),
    each as a capability marker, e.g. ``{"editor": {}, "setStatus": {}}``."""
    progress: Capability | None = None
    """The client shows ``$/progress`` for a ``workDoneToken`` it sent."""
    tool_approval: Capability | None = None
    """The client answers ``tool/authorize`` (and the default approval policy becomes ``ask-writes``)."""


@open_object
@attrs.frozen
class InitializeParams:
    """Open, as in LSP: unknown top-level fields (``processId``, ``rootUri``, a future ``trace``)
    are ignored, so a newer client still talks to an older daemon. Every other method's params
    stay closed."""

    protocol_version: int
    """The newest version the client speaks; the daemon echoes it if supported, else answers its own."""
    client_info: ClientInfo | None = None
    capabilities: ClientCapabilities | None = None


@attrs.frozen
class ServerCapabilities:
    methods: list[str]
    """Every request method the daemon serves."""
    framing: list[str]
    """Framings accepted (auto-detected from the first bytes): ``ndjson``, ``content-length``."""
    max_message_bytes: int
    """Frames larger than this are drained and answered with MESSAGE_TOO_LARGE."""
    batch: bool
    """Always false: batches are rejected with one INVALID_REQUEST (``id: null``)."""
    cancellation: list[str]
    """Notification names that cancel a running request by id."""


@attrs.frozen
class InitializeResult:
    protocol_version: int
    server_info: ServerInfo
    capabilities: ServerCapabilities


@attrs.frozen
class EmptyParams:
    """Methods that take no params accept none, ``{}`` or ``[]``; any key is an error."""


# -- session replacement ---------------------------------------------------------------------------


@attrs.frozen
class NewSessionParams:
    cwd: str | None = None
    """Start the session in this project (absolute; default: the current session's cwd). Checked before
    the old session is touched; the project's trust is asked and its settings, context files and
    extensions apply to the new session."""
    parent_session: str | None = None
    """Pi's ``parentSession`` header field: the session file this one continues (absolute, a session)."""
    work_done_token: ProgressToken | None = None
    """If set, ``$/progress`` notifications for this request carry this token."""


@attrs.frozen
class ResumeParams:
    session_path: str
    """The session file to switch to."""
    cwd_override: str | None = None
    """Run the session in this directory instead of the one stored in the file."""
    work_done_token: ProgressToken | None = None


@attrs.frozen
class ForkParams:
    entry_id: str
    """A user-message entry: the new session's leaf is its parent, the message text comes back."""


@attrs.frozen
class CloneParams:
    entry_id: str | None = None
    """Clone the branch ending at this entry (default: the current leaf)."""


@attrs.frozen
class ImportJsonlParams:
    path: str
    """A Pi JSONL transcript to import as a new session file."""
    cwd_override: str | None = None
    work_done_token: ProgressToken | None = None


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


# -- session reads and actions ---------------------------------------------------------------------


@attrs.frozen
class ModelRef:
    provider: str
    model_id: str


@attrs.frozen(kw_only=True)
class GetStateResult:
    session_id: str
    cwd: str
    leaf_id: str | None = nullable()
    """The current leaf entry, ``null`` for a session without entries."""
    thinking_level: str
    is_streaming: bool
    message_count: int
    generation: int
    status: HostStatus
    is_compacting: bool
    """A compaction (manual or automatic) or a branch summary is running."""
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    auto_compaction_enabled: bool
    """The ``compaction.enabled`` setting, or what ``setAutoCompaction`` set."""
    auto_retry_enabled: bool
    """``retry.enabled`` from the settings, or what ``setAutoRetry`` set."""
    pending_message_count: int
    """Queued steering plus follow-up messages not delivered yet."""
    session_file: str | None = None
    name: str | None = None
    model: ModelRef | None = None
    approval_policy: ApprovalPolicy | None = None
    """The tool-approval policy in force for the session's tool calls."""


@attrs.frozen
class GetMessagesResult:
    messages: list[dict[str, Any]]
    """The current context in Pi's AgentMessage shapes."""


@attrs.frozen
class GetTreeParams:
    nested: bool | None = None
    """Also answer Pi's nested form (``tree``); default false."""


@attrs.frozen
class GetTreeResult:
    entries: list[dict[str, Any]]
    """Raw entries in file order (no header)."""
    labels: dict[str, str]
    """entryId -> label."""
    leaf_id: str | None = nullable()
    tree: list[dict[str, Any]] | None = None
    """With ``nested``: Pi's ``get_tree`` roots, each node ``{entry, children, label?, labelTimestamp?}``,
    children oldest first (entries without a known parent are roots too)."""


# -- compaction and the tree -----------------------------------------------------------------------

CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]


@attrs.frozen
class CompactParams:
    custom_instructions: str | None = None
    """What the summary should focus on (``Additional focus: ...``)."""


@attrs.frozen
class CompactionResult:
    """What a compaction produced (Pi's ``CompactionResult``): the ``compact`` result and
    ``compaction_end.result``."""

    summary: str
    first_kept_entry_id: str
    """The first entry kept verbatim after the summary."""
    tokens_before: int
    """The estimated context size before compaction."""
    estimated_tokens_after: int | None = None
    """A heuristic estimate over the rebuilt context (chars/4), not a provider count."""
    usage: dict[str, Any] | None = None
    """The model call(s) that wrote the summary (absent for an extension's summary without one)."""
    details: Any = None
    """``{readFiles, modifiedFiles}`` for Pi's own summaries; whatever an extension stored otherwise."""


@attrs.frozen
class SetAutoCompactionParams:
    enabled: bool


@attrs.frozen(kw_only=True)
class NavigateTreeParams:
    target_id: str
    """The entry to go to: a user (or custom) message puts the leaf on its parent and answers its
    text as ``editorText``; any other entry becomes the leaf."""
    summarize: bool | None = None
    """Summarize the branch being left into a ``branch_summary`` entry at the target."""
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    """Use ``customInstructions`` instead of Pi's prompt (not in addition to it)."""
    label: str | None = None
    """Label the summary entry (or, without a summary, the target)."""


@attrs.frozen(kw_only=True)
class NavigateTreeResult:
    cancelled: bool
    """An extension cancelled the navigation, or it was aborted (``aborted``); nothing changed."""
    leaf_id: str | None = nullable()
    """The leaf afterwards."""
    aborted: bool | None = None
    editor_text: str | None = None
    summary_entry: dict[str, Any] | None = None
    """The ``branch_summary`` entry written."""


@attrs.frozen
class SetLabelParams:
    entry_id: str
    label: str | None = None
    """Absent: clear the entry's label."""


@attrs.frozen
class CompactionStartEvent:
    """Session event: a compaction begins."""

    type: Literal["compaction_start"]
    reason: CompactionReason


@attrs.frozen(kw_only=True)
class CompactionEndEvent:
    """Session event: a compaction ended — ``result`` when it succeeded, ``aborted`` or
    ``errorMessage`` otherwise (nothing was written then)."""

    type: Literal["compaction_end"]
    reason: CompactionReason
    aborted: bool
    will_retry: bool
    """``overflow`` only: the overflowed turn is retried on the compacted context."""
    result: CompactionResult | None = None
    error_message: str | None = None


SESSION_EVENT_TYPES: tuple[type[Any], ...] = (CompactionStartEvent, CompactionEndEvent)
"""Session events with a published shape (``session/event``'s ``event``); the others are Pi's
as documented in docs/rpc-surface.md."""


SessionSort: TypeAlias = Literal["updated", "created"]


@attrs.frozen
class ListSessionsParams:
    cwd: str | None = None
    """Only sessions of this working directory (default: all)."""
    cursor: str | None = None
    """Opaque, from a previous ``nextCursor`` of the same ``sort``."""
    limit: int | None = None
    query: str | None = None
    """Only sessions whose name, first user message or cwd contain every word (case-insensitive;
    ``"a phrase"`` in double quotes is one term)."""
    sort: SessionSort | None = None
    """``updated`` (default: last activity, newest first; ``--continue`` picks the first of this order)
    or ``created`` (the header's time, newest first)."""


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
class DeleteSessionParams:
    session_file: str
    """A session file in the session store (absolute); never the current session."""


@attrs.frozen
class DeleteSessionResult:
    method: Literal["trash", "unlink"]
    """``trash``: moved to the user's trash (freedesktop.org Trash, macOS ``~/.Trash``); ``unlink``:
    deleted (no usable trash)."""
    trash_path: str | None = None
    """Where the file is now (``trash``)."""


@attrs.frozen
class RenameSessionParams:
    session_file: str
    """Any session file (absolute); the current session's is renamed as ``setSessionName`` does."""
    name: str


@attrs.frozen
class RenameSessionResult:
    name: str
    """The name as stored (trimmed as Pi trims it, CR/LF runs as one space)."""


@attrs.frozen
class ExportHtmlParams:
    output_path: str | None = None
    """Absolute and new (never overwritten); default ``<cwd>/pi-session-<file name>.html`` (``-1``, ... if taken)."""


@attrs.frozen
class ExportJsonlParams:
    output_path: str
    """Absolute and new (never overwritten)."""


@attrs.frozen
class ExportResult:
    path: str
    """The file written."""


@attrs.frozen
class PromptImage:
    """An image sent with a prompt (Pi's ``ImageContent``): PNG, JPEG, GIF or WebP, base64."""

    type: Literal["image"]
    data: str
    """Standard base64 of the image file; its bytes must be a PNG, JPEG, GIF or WebP."""
    mime_type: str
    """``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp`` (must match the bytes)."""


@attrs.frozen
class PromptParams:
    text: str
    images: list[PromptImage] | None = None
    """Images after the text; refused (nothing persisted) if the model does not take images."""
    streaming_behavior: StreamingBehavior | None = None
    """While a turn runs: queue the prompt this way instead of failing with SESSION_BUSY. Ignored
    when no turn runs (the prompt starts one)."""


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


@attrs.frozen
class GetCommandsResult:
    commands: list[CommandInfo]
    """Extension commands, then prompt templates, then skills (Pi's ``get_commands`` order)."""


@attrs.frozen
class QueueInputParams:
    """``steer`` / ``followUp``: input for the running turn (or, when idle, for the next one)."""

    text: str
    images: list[PromptImage] | None = None


@attrs.frozen
class SetQueueModeParams:
    mode: QueueMode


@attrs.frozen
class SetThinkingLevelParams:
    level: ThinkingLevel
    """Clamped to what the model supports (Pi's rule: the nearest supported level above, else below)."""


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
class BashParams:
    command: str
    """Run by the session's shell in its cwd (``shellCommandPrefix`` applies)."""
    exclude_from_context: bool | None = None
    """Keep the result out of the model's context (it is still recorded)."""
    timeout: float | None = None
    """Seconds; the process group is stopped after that (rpcd addition: Pi's ``bash`` has none)."""


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
class SetAutoRetryParams:
    enabled: bool


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
class GetEntriesParams:
    since: str | None = None
    """An entry id: only entries after it (in file order). Unknown: INVALID_ENTRY."""


@attrs.frozen
class GetEntriesResult:
    entries: list[dict[str, Any]]
    """Raw entries in append order (no header), every branch, pre-compaction history included."""
    leaf_id: str | None = nullable()


@attrs.frozen
class SetSessionNameParams:
    name: str


@attrs.frozen
class SetModelParams:
    provider: str
    model_id: str


# -- tool approval ---------------------------------------------------------------------------------


@attrs.frozen
class SetApprovalPolicyParams:
    policy: ApprovalPolicy
    """For every later tool call of every session of this process (beats ``--approval`` and settings)."""


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
class ListApprovalRulesParams:
    cwd: str | None = None
    """Only the rules of this project (default: every project)."""


@attrs.frozen
class ListApprovalRulesResult:
    rules: list[ApprovalRule]
    diagnostics: list[DiagnosticItem]
    """A warning when the rules file cannot be used (then no rule applies and none is listed)."""


@attrs.frozen
class RevokeApprovalRuleParams:
    id: str


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
class RevokeTrustParams:
    directory: str
    """A directory with a saved decision (made canonical as the decision was: absolute, symlinks resolved)."""


@attrs.frozen
class RevokeTrustResult:
    decision: TrustDecision
    """The decision that was removed: the directory is asked about again (or the default applies)."""
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


@attrs.frozen
class GetAvailableModelsResult:
    models: list[ModelDescription]
    """The models usable now (credentials present, API implemented), in Pi's order; the offline
    ``faux/faux-1`` only when nothing else is usable."""


@attrs.frozen
class CycleModelParams:
    direction: Literal["forward", "backward"] = "forward"


@attrs.frozen(kw_only=True)
class CycleModelResult:
    model: ModelDescription | None = nullable()  # noqa: RUF009 - attrs field factory, not a shared default
    """The model switched to; ``null`` when there is nothing to cycle to (at most one model)."""
    thinking_level: str
    """The session's thinking level after the switch (clamped to the model)."""
    is_scoped: bool
    """The cycle went over the scoped models (settings ``enabledModels`` / ``--models``)."""


# -- notifications client -> daemon ----------------------------------------------------------------


@attrs.frozen
class CancelParams:
    """``$/cancelRequest`` (LSP) and ``$/cancel_request`` (ACP)."""

    id: RequestId


# -- notifications daemon -> client ----------------------------------------------------------------


@attrs.frozen
class DiagnosticItem:
    type: DiagnosticType
    message: str


@attrs.frozen
class SessionDiagnosticsParams:
    operation: str
    generation: int
    cwd: str
    diagnostics: list[DiagnosticItem]
    session_file: str | None = None


@attrs.frozen
class HostStatusParams:
    status: HostStatus
    generation: int


@attrs.frozen
class ProgressBegin:
    kind: Literal["begin"]
    title: str
    message: str | None = None
    percentage: int | None = None


@attrs.frozen
class ProgressReport:
    kind: Literal["report"]
    message: str | None = None
    percentage: int | None = None


@attrs.frozen
class ProgressEnd:
    kind: Literal["end"]
    message: str | None = None


ProgressValue: TypeAlias = ProgressBegin | ProgressReport | ProgressEnd


@attrs.frozen
class ProgressParams:
    token: ProgressToken
    value: ProgressValue


@attrs.frozen
class UiNotifyParams:
    message: str
    notify_type: DiagnosticType = "info"


# -- requests daemon -> client ---------------------------------------------------------------------


@attrs.frozen
class AuthorizeProjectParams:
    cwd: str
    reasons: list[str]
    """Why trust is asked (project-local extensions, settings, ...)."""


@attrs.frozen
class AuthorizeProjectResult:
    decision: Literal["trust", "trustOnce", "deny"]
    remember: bool | None = None


@attrs.frozen
class UiConfirmParams:
    title: str
    message: str


@attrs.frozen
class UiConfirmResult:
    confirmed: bool


@attrs.frozen
class UiSelectParams:
    title: str
    options: list[str]


@attrs.frozen
class UiSelectResult:
    value: str | None = None
    """Absent: the user cancelled."""


@attrs.frozen
class UiInputParams:
    title: str
    placeholder: str | None = None


@attrs.frozen
class UiInputResult:
    value: str | None = None
    """Absent: the user cancelled."""


@attrs.frozen
class UiEditorParams:
    title: str
    prefill: str | None = None
    """Text to start the multi-line editor with."""


@attrs.frozen
class UiEditorResult:
    value: str | None = None
    """The edited text; absent: the user cancelled."""


@attrs.frozen
class UiSetStatusParams:
    key: str
    text: str | None = None
    """Absent: clear the status entry ``key``."""


@attrs.frozen
class UiSetWidgetParams:
    key: str
    lines: list[str] | None = None
    """Absent: clear the widget ``key``."""
    placement: Literal["aboveEditor", "belowEditor"] = "aboveEditor"


@attrs.frozen
class UiSetTitleParams:
    title: str


@attrs.frozen
class UiSetEditorTextParams:
    text: str


@attrs.frozen
class ToolLocation:
    path: str
    """Absolute."""
    line: int | None = None


@attrs.frozen
class ToolAuthorizeParams:
    session_id: str
    generation: int
    tool_call_id: str
    tool_name: str
    kind: ToolKind
    """ACP's ToolKind word for the call."""
    title: str
    """One line for a person: ``bash: rm -rf build``, ``edit src/a.py``."""
    arguments: dict[str, Any]
    """The call's arguments; a string longer than 2000 characters is cut and ends ``… [N more characters]``."""
    locations: list[ToolLocation]
    """The paths the call touches (empty for ``bash``)."""


@attrs.frozen
class ToolAuthorizeResult:
    decision: ApprovalDecision
    reason: str | None = None
    """For a rejection: told to the model with the refusal."""


_FROM_EVENTS = frozenset({"SessionEventParams", "SessionLifecycleParams"})


def __getattr__(name: str) -> Any:
    """The params of ``session/event`` and ``session/lifecycle`` live with the events they carry
    (``rpcd.protocol.events``): its ~55 classes are imported only by whoever reads these (the
    OpenRPC document, the event contract tests), never on the daemon's way to its first answer."""
    if name in _FROM_EVENTS:
        from rpcd.protocol import events

        value = getattr(events, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
