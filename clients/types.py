"""Typed shapes of the wire (docs/wire-contract.md) as ``TypedDict``s.

They cost nothing at import time and nothing per message (results stay the plain
dicts ``json`` produced), which keeps the client's start-up and event rate close to a
raw reader; ``protocol/``'s attrs classes are the daemon's strict side of the same
contract.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict

from rpcd.protocol.names import PROTOCOL_VERSION as PROTOCOL_VERSION  # re-exported for the library
from rpcd.protocol.names import SESSION_SCOPED as SESSION_SCOPED
from rpcd.protocol.names import UI_NOTIFICATION_FEATURES


class ServerInfo(TypedDict):
    name: str
    version: str


class ServerCapabilities(TypedDict, total=False):
    methods: list[str]
    framing: list[str]
    maxMessageBytes: int
    batch: bool
    cancellation: list[str]


class InitializeResult(TypedDict):
    protocolVersion: int
    serverInfo: ServerInfo
    capabilities: ServerCapabilities


class QueueContents(TypedDict):
    steering: list[str]
    followUp: list[str]


class ReplacementResult(TypedDict):
    cancelled: bool
    sessionId: str
    sessionFile: NotRequired[str]
    cwd: str
    generation: int
    droppedQueue: NotRequired[QueueContents]


class ForkResult(ReplacementResult):
    selectedText: NotRequired[str]


class ModelRef(TypedDict):
    provider: str
    modelId: str


Status = Literal["ready", "replacing", "unusable", "disposed"]
QueueMode = Literal["all", "one-at-a-time"]
StreamingBehavior = Literal["steer", "followUp"]
ApprovalPolicy = Literal["auto", "ask-writes", "ask-all", "deny-writes"]
SandboxMode = Literal["off", "read-only", "workspace-write"]
ApprovalDecision = Literal["allowOnce", "allowAlways", "rejectOnce", "rejectAlways"]
APPROVAL_POLICIES: tuple[ApprovalPolicy, ...] = ("auto", "ask-writes", "ask-all", "deny-writes")
SANDBOX_MODES: tuple[SandboxMode, ...] = ("off", "read-only", "workspace-write")


class ModelCost(TypedDict):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float


class ModelDescription(TypedDict):
    provider: str
    id: str
    name: str
    api: str
    reasoning: bool
    thinkingLevels: list[str]
    input: list[str]
    contextWindow: int
    maxTokens: int
    cost: ModelCost
    credentialSource: NotRequired[str]
    """Where the provider's key comes from: ``ANTHROPIC_API_KEY``, ``auth.json``, ``--api-key`` …"""


class AvailableModelsResult(TypedDict):
    models: list[ModelDescription]


class CycleModelResult(TypedDict):
    model: ModelDescription | None
    thinkingLevel: str
    isScoped: bool


class SessionState(TypedDict):
    sessionId: str
    sessionFile: NotRequired[str]
    cwd: str
    name: NotRequired[str]
    leafId: str | float | None
    model: NotRequired[ModelRef]
    thinkingLevel: str
    isStreaming: bool
    messageCount: int
    generation: int
    status: Status
    isCompacting: bool
    steeringMode: QueueMode
    followUpMode: QueueMode
    autoCompactionEnabled: bool
    autoRetryEnabled: bool
    pendingMessageCount: int
    approvalPolicy: NotRequired[ApprovalPolicy]
    sandbox: NotRequired[SandboxInfo]
    mcpServers: NotRequired[list[McpServerInfo]]
    """The MCP servers the session named (absent: none)."""


class SandboxInfo(TypedDict):
    """The sandbox the session's commands run in (``getState.sandbox``)."""

    mode: SandboxMode
    network: bool
    writable: list[str]
    mechanism: NotRequired[Literal["bwrap", "landlock"]]
    problem: NotRequired[str]


class MessagesResult(TypedDict):
    messages: list[dict[str, Any]]


class TreeResult(TypedDict):
    entries: list[dict[str, Any]]
    leafId: str | float | None
    labels: dict[str, str]
    tree: NotRequired[list[dict[str, Any]]]
    """With ``nested=True``: Pi's nodes ``{entry, children, label?, labelTimestamp?}``."""


class CompactionResult(TypedDict):
    summary: str
    firstKeptEntryId: str
    tokensBefore: int
    estimatedTokensAfter: NotRequired[int]
    usage: NotRequired[dict[str, Any]]
    details: NotRequired[Any]


class NavigateTreeResult(TypedDict):
    cancelled: bool
    leafId: str | float | None
    aborted: NotRequired[bool]
    editorText: NotRequired[str]
    summaryEntry: NotRequired[dict[str, Any]]


class SessionSummary(TypedDict):
    sessionId: str
    sessionFile: str
    cwd: str
    title: str
    createdAt: str
    updatedAt: str
    messageCount: int
    parentSession: NotRequired[str]


class ListSessionsResult(TypedDict):
    sessions: list[SessionSummary]
    nextCursor: NotRequired[str]


class DeleteSessionResult(TypedDict):
    method: Literal["trash", "unlink"]
    trashPath: NotRequired[str]


class RenameSessionResult(TypedDict):
    name: str


class ExportResult(TypedDict):
    path: str


SessionSort = Literal["updated", "created"]


class TurnUsage(TypedDict):
    """Tokens of every model call of one turn (tool rounds and retried attempts included)."""

    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int


class PromptResult(TypedDict):
    stopReason: NotRequired[str]
    """Absent when an extension command handled the prompt (then ``command`` names it) or when the prompt was
    queued into a running turn (then ``queued`` says how)."""
    command: NotRequired[str]
    queued: NotRequired[StreamingBehavior]
    # What the client library adds for a turn that ran, from the turn's own events (the daemon
    # answers ``{stopReason}``; ``session/event`` carries the rest before that answer):
    text: NotRequired[str]
    """The text of the turn's last assistant message (what ``getLastAssistantText`` would say)."""
    sessionId: NotRequired[str]
    """The session the turn ran in."""
    sessionFile: NotRequired[str]
    """Its file, once it has one (Pi writes it at the first assistant message)."""
    usage: NotRequired[TurnUsage]
    cost: NotRequired[float]
    """US dollars of the turn's model calls, as the provider's prices say (0 for the offline model)."""
    isError: NotRequired[bool]
    """True when the turn failed or was aborted (``stopReason`` ``error`` / ``aborted``)."""
    errorMessage: NotRequired[str]
    """Why, when ``isError``: the provider's or the runtime's reason (a 401, a 500 after the retries, ...)."""


class CommandSourceInfo(TypedDict):
    path: str
    source: str
    scope: str
    origin: str
    baseDir: NotRequired[str]


class CommandInfo(TypedDict):
    name: str
    source: Literal["extension", "prompt", "skill"]
    sourceInfo: CommandSourceInfo
    description: NotRequired[str]
    argumentHint: NotRequired[str]


class CommandsResult(TypedDict):
    commands: list[CommandInfo]


class McpServerInfo(TypedDict):
    """One MCP server the session named (``listMcpServers``, ``getState.mcpServers``, ``mcp/status``)."""

    name: str
    transport: Literal["stdio", "http", "sse"]
    target: str
    status: Literal["starting", "ready", "failed", "stopped"]
    tools: list[str]
    prompts: list[str]
    resources: int
    sessions: int
    source: str
    lastError: NotRequired[str]
    serverName: NotRequired[str]
    serverVersion: NotRequired[str]


class McpServersResult(TypedDict):
    servers: list[McpServerInfo]


UI_NOTIFICATIONS = UI_NOTIFICATION_FEATURES
"""Extension UI notifications a client may declare in ``initialize`` (``extensionUi`` keys)."""
class Image(TypedDict):
    """``{"type": "image", "data": <base64>, "mimeType": "image/png"}`` (PNG, JPEG, GIF or WebP)."""

    type: Literal["image"]
    data: str
    mimeType: str


class CycleThinkingLevelResult(TypedDict):
    level: str | None


class ThinkingLevelsResult(TypedDict):
    levels: list[str]


class TokenStats(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    total: int


class ContextUsage(TypedDict):
    tokens: int | None
    contextWindow: int
    percent: float | None


class SessionStats(TypedDict):
    sessionFile: NotRequired[str]
    sessionId: str
    userMessages: int
    assistantMessages: int
    toolCalls: int
    toolResults: int
    totalMessages: int
    tokens: TokenStats
    cost: float
    contextUsage: NotRequired[ContextUsage]


class BashResult(TypedDict):
    output: str
    exitCode: NotRequired[int]
    cancelled: bool
    truncated: bool
    fullOutputPath: NotRequired[str]


class LastAssistantText(TypedDict):
    text: str | None


class ForkMessage(TypedDict):
    entryId: str
    text: str


class ForkMessagesResult(TypedDict):
    messages: list[ForkMessage]


class EntriesResult(TypedDict):
    entries: list[dict[str, Any]]
    leafId: str | float | None


class Notification(TypedDict):
    """One daemon->client notification as delivered by ``RpcdClient.notifications()``."""

    method: str
    params: Any


class AuthorizeProjectParams(TypedDict):
    cwd: str
    reasons: list[str]


class AuthorizeProjectResult(TypedDict):
    decision: Literal["trust", "trustOnce", "deny"]
    remember: NotRequired[bool]


class ToolLocation(TypedDict):
    path: str
    line: NotRequired[int]


class ToolAuthorizeParams(TypedDict):
    """``tool/authorize``: may this tool call run?"""

    sessionId: str
    generation: int
    toolCallId: str
    toolName: str
    kind: Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "other"]
    title: str
    arguments: dict[str, Any]
    locations: list[ToolLocation]
    alwaysRule: NotRequired[ToolAuthorizeAlwaysRule]
    notices: NotRequired[list[str]]


class ToolAuthorizeAlwaysRule(TypedDict):
    """What an ``allowAlways`` / ``rejectAlways`` answer stores."""

    toolName: str
    description: str
    command: NotRequired[str]
    path: NotRequired[str]


class ToolAuthorizeResult(TypedDict):
    decision: ApprovalDecision
    reason: NotRequired[str]


class ApprovalRule(TypedDict):
    id: str
    project: str
    toolName: str
    decision: Literal["allow", "reject"]
    createdAt: str
    command: NotRequired[str]
    path: NotRequired[str]


class Diagnostic(TypedDict):
    type: Literal["info", "warning", "error"]
    message: str


class ListApprovalRulesResult(TypedDict):
    rules: list[ApprovalRule]
    diagnostics: list[Diagnostic]


class RevokeApprovalRuleResult(TypedDict):
    rule: ApprovalRule


class TrustDecision(TypedDict):
    directory: str
    trusted: bool


class ListTrustResult(TypedDict):
    decisions: list[TrustDecision]
    diagnostics: list[Diagnostic]


class RevokeTrustResult(TypedDict):
    decision: TrustDecision


class SaveTrustResult(TypedDict):
    decision: TrustDecision
class AuthProviderInfo(TypedDict, total=False):
    id: Required[str]
    name: Required[str]
    oauth: Required[bool]
    apiKey: Required[bool]
    subscription: Required[bool]
    stored: Required[Literal["oauth", "api_key"] | None]
    expires: int


class ListAuthProvidersResult(TypedDict):
    providers: list[AuthProviderInfo]


class LoginResult(TypedDict, total=False):
    provider: Required[str]
    type: Required[Literal["oauth", "api_key"]]
    expires: int


class LogoutResult(TypedDict):
    provider: str
    removed: bool


class AuthPromptOption(TypedDict):
    id: str
    label: str


class AuthPrompt(TypedDict, total=False):
    type: Required[Literal["select", "text", "secret", "manual_code"]]
    message: Required[str]
    options: list[AuthPromptOption]
    placeholder: str


class AuthPromptParams(TypedDict):
    loginId: str
    provider: str
    prompt: AuthPrompt


class AuthPromptResult(TypedDict, total=False):
    value: str
    cancelled: bool


# -- file checkpoints, spending caps, full-text search (rpcd's own methods) -------------------------


class LimitsInfo(TypedDict):
    """Spending caps in force and what was spent (``getState.limits``, ``setLimits``)."""

    cost: float
    tokens: int
    maxCost: NotRequired[float]
    maxTokens: NotRequired[int]
    maxCostPerDay: NotRequired[float]
    maxTokensPerDay: NotRequired[int]
    costToday: NotRequired[float]
    tokensToday: NotRequired[int]
    reached: NotRequired[Literal["maxCost", "maxTokens", "maxCostPerDay", "maxTokensPerDay"]]


class SetLimitsResult(TypedDict):
    limits: LimitsInfo | None


class CheckpointSummary(TypedDict):
    entryId: str
    checkpointId: str
    kind: Literal["git", "files"]
    root: str
    createdAt: str
    reason: Literal["run", "restore"]
    available: bool
    finished: bool
    restoredTo: NotRequired[str]
    partial: NotRequired[str]
    promptEntryId: NotRequired[str]
    prompt: NotRequired[str]
    changedFiles: NotRequired[list[str]]


class ListCheckpointsResult(TypedDict):
    checkpoints: list[CheckpointSummary]
    undoEntryId: NotRequired[str]


class RestoredFile(TypedDict):
    path: str
    action: Literal["restore", "recreate", "delete"]
    applied: bool
    restorable: bool
    conflict: NotRequired[str]
    diff: NotRequired[str]
    binary: NotRequired[bool]


class RestoreCheckpointResult(TypedDict):
    entryId: str
    checkpointId: str
    dryRun: bool
    files: list[RestoredFile]
    unchanged: list[str]
    notes: list[str]
    restoreEntryId: NotRequired[str]


class SearchSnippet(TypedDict):
    kind: str
    text: str
    start: int
    end: int
    entryId: NotRequired[str]


class SearchHit(TypedDict):
    sessionId: str
    sessionFile: str
    cwd: str
    title: str
    createdAt: str
    updatedAt: str
    messageCount: int
    matchCount: int
    snippets: list[SearchSnippet]
    name: NotRequired[str]


class SearchSessionsResult(TypedDict):
    results: list[SearchHit]
    nextCursor: NotRequired[str]


class ReadSessionResult(TypedDict):
    sessionFile: str
    header: dict[str, Any]
    entries: list[dict[str, Any]]
    leafId: str | None
    nextSince: NotRequired[str]


class ExportMarkdownResult(TypedDict):
    path: NotRequired[str]
    markdown: NotRequired[str]

