"""Value types the rooms exchange: diagnostics, model refs, session snapshots, extension bindings,
and the tool-approval vocabulary (requests, answers, rules) the tools' gate and the fronts share.

They are plain data (attrs, frozen) and small protocols with no behaviour of their own, so the
store, the runtime, the host and the wire can all speak them without importing each other. The
host's port (``rpcd.host.port``) is written in these types.


Events are plain ``dict`` objects in Pi's shapes (``{"type": "message_update", ...}``): they go to
the wire as they are. Their published shapes are the wire contract's (``rpcd.protocol.events``,
checked against every event the tests see), not a model the rooms below the fronts build or read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias

import attrs

DiagnosticType: TypeAlias = Literal["info", "warning", "error"]
ForkPosition: TypeAlias = Literal["before", "at"]
QueueMode: TypeAlias = Literal["all", "one-at-a-time"]
StreamingBehavior: TypeAlias = Literal["steer", "followUp"]
ApprovalPolicy: TypeAlias = Literal["auto", "ask-writes", "ask-all", "deny-writes"]
"""``auto``: every tool runs (Pi's behaviour); ``ask-writes``: the client decides every call that may
change something; ``ask-all``: every call; ``deny-writes``: calls that may change something are refused."""
APPROVAL_POLICIES: tuple[ApprovalPolicy, ...] = ("auto", "ask-writes", "ask-all", "deny-writes")
SandboxMode: TypeAlias = Literal["off", "read-only", "workspace-write"]
"""Where a sandboxed command may write (``rpcd.tools.sandbox``): anywhere, nowhere, the project and temp dir."""
SANDBOX_MODES: tuple[SandboxMode, ...] = ("off", "read-only", "workspace-write")
SandboxMechanism: TypeAlias = Literal["bwrap", "landlock"]
ApprovalDecision: TypeAlias = Literal["allowOnce", "allowAlways", "rejectOnce", "rejectAlways"]
"""The client's answer (ACP's ``allow_once`` / ``allow_always`` / ``reject_once`` / ``reject_always``)."""
APPROVAL_DECISIONS: tuple[ApprovalDecision, ...] = ("allowOnce", "allowAlways", "rejectOnce", "rejectAlways")
ToolKind: TypeAlias = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "other"]
"""ACP's ``ToolKind`` words (without ``think``/``switch_mode``, which no tool call here is)."""
SessionEvent: TypeAlias = Mapping[str, Any]
"""One AgentSession event in Pi's shape; ``event["type"]`` names it."""
EventListener: TypeAlias = Callable[[SessionEvent], None]
Unsubscribe: TypeAlias = Callable[[], None]


@attrs.frozen
class Diagnostic:
    """``AgentSessionRuntimeDiagnostic``: ``{type, message}`` (Pi has no ``level`` field)."""

    type: DiagnosticType
    message: str


@attrs.frozen
class QueueSnapshot:
    """Queued steering / follow-up input (texts in delivery order)."""

    steering: tuple[str, ...] = ()
    follow_up: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.steering and not self.follow_up


@attrs.frozen
class ImageInput:
    """An image sent with a prompt / steer / follow-up (Pi's ``ImageContent``: base64 + MIME type)."""

    data: str
    mime_type: str


@attrs.frozen
class ReplaceResult:
    """What a replacement returns: Pi's ``{cancelled, selectedText?}``, and the queued input the
    replaced session never delivered (reported back, never silently lost)."""

    cancelled: bool
    selected_text: str | None = None
    session_id: str | None = None
    """The session current afterwards, when the caller knows it (an extension command's action)."""
    dropped_queue: QueueSnapshot | None = None


@attrs.frozen
class ExtensionError:
    """An extension handler failed; reported through ``ExtensionBindings.on_error``."""

    extension_path: str
    event: str
    error: str


@attrs.frozen
class ModelRef:
    provider: str
    model_id: str


@attrs.frozen
class SessionState:
    """A read-only snapshot of the current session for ``getState``."""

    session_id: str
    session_file: str | None
    cwd: str
    name: str | None
    leaf_id: str | float | None
    """A number when a hand-edited file's leaf has a numeric id (as Pi's ``getLeafId()``)."""
    model: ModelRef | None
    thinking_level: str
    is_streaming: bool
    message_count: int
    steering_mode: QueueMode = "one-at-a-time"
    follow_up_mode: QueueMode = "one-at-a-time"
    pending_message_count: int = 0
    is_compacting: bool = False
    auto_compaction_enabled: bool = True
    auto_retry_enabled: bool = True
    approval_policy: ApprovalPolicy | None = None
    """The tool-approval policy in force for this session (``None``: the runtime has no gate)."""
    limits: LimitsState | None = None
    """The spending caps in force and what was spent (``rpcd.runtime.limits``)."""
    sandbox: SandboxState | None = None
    """The sandbox of its commands (``None``: the runtime has no sandbox control: never sandboxed)."""
    mcp_servers: tuple[McpServerState, ...] = ()
    """The MCP servers the session named, with their status."""


@attrs.frozen
class LimitsState:
    """The caps in force (``limits.*`` settings, ``setLimits``) beside what the session (and, when a
    per-day cap is set, the day) has spent."""

    caps: tuple[tuple[str, float], ...]
    """``(name, cap)``: ``maxCost``, ``maxTokens``, ``maxCostPerDay``, ``maxTokensPerDay`` — those set."""
    cost: float
    tokens: int
    cost_today: float | None = None
    """Only when a per-day cap is set (the day's ledger is read only then)."""
    tokens_today: int | None = None
    reached: str | None = None
    """The first cap at or over its limit: the next model call will not happen."""

    def cap(self, name: str) -> float | None:
        return dict(self.caps).get(name)


@attrs.frozen
class SandboxState:
    """The sandbox commands run in (``rpcd.tools.sandbox``), for ``getState``: ``mode`` (``off``,
    ``read-only``, ``workspace-write``), whether they may reach the network, the ``mechanism`` that
    enforces it (``bwrap``, ``landlock``; ``None`` when off or unavailable), what they may write
    (besides ``/dev``) and, when no mechanism can enforce it here, the ``problem`` (every sandboxed
    command is then refused)."""

    mode: SandboxMode = "off"
    network: bool = True
    mechanism: SandboxMechanism | None = None
    writable: tuple[str, ...] = ()
    problem: str | None = None


@attrs.frozen
class McpServerState:
    """One MCP server a session named, as ``listMcpServers``, ``getState`` and ``mcp/status`` show it
    (no env values, no headers, no URL userinfo)."""

    name: str
    transport: str
    """``stdio``, ``http`` (streamable HTTP) or ``sse``."""
    target: str
    """The command line it runs, or the URL it connects to."""
    status: Literal["starting", "ready", "failed", "stopped"]
    tools: tuple[str, ...] = ()
    """The server's own tool names (the session calls them ``mcp__<server>__<tool>``)."""
    prompts: tuple[str, ...] = ()
    resources: int = 0
    sessions: int = 0
    """How many sessions of this process hold it."""
    last_error: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    source: str = ""
    """The ``mcp.json`` file that named it, or the front (``acp``)."""


@attrs.frozen
class TokenTotals:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


@attrs.frozen
class ContextUsage:
    """The current context-window estimate (``tokens``/``percent`` unknown right after a compaction)."""

    context_window: int
    tokens: int | None
    percent: float | None


@attrs.frozen
class SessionStats:
    """Pi's ``getSessionStats``."""

    session_id: str
    session_file: str | None
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int
    total_messages: int
    tokens: TokenTotals
    cost: float
    context_usage: ContextUsage | None


@attrs.frozen
class BashOutcome:
    """Pi's ``BashResult`` of a client-run command."""

    output: str
    exit_code: int | None
    cancelled: bool
    truncated: bool
    full_output_path: str | None = None


@attrs.frozen
class ForkMessage:
    entry_id: str
    text: str


@attrs.frozen
class SessionTree:
    """Raw entries as in the file (file order, no header), the leaf, and the global labels;
    ``nodes``: Pi's ``getTree()`` (``{entry, children, label?, labelTimestamp?}`` roots) when asked."""

    entries: Sequence[Mapping[str, Any]]
    leaf_id: str | float | None
    labels: Mapping[str, str]
    nodes: Sequence[Mapping[str, Any]] | None = None


WidgetPlacement: TypeAlias = Literal["aboveEditor", "belowEditor"]


class UiContext(Protocol):
    """Extension UI callbacks the host supplies (forwarded to the client by the daemon).

    Dialogs resolve to Pi's cancel defaults (``None`` / ``False``) on timeout or refusal; the
    fire-and-forget calls (notify, status, widget, title, editor text) reach only a client that
    declared them, and are dropped otherwise.
    """

    def notify(self, message: str, notify_type: Literal["info", "warning", "error"] = "info") -> None: ...

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool: ...

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None: ...

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None: ...

    async def editor(self, title: str, prefill: str | None = None, timeout: float | None = None) -> str | None:
        """Pi's multi-line editor dialog: the edited text, or ``None`` when cancelled."""
        ...

    def set_status(self, key: str, text: str | None) -> None:
        """Set (``None``: clear) the footer status entry ``key``."""
        ...

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor") -> None:
        """Set (``None``: clear) the widget ``key``: lines of text above or below the editor."""
        ...

    def set_title(self, title: str) -> None: ...

    def set_editor_text(self, text: str) -> None: ...


@attrs.frozen
class CommandInfo:
    """One command a prompt can invoke (``getCommands``): an extension command, a prompt template
    or a skill (``skill:name``), with Pi's ``sourceInfo`` (``path``, ``source``, ``scope``,
    ``origin``, ``baseDir``?)."""

    name: str
    source: Literal["extension", "prompt", "skill"]
    source_info: Mapping[str, Any]
    description: str | None = None
    argument_hint: str | None = None


@attrs.frozen
class InputHandled:
    """``prompt`` whose text an extension's ``input`` handler took (``{"action": "handled"}``): no turn ran."""


@attrs.frozen
class CommandRan:
    """``prompt`` of an extension command: the command ran instead of a turn (Pi runs it at once)."""

    name: str


PromptOutcome: TypeAlias = "str | CommandRan | InputHandled | None"
"""What ``prompt`` resolves with: the turn's ``stopReason``, a command that ran instead, input an
extension handled, or ``None`` for text queued into a running turn."""


class CommandActions(Protocol):
    """What extension code may ask of the host (Pi's ``commandContextActions`` and the turns and
    compactions its ``pi``/``ctx`` start). Every action goes through the serialized host like a
    request would (queued behind the operations requested before it). The replacements, tree moves
    and reloads are for commands only: refused from inside a host operation or inside a turn."""

    async def new_session(self, *, parent_session: str | None = None,
                          setup: Callable[[Any], Any] | None = None) -> ReplaceResult:
        """``setup(session_writer)`` runs on the new session before it is bound (Pi's ``setup``)."""
        ...

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult: ...

    async def switch_session(self, session_path: str) -> ReplaceResult: ...

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool | None = None, label: str | None = None) -> Mapping[str, Any]:
        ...

    async def reload(self) -> None:
        """Reopen the current session file with freshly read resources (``reload``)."""
        ...

    async def compact(self, custom_instructions: str | None = None) -> Mapping[str, Any]: ...

    async def run_turn(self, operation: str, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``work`` (a turn the session starts for an extension) where a client's ``prompt``
        would run: queued behind what was requested before, then outside the queue."""
        ...


# -- tool approval ----------------------------------------------------------------------------


@attrs.frozen
class ToolLocation:
    """A path a tool call touches (ACP's ``ToolCallLocation``): absolute, with a line if known."""

    path: str
    line: int | None = None


@attrs.frozen
class ToolApprovalRequest:
    """One tool call as the client is asked about it (the front adds the session's id and generation)."""

    tool_call_id: str
    tool_name: str
    kind: ToolKind
    title: str
    """One line for a person: ``bash: rm -rf build``, ``edit src/a.py``."""
    arguments: Mapping[str, Any]
    """The call's arguments, long strings cut to a preview that says how much was cut (a bash
    ``command`` never: it is carried whole)."""
    locations: Sequence[ToolLocation] = ()
    """The paths the call acts on, symbolic links resolved."""
    always_rule: AlwaysRule | None = None
    """What an ``allowAlways`` / ``rejectAlways`` answer stores (``None``: nothing can be remembered)."""
    notices: Sequence[str] = ()
    """Sentences the person should read before answering: a long command whose title shows only its
    start, a path that resolves through a symbolic link, arguments cut in this request."""


@attrs.frozen
class AlwaysRule:
    """The matcher an ``…Always`` answer to a call would remember (an :class:`ApprovalRule` without
    its decision): ``command`` for bash, ``path`` for file tools, neither for every call of the tool;
    ``description`` says it in words for a person (``bash commands `ls *` (one simple command each)``)."""

    tool_name: str
    description: str
    command: str | None = None
    path: str | None = None


@attrs.frozen
class ToolApprovalAnswer:
    """What came back for a :class:`ToolApprovalRequest`.

    ``answered`` is ``False`` when the client gave no valid answer (timeout, gone, an invalid or
    error reply, no capability, the session replaced meanwhile): the decision is then a rejection
    and ``reason`` says why, in words the model can read."""

    decision: ApprovalDecision
    reason: str | None = None
    answered: bool = True


class ToolApprover(Protocol):
    """Asks the client about one tool call (supplied by the front through :class:`ExtensionBindings`)."""

    def __call__(self, request: ToolApprovalRequest) -> Awaitable[ToolApprovalAnswer]: ...


@attrs.frozen
class ApprovalRule:
    """A remembered ``allowAlways`` / ``rejectAlways`` for one project and tool.

    ``command`` (bash): the command's first word(s) followed by `` *`` (that prefix and anything
    after it), or a whole command that must match exactly. ``path`` (file tools): a glob over
    the path, relative to ``project`` (absolute for paths outside it). Neither: every call of the tool.
    """

    id: str
    project: str
    tool_name: str
    decision: Literal["allow", "reject"]
    created_at: str
    command: str | None = None
    path: str | None = None


class SandboxSetter(Protocol):
    """What a front may change of a sandbox control (``rpcd.tools.sandbox.SandboxControl``)."""

    def set(self, mode: SandboxMode | None = None, network: bool | None = None) -> None:
        """Set the mode and/or whether the network is reachable (``None``: that part as it is)."""
        ...


class ApprovalControl(Protocol):
    """What a front may change or read of the process's approval gate (``rpcd.tools.approval``)."""

    def set_policy(self, policy: ApprovalPolicy) -> None: ...

    def list_rules(self, project: str | None = None) -> tuple[list[ApprovalRule], list[Diagnostic]]:
        """The rules (of one project, or all) and a warning if the rules file cannot be used."""
        ...

    def revoke_rule(self, rule_id: str) -> ApprovalRule | None:
        """Remove one rule; ``None`` if there is none with that id."""
        ...


@attrs.frozen
class SavedTrust:
    """One saved project-trust decision (``<agentDir>/trust.json``)."""

    directory: str
    trusted: bool


class TrustControl(Protocol):
    """What a front may read or undo of the saved project-trust decisions (``rpcd.runtime.resources.trust``)."""

    def list_decisions(self) -> tuple[list[SavedTrust], list[Diagnostic]]:
        """Every saved decision, sorted by directory, and a warning if the file cannot be used."""
        ...

    def revoke(self, directory: str) -> SavedTrust | None:
        """Remove the decision saved for ``directory``; ``None`` if there is none."""
        ...

    def save(self, directory: str, trusted: bool) -> SavedTrust:
        """Save a decision for ``directory`` (canonical), replacing the one saved there."""
        ...


@attrs.frozen
class ExtensionBindings:
    """``Parameters<AgentSession["bindExtensions"]>[0]``: what the host binds into a session."""

    mode: str = "rpc"
    ui: UiContext | None = None
    on_error: Callable[[ExtensionError], None] | None = None
    command_actions: CommandActions | None = None
    """Session control for extension commands (``ctx.new_session()`` ...); ``None``: not available."""
    tool_approver: ToolApprover | None = None
    """Asks the client before a tool runs (rpcd's ``tool/authorize``); ``None``: nobody can be asked."""
    spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
    """Runs work in the host's task group without waiting for it (what Pi does not await: extension
    notifications such as ``thinking_level_select``, ``ctx.compact()``, extension-started turns)."""
    shutdown: Callable[[], None] | None = None
    """Pi's ``ctx.shutdown()``: the front ends in order once the session is idle."""


@attrs.frozen
class ModelDescription:
    """A model as ``getAvailableModels`` / ``cycleModel`` describe it (no URLs, headers or keys)."""

    provider: str
    id: str
    name: str
    api: str
    reasoning: bool
    thinking_levels: tuple[str, ...]
    input: tuple[str, ...]
    context_window: int
    max_tokens: int
    cost: Mapping[str, float]
    credential_source: str | None = None
    """Where the provider's credential comes from (a label, never the value)."""


@attrs.frozen
class CycleModelResult:
    """``cycleModel``: the model switched to, its (clamped) thinking level, and whether the
    cycle went over the scoped models (settings ``enabledModels`` / ``--models``)."""

    model: ModelDescription
    thinking_level: str
    is_scoped: bool


@attrs.frozen
class LimitOverrides:
    """What ``setLimits`` chose (``None``: the ``limits.*`` setting applies)."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_cost_per_day: float | None = None
    max_tokens_per_day: int | None = None

    def get(self, name: str) -> float | None:
        value: float | None = {"maxCost": self.max_cost, "maxTokens": self.max_tokens,
                               "maxCostPerDay": self.max_cost_per_day,
                               "maxTokensPerDay": self.max_tokens_per_day}[name]
        return value


@attrs.frozen
class CheckpointInfo:
    """One file checkpoint of a session (``listCheckpoints``)."""

    entry_id: str
    checkpoint_id: str
    kind: str
    root: str
    created_at: str
    reason: str
    available: bool
    """The store still holds it (``False``: pruned, or another agent dir's)."""
    finished: bool
    """Its run ended and was snapshotted (``False``: running, or the daemon died first)."""
    restored_to: str | None = None
    partial: str | None = None
    prompt_entry_id: str | None = None
    """The user message whose run it belongs to."""
    prompt: str | None = None
    """That message's text, shortened."""
    changed: tuple[str, ...] | None = None
    """The paths its run changed (absolute), when asked for."""


@attrs.frozen
class CheckpointListing:
    checkpoints: tuple[CheckpointInfo, ...]
    undo_entry_id: str | None
    """What a restore without an entry (``undo``) restores."""


@attrs.frozen
class RestoredFile:
    """One file of a restore (``rpcd.store.checkpoints.FileChange`` across the rooms)."""

    path: str
    action: str
    applied: bool
    restorable: bool
    conflict: str | None = None
    diff: str | None = None
    binary: bool = False


@attrs.frozen
class RestoreOutcome:
    entry_id: str
    checkpoint_id: str
    dry_run: bool
    files: tuple[RestoredFile, ...]
    unchanged: tuple[str, ...]
    notes: tuple[str, ...]
    restore_entry_id: str | None = None
    """The entry of the restore's own checkpoint (undo the restore by restoring it)."""

