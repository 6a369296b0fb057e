"""The method table: every method with its params type, result type, kind and direction.

The daemon's registration, the OpenRPC generator and the tests all read this one table
(lsprotocol's ``METHOD_TO_TYPES`` pattern); the names themselves live in ``rpcd.protocol.names``
(stdlib only, for the client). ``params is EmptyParams`` means "none, ``{}`` or ``[]``";
``result is None`` means the result is JSON ``null``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from rpcd.protocol import types as t
from rpcd.protocol.names import (
    ABORT,
    ABORT_BASH,
    ABORT_RETRY,
    AUTH_NOTIFY,
    AUTH_PROMPT,
    AUTHORIZE_PROJECT,
    BASH,
    CANCEL_REQUEST,
    CANCEL_REQUEST_ACP,
    CLEAR_QUEUE,
    CLONE,
    COMPACT,
    CYCLE_MODEL,
    CYCLE_THINKING_LEVEL,
    DELETE_SESSION,
    DISPOSE,
    EXIT,
    EXPORT_HTML,
    EXPORT_JSONL,
    EXPORT_MARKDOWN,
    FOLLOW_UP,
    FORK,
    GET_AVAILABLE_MODELS,
    GET_AVAILABLE_THINKING_LEVELS,
    GET_COMMANDS,
    GET_ENTRIES,
    GET_FORK_MESSAGES,
    GET_LAST_ASSISTANT_TEXT,
    GET_MESSAGES,
    GET_SESSION_STATS,
    GET_STATE,
    GET_TREE,
    HOST_STATUS,
    IMPORT_JSONL,
    INITIALIZE,
    LIST_APPROVAL_RULES,
    LIST_AUTH_PROVIDERS,
    LIST_CHECKPOINTS,
    LIST_MCP_SERVERS,
    LIST_SESSIONS,
    LIST_TRUST,
    LOGIN,
    LOGOUT,
    MCP_STATUS,
    NAVIGATE_TREE,
    NEW_SESSION,
    PING,
    PROGRESS,
    PROMPT,
    READ_SESSION,
    RELOAD,
    RENAME_SESSION,
    RESTORE_CHECKPOINT,
    RESUME,
    REVOKE_APPROVAL_RULE,
    REVOKE_TRUST,
    SAVE_TRUST,
    SEARCH_SESSIONS,
    SESSION_DIAGNOSTICS,
    SESSION_EVENT,
    SESSION_LIFECYCLE,
    SET_APPROVAL_POLICY,
    SET_AUTO_COMPACTION,
    SET_AUTO_RETRY,
    SET_FOLLOW_UP_MODE,
    SET_LABEL,
    SET_LIMITS,
    SET_MODEL,
    SET_SANDBOX,
    SET_SESSION_NAME,
    SET_STEERING_MODE,
    SET_THINKING_LEVEL,
    SHUTDOWN,
    STEER,
    TOOL_AUTHORIZE,
    UI_CONFIRM,
    UI_EDITOR,
    UI_INPUT,
    UI_NOTIFY,
    UI_SELECT,
    UI_SET_EDITOR_TEXT,
    UI_SET_STATUS,
    UI_SET_TITLE,
    UI_SET_WIDGET,
    ErrorCode,
)

Kind = Literal["request", "notification"]
Direction = Literal["client->server", "server->client"]
Door = Literal["queue", "outside", "probe", "process", "replace", "server"]
"""Which door of the serialized host a client request takes — one column, read by every front:

* ``queue``: takes its place in the host's FIFO at its arrival and runs there, on the session current
  then (the reads and writes of the current session; ``host.call(name, act, "queue")``);
* ``outside``: takes its place in the FIFO at its arrival, then runs outside it in the host's task
  group (a turn, a compaction, a client command: a later replacement aborts it;
  ``host.call(name, act, "outside")``);
* ``probe``: not queued, answered at its arrival in every host status (the health probe);
* ``process``: about the process rather than the current session (listings, approval rules, trust):
  waits for the startup, fails closed like every call, never queues;
* ``replace``: a replacement of the current session (queued, the host's replacement machinery);
* ``server``: served by the endpoint itself (the handshake, the orderly end, liveness)."""
SESSION_DOORS: Final[frozenset[Door]] = frozenset({"queue", "outside"})
"""The doors of ``host.call``: a session call on the session current at the call's place in the FIFO."""
Shape = type[Any] | str | None
"""A params or result type, or its name in ``rpcd.protocol.types`` (looked up when first read)."""


_HOST_ERRORS = (ErrorCode.HOST_UNAVAILABLE, ErrorCode.HOST_DISPOSED)
_REPLACE_ERRORS = (
    *_HOST_ERRORS,
    ErrorCode.REPLACEMENT_FAILED,
    ErrorCode.SESSION_FILE_NOT_FOUND,
    ErrorCode.NOT_A_SESSION,
    ErrorCode.MISSING_SESSION_CWD,
    ErrorCode.SESSION_WRITE_FAILED,
)


@attrs.frozen
class MethodSpec:
    """One method. ``params`` / ``result`` may be given as the name of a type of ``rpcd.protocol.types``
    (a str): it is looked up when first read, so the table does not import the shapes only later
    requests use (``rpcd.protocol.results``, ``rpcd.protocol.outgoing``) before they are needed."""

    name: str
    _params: Shape
    _result: Shape
    kind: Kind
    direction: Direction
    summary: str
    errors: tuple[ErrorCode, ...] = ()
    """Method-specific error codes (the generic ones apply to every request)."""
    door: Door | None = None
    """The host's door a client request takes (``None``: not a client request)."""
    session: str | None = None
    """A plain session call: the session (``SessionPort``) member the request calls with its params'
    fields as keywords, its result (if any) turned into ``result`` field by field — served by the
    fronts' one generic handler, no handler of its own."""

    @property
    def params(self) -> type[Any] | None:
        """None: a notification/request without params; ``EmptyParams``: none, ``{}`` or ``[]``."""
        return _resolve(self._params)

    @property
    def result(self) -> type[Any] | None:
        """None: the result is ``null`` (requests) or there is none (notifications)."""
        return _resolve(self._result)


def _resolve(shape: Shape) -> type[Any] | None:
    if isinstance(shape, str):
        resolved: type[Any] = getattr(t, shape)
        return resolved
    return shape


def _req(name: str, params: Shape, result: Shape, summary: str, *errors: ErrorCode, door: Door,
         session: str | None = None) -> MethodSpec:
    return MethodSpec(name, params, result, "request", "client->server", summary, errors, door, session)


def _note(name: str, params: Shape, summary: str, direction: Direction = "server->client") -> MethodSpec:
    return MethodSpec(name, params, None, "notification", direction, summary)


_BEFORE_EVENTS: Final[tuple[MethodSpec, ...]] = (
    # requests client -> daemon
    _req(INITIALIZE, t.InitializeParams, t.InitializeResult, "Handshake; must be the first request.",
         ErrorCode.ALREADY_INITIALIZED, door="server"),
    _req(SHUTDOWN, t.EmptyParams, None, "Run the final disposal; afterwards only `exit` is accepted.",
         ErrorCode.DISPOSAL_FAILED, door="server"),
    _req(PING, t.EmptyParams, None, "Liveness check; answers null.", door="server"),
    _req(NEW_SESSION, t.NewSessionParams, "ReplacementResult",
         "Replace the current session by a new one (in this or another project).", *_REPLACE_ERRORS, door="replace"),
    _req(RESUME, t.ResumeParams, "ReplacementResult", "Switch to a session file.", *_REPLACE_ERRORS,
         ErrorCode.SESSION_IN_USE, door="replace"),
    _req(FORK, t.ForkParams, "ForkResult", "Fork the current session before a user entry.",
         *_REPLACE_ERRORS, ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_NOT_SAVED, door="replace"),
    _req(CLONE, t.CloneParams, "ReplacementResult", "Clone the branch ending at an entry (default: leaf).",
         *_REPLACE_ERRORS, ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_NOT_SAVED, door="replace"),
    _req(IMPORT_JSONL, t.ImportJsonlParams, "ReplacementResult", "Import a JSONL transcript as a new session.",
         *_REPLACE_ERRORS, door="replace"),
    _req(RELOAD, t.EmptyParams, "ReplacementResult",
         "Reopen the current session file with freshly read settings, extensions, skills, prompt templates and "
         "context files (Pi's /reload).", *_REPLACE_ERRORS, ErrorCode.SESSION_BUSY, door="replace"),
    _req(DISPOSE, t.EmptyParams, None, "Final disposal of the host; later session calls fail.",
         ErrorCode.DISPOSAL_FAILED, door="server"),
    _req(GET_STATE, t.EmptyParams, t.GetStateResult, "Snapshot of the current session.", *_HOST_ERRORS, door="probe"),
    _req(GET_MESSAGES, t.EmptyParams, "GetMessagesResult", "The current context messages.", *_HOST_ERRORS,
         door="queue"),
    _req(GET_TREE, t.GetTreeParams, "GetTreeResult",
         "Raw entries, leaf and labels; with nested, Pi's tree of nodes too.", *_HOST_ERRORS, door="queue"),
    _req(LIST_SESSIONS, t.ListSessionsParams, "ListSessionsResult",
         "Session files, newest first (by last activity or creation), searchable, paged.", *_HOST_ERRORS,
         door="process"),
    _req(DELETE_SESSION, t.DeleteSessionParams, "DeleteSessionResult",
         "Move a session file (not the current one) to the user's trash.", *_HOST_ERRORS,
         ErrorCode.SESSION_FILE_NOT_FOUND, ErrorCode.NOT_A_SESSION, ErrorCode.SESSION_IN_USE,
         ErrorCode.SESSION_WRITE_FAILED, door="queue"),
    _req(RENAME_SESSION, t.RenameSessionParams, "RenameSessionResult",
         "Name any session file (appends Pi's session_info entry).", *_HOST_ERRORS,
         ErrorCode.SESSION_FILE_NOT_FOUND, ErrorCode.NOT_A_SESSION, ErrorCode.SESSION_IN_USE,
         ErrorCode.SESSION_WRITE_FAILED, door="queue"),
    _req(EXPORT_HTML, t.ExportHtmlParams, "ExportResult",
         "Export the current session as one self-contained HTML file.", *_HOST_ERRORS,
         ErrorCode.SESSION_NOT_SAVED, ErrorCode.SESSION_WRITE_FAILED, door="queue"),
    _req(EXPORT_JSONL, t.ExportJsonlParams, "ExportResult",
         "Export the current branch as a new standalone session file.", *_HOST_ERRORS,
         ErrorCode.SESSION_WRITE_FAILED, door="queue"),
    _req(PROMPT, t.PromptParams, "PromptResult",
         "Run one agent turn (or queue the text into the running one with `streamingBehavior`); events "
         "stream meanwhile.",
         *_HOST_ERRORS, ErrorCode.SESSION_BUSY, ErrorCode.PROVIDER_ERROR, ErrorCode.MODEL_NOT_FOUND,
         ErrorCode.INVALID_PARAMS, door="outside"),
    _req(ABORT, t.EmptyParams, None, "Abort the running turn; answers once idle.", *_HOST_ERRORS, door="queue",
         session="abort"),
    _req(SET_SESSION_NAME, t.SetSessionNameParams, None, "Name the current session.", *_HOST_ERRORS,
         door="queue", session="set_session_name"),
    _req(SET_APPROVAL_POLICY, t.SetApprovalPolicyParams, None,
         "Set the tool-approval policy for every later tool call of this process.", *_HOST_ERRORS, door="process"),
    _req(SET_SANDBOX, t.SetSandboxParams, None,
         "Set the sandbox (mode and/or network) of every later command of this process.", *_HOST_ERRORS,
         ErrorCode.INVALID_PARAMS, door="process"),
    _req(LIST_APPROVAL_RULES, t.ListApprovalRulesParams, "ListApprovalRulesResult",
         "The remembered approval rules (of one project, or all).", *_HOST_ERRORS, door="process"),
    _req(REVOKE_APPROVAL_RULE, t.RevokeApprovalRuleParams, "RevokeApprovalRuleResult",
         "Forget one remembered approval rule.", *_HOST_ERRORS, door="process"),
    _req(LIST_TRUST, t.EmptyParams, "ListTrustResult", "The saved project-trust decisions.", *_HOST_ERRORS,
         door="process"),
    _req(REVOKE_TRUST, t.RevokeTrustParams, "RevokeTrustResult",
         "Forget one saved project-trust decision.", *_HOST_ERRORS, door="process"),
    _req(SAVE_TRUST, t.SaveTrustParams, "SaveTrustResult",
         "Save a project-trust decision for a directory (as Pi's /trust; the current session is not reloaded).",
         *_HOST_ERRORS, door="process"),
    _req(LIST_AUTH_PROVIDERS, t.EmptyParams, "ListAuthProvidersResult",
         "The providers `login` can log in to, and what auth.json (shared with Pi) holds for each.",
         door="process"),
    _req(LOGIN, t.LoginParams, "LoginResult",
         "Log in to a provider as Pi's /login does (its OAuth flow, or an API key), asking the person through "
         "`auth/prompt` and `auth/notify`; stores the credential in auth.json.",
         ErrorCode.LOGIN_FAILED, ErrorCode.LOGIN_CANCELLED, door="process"),
    _req(LOGOUT, t.LogoutParams, "LogoutResult", "Remove a provider's stored credential from auth.json.",
         ErrorCode.LOGIN_FAILED, door="process"),
    _req(SET_MODEL, t.SetModelParams, t.ModelRef, "Switch the model (errors name close matches).", *_HOST_ERRORS,
         ErrorCode.MODEL_NOT_FOUND, ErrorCode.PROVIDER_ERROR, door="queue", session="set_model"),
    _req(GET_AVAILABLE_MODELS, t.EmptyParams, "GetAvailableModelsResult",
         "The models usable now (credentials present), in Pi's order.", *_HOST_ERRORS, door="queue"),
    _req(CYCLE_MODEL, t.CycleModelParams, "CycleModelResult",
         "Switch to the next (or previous) usable model, over enabledModels like Pi.", *_HOST_ERRORS, door="queue"),
    _req(COMPACT, t.CompactParams, "CompactionResult",
         "Summarize older history into a compaction entry (aborts a running turn first).", *_HOST_ERRORS,
         ErrorCode.COMPACTION_FAILED, ErrorCode.SESSION_WRITE_FAILED, door="outside"),
    _req(SET_AUTO_COMPACTION, t.SetAutoCompactionParams, None,
         "Turn automatic compaction on or off (for this daemon's sessions).", *_HOST_ERRORS,
         door="queue", session="set_auto_compaction"),
    _req(NAVIGATE_TREE, t.NavigateTreeParams, "NavigateTreeResult",
         "Move the leaf within the session file, optionally summarizing the branch left.", *_HOST_ERRORS,
         ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_BUSY, ErrorCode.COMPACTION_FAILED,
         ErrorCode.SESSION_WRITE_FAILED, door="outside"),
    _req(SET_LABEL, t.SetLabelParams, None, "Label an entry (no label: clear it).", *_HOST_ERRORS,
         ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_WRITE_FAILED, door="queue", session="set_label"),
    _req(GET_COMMANDS, t.EmptyParams, "GetCommandsResult",
         "Every command a prompt can invoke now: extension commands, prompt templates, skills.", *_HOST_ERRORS,
         door="queue"),
    _req(LIST_MCP_SERVERS, t.EmptyParams, "ListMcpServersResult",
         "The MCP servers the current session named: status, tools, prompts, last error.", *_HOST_ERRORS,
         door="queue", session="mcp_servers"),
    # turn control
    _req(STEER, t.QueueInputParams, None,
         "Queue input delivered after the current tool round, before the next model call.",
         *_HOST_ERRORS, ErrorCode.INVALID_PARAMS, door="queue"),
    _req(FOLLOW_UP, t.QueueInputParams, None, "Queue input delivered when the agent would otherwise stop.",
         *_HOST_ERRORS, ErrorCode.INVALID_PARAMS, door="queue"),
    _req(SET_STEERING_MODE, t.SetQueueModeParams, None, "Deliver queued steering all at once or one per turn.",
         *_HOST_ERRORS, door="queue", session="set_steering_mode"),
    _req(SET_FOLLOW_UP_MODE, t.SetQueueModeParams, None, "Deliver queued follow-ups all at once or one per stop.",
         *_HOST_ERRORS, door="queue", session="set_follow_up_mode"),
    _req(CLEAR_QUEUE, t.EmptyParams, t.QueueContents, "Drop the queued input; answers what was dropped.",
         *_HOST_ERRORS, door="queue", session="clear_queue"),
    _req(SET_THINKING_LEVEL, t.SetThinkingLevelParams, None,
         "Set the thinking level (clamped to the model); appends thinking_level_change if it changed.",
         *_HOST_ERRORS, door="queue", session="set_thinking_level"),
    _req(CYCLE_THINKING_LEVEL, t.EmptyParams, "CycleThinkingLevelResult",
         "Switch to the model's next thinking level.", *_HOST_ERRORS, door="queue", session="cycle_thinking_level"),
    _req(GET_AVAILABLE_THINKING_LEVELS, t.EmptyParams, "AvailableThinkingLevelsResult",
         "The thinking levels the current model supports.", *_HOST_ERRORS,
         door="queue", session="available_thinking_levels"),
    _req(GET_SESSION_STATS, t.EmptyParams, "SessionStatsResult",
         "Message counts, tokens, cost and context usage of the session.", *_HOST_ERRORS,
         door="queue", session="stats"),
    _req(BASH, t.BashParams, "BashResult",
         "Run a shell command in the session's cwd; its result reaches the next model call.", *_HOST_ERRORS,
         door="outside"),
    _req(ABORT_BASH, t.EmptyParams, None, "Stop the running `bash` commands.", *_HOST_ERRORS,
         door="queue", session="abort_bash"),
    _req(SET_AUTO_RETRY, t.SetAutoRetryParams, None, "Turn automatic retry of transient failures on or off.",
         *_HOST_ERRORS, door="queue", session="set_auto_retry"),
    _req(ABORT_RETRY, t.EmptyParams, None, "Cancel a retry that is waiting (the turn ends with the error).",
         *_HOST_ERRORS, door="queue", session="abort_retry"),
    _req(GET_LAST_ASSISTANT_TEXT, t.EmptyParams, "LastAssistantTextResult",
         "The text of the last assistant message.", *_HOST_ERRORS, door="queue", session="last_assistant_text"),
    _req(GET_FORK_MESSAGES, t.EmptyParams, "ForkMessagesResult", "The user messages `fork` can start before.",
         *_HOST_ERRORS, door="queue", session="fork_messages"),
    _req(GET_ENTRIES, t.GetEntriesParams, "GetEntriesResult",
         "Raw entries in append order, optionally only those after an entry id.", *_HOST_ERRORS,
         ErrorCode.INVALID_ENTRY, door="queue"),
    # file checkpoints, spending caps, full-text search
    _req(LIST_CHECKPOINTS, t.ListCheckpointsParams, "ListCheckpointsResult",
         "The session's file checkpoints (one before each run's first change), oldest first.", *_HOST_ERRORS,
         door="queue"),
    _req(RESTORE_CHECKPOINT, t.RestoreCheckpointParams, "RestoreCheckpointResult",
         "Put the files the agent changed since a checkpoint back (a diff preview with dryRun; a file "
         "someone else changed since is written only with force).", *_HOST_ERRORS, ErrorCode.INVALID_ENTRY,
         ErrorCode.SESSION_BUSY, ErrorCode.SESSION_WRITE_FAILED, door="queue"),
    _req(SET_LIMITS, t.SetLimitsParams, "SetLimitsResult",
         "Spending and token caps for this daemon's sessions, checked before every model call.", *_HOST_ERRORS,
         door="queue"),
    _req(SEARCH_SESSIONS, t.SearchSessionsParams, "SearchSessionsResult",
         "Full-text search of every stored session (Pi's picker query syntax), with snippets and entry ids.",
         *_HOST_ERRORS, ErrorCode.INVALID_PARAMS, door="process"),
    _req(READ_SESSION, t.ReadSessionParams, "ReadSessionResult",
         "Read a stored session (by file, id or unique id prefix) without switching to it.", *_HOST_ERRORS,
         ErrorCode.SESSION_FILE_NOT_FOUND, ErrorCode.NOT_A_SESSION, ErrorCode.INVALID_ENTRY, door="process"),
    _req(EXPORT_MARKDOWN, t.ExportMarkdownParams, "ExportMarkdownResult",
         "Export the current branch as readable Markdown, tool calls folded.", *_HOST_ERRORS,
         ErrorCode.SESSION_NOT_SAVED, ErrorCode.SESSION_WRITE_FAILED, door="queue"),
    # notifications client -> daemon
    _note(EXIT, None, "End the process (exit code 0 after `shutdown`).", "client->server"),
    _note(CANCEL_REQUEST, t.CancelParams, "Cancel a running request (LSP spelling).", "client->server"),
    _note(CANCEL_REQUEST_ACP, t.CancelParams, "Cancel a running request (ACP spelling).", "client->server"),
)


def _event_notifications() -> tuple[MethodSpec, ...]:
    # Their params carry the typed events (``rpcd.protocol.events``, ~55 classes): built when the
    # whole table is first read (the OpenRPC document, tests), not by the daemon's registration.
    return (
        _note(SESSION_EVENT, t.SessionEventParams, "An AgentSession event of the current session."),
        _note(SESSION_LIFECYCLE, t.SessionLifecycleParams, "session_start / session_shutdown."),
    )


_AFTER_EVENTS: Final[tuple[MethodSpec, ...]] = (
    # notifications daemon -> client
    _note(SESSION_DIAGNOSTICS, "SessionDiagnosticsParams", "Diagnostics of a replacement (redacted)."),
    _note(HOST_STATUS, "HostStatusParams", "The host status changed."),
    _note(MCP_STATUS, "McpStatusParams", "An MCP server of this process changed status."),
    _note(PROGRESS, "ProgressParams", "Work-done progress for a request's workDoneToken."),
    _note(UI_NOTIFY, "UiNotifyParams", "An extension notification for the user."),
    _note(UI_SET_STATUS, "UiSetStatusParams", "An extension's status entry (capability extensionUi.setStatus)."),
    _note(UI_SET_WIDGET, "UiSetWidgetParams", "An extension's widget lines (capability extensionUi.setWidget)."),
    _note(UI_SET_TITLE, "UiSetTitleParams", "An extension's window title (capability extensionUi.setTitle)."),
    _note(UI_SET_EDITOR_TEXT, "UiSetEditorTextParams",
          "An extension puts text in the input editor (capability extensionUi.setEditorText)."),
    # requests daemon -> client (only if the client declared the capability)
    MethodSpec(AUTHORIZE_PROJECT, "AuthorizeProjectParams", "AuthorizeProjectResult", "request",
               "server->client", "Ask whether to trust a project (capability authorizeProject)."),
    MethodSpec(UI_CONFIRM, "UiConfirmParams", "UiConfirmResult", "request", "server->client",
               "Extension yes/no dialog (capability extensionUi)."),
    MethodSpec(UI_SELECT, "UiSelectParams", "UiSelectResult", "request", "server->client",
               "Extension choice dialog (capability extensionUi)."),
    MethodSpec(UI_INPUT, "UiInputParams", "UiInputResult", "request", "server->client",
               "Extension text input (capability extensionUi)."),
    MethodSpec(UI_EDITOR, "UiEditorParams", "UiEditorResult", "request", "server->client",
               "Extension multi-line editor dialog (capability extensionUi.editor)."),
    MethodSpec(TOOL_AUTHORIZE, "ToolAuthorizeParams", "ToolAuthorizeResult", "request", "server->client",
               "May this tool call run? (capability toolApproval)"),
    MethodSpec(AUTH_PROMPT, "AuthPromptParams", "AuthPromptResult", "request", "server->client",
               "A login asks the person (capability authPrompt)."),
    _note(AUTH_NOTIFY, "AuthNotifyParams", "A login shows the person something: a URL to open, a device code "
                                           "(capability authPrompt)."),
)

if TYPE_CHECKING:
    SPECS: tuple[MethodSpec, ...]
    """Every method, in the order of the OpenRPC document."""
    METHODS: dict[str, MethodSpec]
    """Every method by name (``SPECS`` names each once: tests/wire/test_registration.py)."""


def __getattr__(name: str) -> Any:
    """``SPECS`` and ``METHODS``, built on first use (with the event notifications' params)."""
    if name not in ("SPECS", "METHODS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    specs = (*_BEFORE_EVENTS, *_event_notifications(), *_AFTER_EVENTS)
    globals().update(SPECS=specs, METHODS={spec.name: spec for spec in specs})
    return globals()[name]


def client_requests() -> list[MethodSpec]:
    """The client->server requests, in table order (no event notification is one of them)."""
    return [m for m in (*_BEFORE_EVENTS, *_AFTER_EVENTS) if m.kind == "request" and m.direction == "client->server"]


_REQUESTS: dict[str, MethodSpec] = {}


def request_spec(name: str) -> MethodSpec:
    """The client->server request ``name`` (``KeyError``: not one); no event type is built."""
    if not _REQUESTS:
        _REQUESTS.update((spec.name, spec) for spec in client_requests())
    return _REQUESTS[name]


def door_of(name: str) -> Door:
    """The host's door the request ``name`` takes (the table's column; every front reads it here)."""
    door = request_spec(name).door
    assert door is not None, name
    return door


def session_door(name: str) -> Literal["queue", "outside"]:
    """The door of the session call ``name``: one of the host's generic call (``SESSION_DOORS``)."""
    door = door_of(name)
    if door == "queue" or door == "outside":
        return door
    raise LookupError(f"{name} takes the {door!r} door, not a session call's")
