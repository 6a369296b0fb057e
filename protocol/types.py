"""Every params, result and notification shape of the wire, as attrs classes.

This module defines the handshake, ``getState``'s result and the params of every client request
(what registering the methods and the first answer need); the results of the other requests
(``rpcd.protocol.results``), what the daemon sends (``rpcd.protocol.outgoing``) and the event
notifications' params (``rpcd.protocol.events``) are defined there and re-exported here, each
module imported when one of its names is first read.

Python names are snake_case; the converter renames them to camelCase on the wire.
Optional fields default to ``None`` and are omitted when unset, except fields built with
``nullable()``, which are always present (``null`` when unset). Pi's own payloads that go
out as they are (messages, raw entries) stay ``dict[str, Any]`` in results; the session
events that carry them are typed in ``rpcd.protocol.events``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from rpcd.protocol._fields import nullable, open_object
from rpcd.protocol.names import PROTOCOL_VERSION as PROTOCOL_VERSION  # re-exported
from rpcd.protocol.shapes import ApprovalDecision as ApprovalDecision
from rpcd.protocol.shapes import CommandInfo as CommandInfo
from rpcd.protocol.shapes import CommandSourceInfo as CommandSourceInfo
from rpcd.protocol.shapes import CompactionReason as CompactionReason
from rpcd.protocol.shapes import DiagnosticType as DiagnosticType
from rpcd.protocol.shapes import HostStatus as HostStatus
from rpcd.protocol.shapes import LimitsInfo as LimitsInfo
from rpcd.protocol.shapes import McpServerInfo as McpServerInfo
from rpcd.protocol.shapes import McpServerStatus as McpServerStatus
from rpcd.protocol.shapes import McpTransport as McpTransport
from rpcd.protocol.shapes import ProgressToken as ProgressToken
from rpcd.protocol.shapes import QueueContents as QueueContents
from rpcd.protocol.shapes import StreamingBehavior as StreamingBehavior
from rpcd.protocol.shapes import ThinkingLevel as ThinkingLevel
from rpcd.protocol.shapes import ToolKind as ToolKind

if TYPE_CHECKING:
    from rpcd.protocol.events import CompactionEndEvent as CompactionEndEvent
    from rpcd.protocol.events import CompactionResult as CompactionResult
    from rpcd.protocol.events import CompactionStartEvent as CompactionStartEvent
    from rpcd.protocol.events import SessionEventParams as SessionEventParams
    from rpcd.protocol.events import SessionLifecycleParams as SessionLifecycleParams
    from rpcd.protocol.outgoing import AuthNotifyParams as AuthNotifyParams
    from rpcd.protocol.outgoing import AuthorizeProjectParams as AuthorizeProjectParams
    from rpcd.protocol.outgoing import AuthorizeProjectResult as AuthorizeProjectResult
    from rpcd.protocol.outgoing import AuthPromptOption as AuthPromptOption
    from rpcd.protocol.outgoing import AuthPromptParams as AuthPromptParams
    from rpcd.protocol.outgoing import AuthPromptResult as AuthPromptResult
    from rpcd.protocol.outgoing import AuthPromptSpec as AuthPromptSpec
    from rpcd.protocol.outgoing import DiagnosticItem as DiagnosticItem
    from rpcd.protocol.outgoing import HostStatusParams as HostStatusParams
    from rpcd.protocol.outgoing import McpStatusParams as McpStatusParams
    from rpcd.protocol.outgoing import ProgressBegin as ProgressBegin
    from rpcd.protocol.outgoing import ProgressEnd as ProgressEnd
    from rpcd.protocol.outgoing import ProgressParams as ProgressParams
    from rpcd.protocol.outgoing import ProgressReport as ProgressReport
    from rpcd.protocol.outgoing import ProgressValue as ProgressValue
    from rpcd.protocol.outgoing import SessionDiagnosticsParams as SessionDiagnosticsParams
    from rpcd.protocol.outgoing import ToolAuthorizeAlwaysRule as ToolAuthorizeAlwaysRule
    from rpcd.protocol.outgoing import ToolAuthorizeParams as ToolAuthorizeParams
    from rpcd.protocol.outgoing import ToolAuthorizeResult as ToolAuthorizeResult
    from rpcd.protocol.outgoing import ToolLocation as ToolLocation
    from rpcd.protocol.outgoing import UiConfirmParams as UiConfirmParams
    from rpcd.protocol.outgoing import UiConfirmResult as UiConfirmResult
    from rpcd.protocol.outgoing import UiEditorParams as UiEditorParams
    from rpcd.protocol.outgoing import UiEditorResult as UiEditorResult
    from rpcd.protocol.outgoing import UiInputParams as UiInputParams
    from rpcd.protocol.outgoing import UiInputResult as UiInputResult
    from rpcd.protocol.outgoing import UiNotifyParams as UiNotifyParams
    from rpcd.protocol.outgoing import UiSelectParams as UiSelectParams
    from rpcd.protocol.outgoing import UiSelectResult as UiSelectResult
    from rpcd.protocol.outgoing import UiSetEditorTextParams as UiSetEditorTextParams
    from rpcd.protocol.outgoing import UiSetStatusParams as UiSetStatusParams
    from rpcd.protocol.outgoing import UiSetTitleParams as UiSetTitleParams
    from rpcd.protocol.outgoing import UiSetWidgetParams as UiSetWidgetParams
    from rpcd.protocol.results import ApprovalRule as ApprovalRule
    from rpcd.protocol.results import AuthProviderInfo as AuthProviderInfo
    from rpcd.protocol.results import AvailableThinkingLevelsResult as AvailableThinkingLevelsResult
    from rpcd.protocol.results import BashResult as BashResult
    from rpcd.protocol.results import CheckpointSummary as CheckpointSummary
    from rpcd.protocol.results import ContextUsage as ContextUsage
    from rpcd.protocol.results import CycleModelResult as CycleModelResult
    from rpcd.protocol.results import CycleThinkingLevelResult as CycleThinkingLevelResult
    from rpcd.protocol.results import DeleteSessionResult as DeleteSessionResult
    from rpcd.protocol.results import ExportMarkdownResult as ExportMarkdownResult
    from rpcd.protocol.results import ExportResult as ExportResult
    from rpcd.protocol.results import ForkMessage as ForkMessage
    from rpcd.protocol.results import ForkMessagesResult as ForkMessagesResult
    from rpcd.protocol.results import ForkResult as ForkResult
    from rpcd.protocol.results import GetAvailableModelsResult as GetAvailableModelsResult
    from rpcd.protocol.results import GetCommandsResult as GetCommandsResult
    from rpcd.protocol.results import GetEntriesResult as GetEntriesResult
    from rpcd.protocol.results import GetMessagesResult as GetMessagesResult
    from rpcd.protocol.results import GetTreeResult as GetTreeResult
    from rpcd.protocol.results import LastAssistantTextResult as LastAssistantTextResult
    from rpcd.protocol.results import ListApprovalRulesResult as ListApprovalRulesResult
    from rpcd.protocol.results import ListAuthProvidersResult as ListAuthProvidersResult
    from rpcd.protocol.results import ListCheckpointsResult as ListCheckpointsResult
    from rpcd.protocol.results import ListSessionsResult as ListSessionsResult
    from rpcd.protocol.results import ListTrustResult as ListTrustResult
    from rpcd.protocol.results import LoginResult as LoginResult
    from rpcd.protocol.results import LogoutResult as LogoutResult
    from rpcd.protocol.results import ModelCost as ModelCost
    from rpcd.protocol.results import ModelDescription as ModelDescription
    from rpcd.protocol.results import NavigateTreeResult as NavigateTreeResult
    from rpcd.protocol.results import PromptResult as PromptResult
    from rpcd.protocol.results import ReadSessionResult as ReadSessionResult
    from rpcd.protocol.results import RenameSessionResult as RenameSessionResult
    from rpcd.protocol.results import ReplacementResult as ReplacementResult
    from rpcd.protocol.results import RestoreCheckpointResult as RestoreCheckpointResult
    from rpcd.protocol.results import RestoredFile as RestoredFile
    from rpcd.protocol.results import RevokeApprovalRuleResult as RevokeApprovalRuleResult
    from rpcd.protocol.results import RevokeTrustResult as RevokeTrustResult
    from rpcd.protocol.results import SaveTrustResult as SaveTrustResult
    from rpcd.protocol.results import SearchHit as SearchHit
    from rpcd.protocol.results import SearchSessionsResult as SearchSessionsResult
    from rpcd.protocol.results import SearchSnippet as SearchSnippet
    from rpcd.protocol.results import SessionStatsResult as SessionStatsResult
    from rpcd.protocol.results import SessionSummary as SessionSummary
    from rpcd.protocol.results import SetLimitsResult as SetLimitsResult
    from rpcd.protocol.results import TokenStats as TokenStats
    from rpcd.protocol.results import TrustDecision as TrustDecision

SUPPORTED_PROTOCOL_VERSIONS: frozenset[int] = frozenset({1})

RequestId: TypeAlias = int | str
Capability: TypeAlias = dict[str, Any]
"""A capability marker: an object present means "supported"; its keys are future sub-options."""
QueueMode: TypeAlias = Literal["all", "one-at-a-time"]
"""How queued input is delivered: all of it at once, or one message per opportunity."""
ApprovalPolicy: TypeAlias = Literal["auto", "ask-writes", "ask-all", "deny-writes"]
SandboxMode: TypeAlias = Literal["off", "read-only", "workspace-write"]


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
    auth_prompt: Capability | None = None
    """The client answers ``auth/prompt`` and shows ``auth/notify`` (what ``login`` needs)."""


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
    """The session file to switch to, or a session id / an id prefix only one session has (looked up
    in the current project first, then in every project)."""
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


# -- session reads and actions ---------------------------------------------------------------------


@attrs.frozen
class ModelRef:
    provider: str
    model_id: str


@attrs.frozen
class SandboxInfo:
    """The sandbox the session's commands (the bash tool, the client's ``bash``) run in."""

    mode: SandboxMode
    """``off`` (as Pi), ``read-only`` (no writes), ``workspace-write`` (the project and the temp dir)."""
    network: bool
    """Whether they may reach the network."""
    writable: list[str]
    """What they may write besides ``/dev`` (symbolic links resolved)."""
    mechanism: Literal["bwrap", "landlock"] | None = None
    """What enforces it (``null`` when off, or when nothing here can: see ``problem``)."""
    problem: str | None = None
    """Why no mechanism can enforce it here: every sandboxed command is then refused, nothing runs."""


@attrs.frozen(kw_only=True)
class GetStateResult:
    session_id: str
    cwd: str
    leaf_id: str | float | None = nullable()
    """The current leaf entry, ``null`` for a session without entries (or whose last entry has no id);
    a number when a hand-edited file's leaf has a numeric id, as Pi's ``getLeafId()``."""
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
    limits: LimitsInfo | None = None
    """The spending caps in force and what was spent (absent: no cap is set)."""
    sandbox: SandboxInfo | None = None
    """The sandbox the session's commands run in (``--sandbox``, ``setSandbox``, the ``sandbox`` setting)."""
    mcp_servers: list[McpServerInfo] | None = None
    """The MCP servers the session named and their status (absent: it names none)."""


@attrs.frozen
class GetTreeParams:
    nested: bool | None = None
    """Also answer Pi's nested form (``tree``); default false."""


# -- compaction and the tree -----------------------------------------------------------------------

@attrs.frozen
class CompactParams:
    custom_instructions: str | None = None
    """What the summary should focus on (``Additional focus: ...``)."""


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
    restore_files: bool | None = None
    """Also put the files the agent changed after the target back as they were then (the first
    file checkpoint after it, ``restoreCheckpoint``'s rules: a file changed by someone else since is
    listed, not written); the result's ``restore`` says what happened."""


@attrs.frozen
class SetLabelParams:
    entry_id: str
    label: str | None = None
    """Absent: clear the entry's label."""


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
class DeleteSessionParams:
    session_file: str
    """A session file in the session store (absolute), or a session id / unique id prefix; never the
    current session."""


@attrs.frozen
class RenameSessionParams:
    session_file: str
    """Any session file (absolute), or a session id / unique id prefix; the current session's is
    renamed as ``setSessionName`` does."""
    name: str


@attrs.frozen
class ExportHtmlParams:
    output_path: str | None = None
    """Absolute and new (never overwritten); default ``<cwd>/pi-session-<file name>.html`` (``-1``, ... if taken)."""


@attrs.frozen
class ExportMarkdownParams:
    output_path: str | None = None
    """Absolute and new (never overwritten); default ``<cwd>/pi-session-<file name>.md`` (``-1``, ... if taken)."""
    inline: bool | None = None
    """Answer the document as ``markdown`` instead of writing a file."""


@attrs.frozen
class SetLimitsParams:
    """Caps for this daemon's sessions from now on (beating the ``limits.*`` settings); each absent
    cap is the setting's (``{}``: the settings again)."""

    max_cost: float | None = None
    """USD, the session's cost (``getSessionStats``)."""
    max_tokens: int | None = None
    max_cost_per_day: float | None = None
    """USD, every rpcd session of this agent dir since local midnight."""
    max_tokens_per_day: int | None = None


@attrs.frozen
class ListCheckpointsParams:
    files: bool | None = None
    """Also list the files each run changed (reads both snapshots of each checkpoint)."""


@attrs.frozen
class RestoreCheckpointParams:
    entry_id: str | None = None
    """A checkpoint's entry (``listCheckpoints``), or any entry: the first checkpoint after it.
    Absent: the newest run not undone yet (what ``rpcctl undo`` restores)."""
    files: list[str] | None = None
    """Only these paths (absolute, or relative to the checkpoint's root; a directory covers what is in it)."""
    dry_run: bool | None = None
    """Only say what would happen (with a diff per file); nothing is written."""
    force: bool | None = None
    """Also overwrite files someone else changed since (the restore's own checkpoint keeps them)."""


@attrs.frozen
class SearchSessionsParams:
    query: str
    """Pi's session-picker syntax: words (each must occur, case-insensitive), ``"quoted phrases"``
    (whitespace runs count as one space), ``re:<regex>`` (case-insensitive)."""
    cwd: str | None = None
    """Only sessions of this working directory (default: all)."""
    limit: int | None = None
    """Sessions per page (default 20, at most 200)."""
    cursor: str | None = None
    """From a previous ``nextCursor`` of the same query."""


@attrs.frozen
class ReadSessionParams:
    """A stored session read without switching to it: ``sessionFile`` or ``sessionId`` (an id, or a
    prefix only one session has)."""

    session_file: str | None = None
    session_id: str | None = None
    since: str | None = None
    """Only the entries after this entry id (append order)."""
    limit: int | None = None
    """Entries per answer (default 1,000, at most 10,000); ``nextSince`` continues."""


@attrs.frozen
class ExportJsonlParams:
    output_path: str
    """Absolute and new (never overwritten)."""


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
class BashParams:
    command: str
    """Run by the session's shell in its cwd (``shellCommandPrefix`` applies)."""
    exclude_from_context: bool | None = None
    """Keep the result out of the model's context (it is still recorded)."""
    timeout: float | None = None
    """Seconds; the process group is stopped after that (rpcd addition: Pi's ``bash`` has none)."""


@attrs.frozen
class SetAutoRetryParams:
    enabled: bool


@attrs.frozen
class GetEntriesParams:
    since: str | None = None
    """An entry id: only entries after it (in file order). Unknown: INVALID_ENTRY."""


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
class SetSandboxParams:
    mode: SandboxMode | None = None
    """For every later command of every session of this process (beats ``--sandbox`` and settings)."""
    network: bool | None = None
    """Whether sandboxed commands may reach the network (beats ``--sandbox-network`` and settings)."""


@attrs.frozen
class ListApprovalRulesParams:
    cwd: str | None = None
    """Only the rules of this project (default: every project)."""


@attrs.frozen
class RevokeApprovalRuleParams:
    id: str


@attrs.frozen
class RevokeTrustParams:
    directory: str
    """A directory with a saved decision (made canonical as the decision was: absolute, symlinks resolved)."""


@attrs.frozen
class SaveTrustParams:
    directory: str
    """An existing directory (absolute); saved canonical (symlinks resolved), as Pi saves it."""
    trusted: bool = True
    """``false`` saves a refusal: the project's code never loads and nothing asks about it."""


@attrs.frozen
class LoginParams:
    provider: str
    """A provider id of ``listAuthProviders``."""
    method: Literal["oauth", "api_key"] = "oauth"
    """``oauth``: the provider's subscription login (Pi's ``/login``); ``api_key``: ask for a key and store it."""


@attrs.frozen
class LogoutParams:
    provider: str


@attrs.frozen
class CycleModelParams:
    direction: Literal["forward", "backward"] = "forward"


# -- notifications client -> daemon ----------------------------------------------------------------


@attrs.frozen
class CancelParams:
    """``$/cancelRequest`` (LSP) and ``$/cancel_request`` (ACP)."""

    id: RequestId


# -- elsewhere, re-exported on first use ------------------------------------------------------------


_ELSEWHERE: dict[str, str] = {
    name: module
    for module, names in {
        "rpcd.protocol.events": (
            "CompactionEndEvent", "CompactionResult", "CompactionStartEvent", "SessionEventParams",
            "SessionLifecycleParams",
        ),
        "rpcd.protocol.results": (
            "ApprovalRule",
            "AvailableThinkingLevelsResult",
            "BashResult",
            "ContextUsage",
            "CycleModelResult",
            "CycleThinkingLevelResult",
            "DeleteSessionResult",
            "ExportResult",
            "ForkMessage",
            "ForkMessagesResult",
            "ForkResult",
            "GetAvailableModelsResult",
            "GetCommandsResult",
            "ListMcpServersResult",
            "GetEntriesResult",
            "GetMessagesResult",
            "GetTreeResult",
            "LastAssistantTextResult",
            "CheckpointSummary",
            "ExportMarkdownResult",
            "ListApprovalRulesResult",
            "ListCheckpointsResult",
            "ListSessionsResult",
            "ReadSessionResult",
            "RestoreCheckpointResult",
            "RestoredFile",
            "SearchHit",
            "SearchSessionsResult",
            "SearchSnippet",
            "SetLimitsResult",
            "ListTrustResult",
            "ListAuthProvidersResult",
            "AuthProviderInfo",
            "LoginResult",
            "LogoutResult",
            "ModelCost",
            "ModelDescription",
            "NavigateTreeResult",
            "PromptResult",
            "RenameSessionResult",
            "ReplacementResult",
            "RevokeApprovalRuleResult",
            "RevokeTrustResult",
            "SaveTrustResult",
            "SessionStatsResult",
            "SessionSummary",
            "TokenStats",
            "TrustDecision",
        ),
        "rpcd.protocol.outgoing": (
            "AuthNotifyParams",
            "AuthPromptOption",
            "AuthPromptParams",
            "AuthPromptResult",
            "AuthPromptSpec",
            "AuthorizeProjectParams",
            "AuthorizeProjectResult",
            "DiagnosticItem",
            "HostStatusParams",
            "McpStatusParams",
            "ProgressBegin",
            "ProgressEnd",
            "ProgressParams",
            "ProgressReport",
            "ProgressValue",
            "SessionDiagnosticsParams",
            "ToolAuthorizeAlwaysRule",
            "ToolAuthorizeParams",
            "ToolAuthorizeResult",
            "ToolLocation",
            "UiConfirmParams",
            "UiConfirmResult",
            "UiEditorParams",
            "UiEditorResult",
            "UiInputParams",
            "UiInputResult",
            "UiNotifyParams",
            "UiSelectParams",
            "UiSelectResult",
            "UiSetEditorTextParams",
            "UiSetStatusParams",
            "UiSetTitleParams",
            "UiSetWidgetParams",
        ),
    }.items()
    for name in names
}


def __getattr__(name: str) -> Any:
    """The shapes only later requests (or the daemon's own messages) use live in their own modules
    and are imported on first use: ``rpcd.protocol.results`` (what later requests answer),
    ``rpcd.protocol.outgoing`` (what the daemon sends), ``rpcd.protocol.events`` (the ~55 event
    classes ``session/event`` and ``session/lifecycle`` carry). Building their ~115 attrs classes
    took most of this module's import, on the daemon's way to its first answer, which needs none."""
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(module)
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value
