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
    LIST_CHECKPOINTS,
    LIST_SESSIONS,
    LIST_TRUST,
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


def _req(name: str, params: Shape, result: Shape, summary: str, *errors: ErrorCode) -> MethodSpec:
    return MethodSpec(name, params, result, "request", "client->server", summary, errors)


def _note(name: str, params: Shape, summary: str, direction: Direction = "server->client") -> MethodSpec:
    return MethodSpec(name, params, None, "notification", direction, summary)


_BEFORE_EVENTS: Final[tuple[MethodSpec, ...]] = (
    # requests client -> daemon
    _req(INITIALIZE, t.InitializeParams, t.InitializeResult, "Handshake; must be the first request.",
         ErrorCode.ALREADY_INITIALIZED),
    _req(SHUTDOWN, t.EmptyParams, None, "Run the final disposal; afterwards only `exit` is accepted.",
         ErrorCode.DISPOSAL_FAILED),
    _req(PING, t.EmptyParams, None, "Liveness check; answers null."),
    _req(NEW_SESSION, t.NewSessionParams, "ReplacementResult",
         "Replace the current session by a new one (in this or another project).", *_REPLACE_ERRORS),
    _req(RESUME, t.ResumeParams, "ReplacementResult", "Switch to a session file.", *_REPLACE_ERRORS,
         ErrorCode.SESSION_IN_USE),
    _req(FORK, t.ForkParams, "ForkResult", "Fork the current session before a user entry.",
         *_REPLACE_ERRORS, ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_NOT_SAVED),
    _req(CLONE, t.CloneParams, "ReplacementResult", "Clone the branch ending at an entry (default: leaf).",
         *_REPLACE_ERRORS, ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_NOT_SAVED),
    _req(IMPORT_JSONL, t.ImportJsonlParams, "ReplacementResult", "Import a JSONL transcript as a new session.",
         *_REPLACE_ERRORS),
    _req(RELOAD, t.EmptyParams, "ReplacementResult",
         "Reopen the current session file with freshly read settings, extensions, skills, prompt templates and "
         "context files (Pi's /reload).", *_REPLACE_ERRORS, ErrorCode.SESSION_BUSY),
    _req(DISPOSE, t.EmptyParams, None, "Final disposal of the host; later session calls fail.",
         ErrorCode.DISPOSAL_FAILED),
    _req(GET_STATE, t.EmptyParams, t.GetStateResult, "Snapshot of the current session.", *_HOST_ERRORS),
    _req(GET_MESSAGES, t.EmptyParams, "GetMessagesResult", "The current context messages.", *_HOST_ERRORS),
    _req(GET_TREE, t.GetTreeParams, "GetTreeResult",
         "Raw entries, leaf and labels; with nested, Pi's tree of nodes too.", *_HOST_ERRORS),
    _req(LIST_SESSIONS, t.ListSessionsParams, "ListSessionsResult",
         "Session files, newest first (by last activity or creation), searchable, paged.", *_HOST_ERRORS),
    _req(DELETE_SESSION, t.DeleteSessionParams, "DeleteSessionResult",
         "Move a session file (not the current one) to the user's trash.", *_HOST_ERRORS,
         ErrorCode.SESSION_FILE_NOT_FOUND, ErrorCode.NOT_A_SESSION, ErrorCode.SESSION_IN_USE,
         ErrorCode.SESSION_WRITE_FAILED),
    _req(RENAME_SESSION, t.RenameSessionParams, "RenameSessionResult",
         "Name any session file (appends Pi's session_info entry).", *_HOST_ERRORS,
         ErrorCode.SESSION_FILE_NOT_FOUND, ErrorCode.NOT_A_SESSION, ErrorCode.SESSION_IN_USE,
         ErrorCode.SESSION_WRITE_FAILED),
    _req(EXPORT_HTML, t.ExportHtmlParams, "ExportResult",
         "Export the current session as one self-contained HTML file.", *_HOST_ERRORS,
         ErrorCode.SESSION_NOT_SAVED, ErrorCode.SESSION_WRITE_FAILED),
    _req(EXPORT_JSONL, t.ExportJsonlParams, "ExportResult",
         "Export the current branch as a new standalone session file.", *_HOST_ERRORS,
         ErrorCode.SESSION_WRITE_FAILED),
    _req(PROMPT, t.PromptParams, "PromptResult",
         "Run one agent turn (or queue the text into the running one with `streamingBehavior`); events "
         "stream meanwhile.",
         *_HOST_ERRORS, ErrorCode.SESSION_BUSY, ErrorCode.PROVIDER_ERROR, ErrorCode.MODEL_NOT_FOUND,
         ErrorCode.INVALID_PARAMS),
    _req(ABORT, t.EmptyParams, None, "Abort the running turn; answers once idle.", *_HOST_ERRORS),
    _req(SET_SESSION_NAME, t.SetSessionNameParams, None, "Name the current session.", *_HOST_ERRORS),
    _req(SET_APPROVAL_POLICY, t.SetApprovalPolicyParams, None,
         "Set the tool-approval policy for every later tool call of this process.", *_HOST_ERRORS),
    _req(SET_SANDBOX, t.SetSandboxParams, None,
         "Set the sandbox (mode and/or network) of every later command of this process.", *_HOST_ERRORS,
         ErrorCode.INVALID_PARAMS),
    _req(LIST_APPROVAL_RULES, t.ListApprovalRulesParams, "ListApprovalRulesResult",
         "The remembered approval rules (of one project, or all).", *_HOST_ERRORS),
    _req(REVOKE_APPROVAL_RULE, t.RevokeApprovalRuleParams, "RevokeApprovalRuleResult",
         "Forget one remembered approval rule.", *_HOST_ERRORS),
    _req(LIST_TRUST, t.EmptyParams, "ListTrustResult", "The saved project-trust decisions.", *_HOST_ERRORS),
    _req(REVOKE_TRUST, t.RevokeTrustParams, "RevokeTrustResult",
         "Forget one saved project-trust decision.", *_HOST_ERRORS),
    _req(SAVE_TRUST, t.SaveTrustParams, "SaveTrustResult",
         "Save a project-trust decision for a directory (as Pi's /trust; the current session is not reloaded).",
         *_HOST_ERRORS),
    _req(SET_MODEL, t.SetModelParams, t.ModelRef, "Switch the model (errors name close matches).", *_HOST_ERRORS,
         ErrorCode.MODEL_NOT_FOUND, ErrorCode.PROVIDER_ERROR),
    _req(GET_AVAILABLE_MODELS, t.EmptyParams, "GetAvailableModelsResult",
         "The models usable now (credentials present), in Pi's order.", *_HOST_ERRORS),
    _req(CYCLE_MODEL, t.CycleModelParams, "CycleModelResult",
         "Switch to the next (or previous) usable model, over enabledModels like Pi.", *_HOST_ERRORS),
    _req(COMPACT, t.CompactParams, "CompactionResult",
         "Summarize older history into a compaction entry (aborts a running turn first).", *_HOST_ERRORS,
         ErrorCode.COMPACTION_FAILED, ErrorCode.SESSION_WRITE_FAILED),
    _req(SET_AUTO_COMPACTION, t.SetAutoCompactionParams, None,
         "Turn automatic compaction on or off (for this daemon's sessions).", *_HOST_ERRORS),
    _req(NAVIGATE_TREE, t.NavigateTreeParams, "NavigateTreeResult",
         "Move the leaf within the session file, optionally summarizing the branch left.", *_HOST_ERRORS,
         ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_BUSY, ErrorCode.COMPACTION_FAILED,
         ErrorCode.SESSION_WRITE_FAILED),
    _req(SET_LABEL, t.SetLabelParams, None, "Label an entry (no label: clear it).", *_HOST_ERRORS,
         ErrorCode.INVALID_ENTRY, ErrorCode.SESSION_WRITE_FAILED),
    _req(GET_COMMANDS, t.EmptyParams, "GetCommandsResult",
         "Every command a prompt can invoke now: extension commands, prompt templates, skills.", *_HOST_ERRORS),
    # turn control
    _req(STEER, t.QueueInputParams, None,
         "Queue input delivered after the current tool round, before the next model call.",
         *_HOST_ERRORS, ErrorCode.INVALID_PARAMS),
    _req(FOLLOW_UP, t.QueueInputParams, None, "Queue input delivered when the agent would otherwise stop.",
         *_HOST_ERRORS, ErrorCode.INVALID_PARAMS),
    _req(SET_STEERING_MODE, t.SetQueueModeParams, None, "Deliver queued steering all at once or one per turn.",
         *_HOST_ERRORS),
    _req(SET_FOLLOW_UP_MODE, t.SetQueueModeParams, None, "Deliver queued follow-ups all at once or one per stop.",
         *_HOST_ERRORS),
    _req(CLEAR_QUEUE, t.EmptyParams, t.QueueContents, "Drop the queued input; answers what was dropped.",
         *_HOST_ERRORS),
    _req(SET_THINKING_LEVEL, t.SetThinkingLevelParams, None,
         "Set the thinking level (clamped to the model); appends thinking_level_change if it changed.",
         *_HOST_ERRORS),
    _req(CYCLE_THINKING_LEVEL, t.EmptyParams, "CycleThinkingLevelResult",
         "Switch to the model's next thinking level.", *_HOST_ERRORS),
    _req(GET_AVAILABLE_THINKING_LEVELS, t.EmptyParams, "AvailableThinkingLevelsResult",
         "The thinking levels the current model supports.", *_HOST_ERRORS),
    _req(GET_SESSION_STATS, t.EmptyParams, "SessionStatsResult",
         "Message counts, tokens, cost and context usage of the session.", *_HOST_ERRORS),
    _req(BASH, t.BashParams, "BashResult",
         "Run a shell command in the session's cwd; its result reaches the next model call.", *_HOST_ERRORS),
    _req(ABORT_BASH, t.EmptyParams, None, "Stop the running `bash` commands.", *_HOST_ERRORS),
    _req(SET_AUTO_RETRY, t.SetAutoRetryParams, None, "Turn automatic retry of transient failures on or off.",
         *_HOST_ERRORS),
    _req(ABORT_RETRY, t.EmptyParams, None, "Cancel a retry that is waiting (the turn ends with the error).",
         *_HOST_ERRORS),
    _req(GET_LAST_ASSISTANT_TEXT, t.EmptyParams, "LastAssistantTextResult",
         "The text of the last assistant message.", *_HOST_ERRORS),
    _req(GET_FORK_MESSAGES, t.EmptyParams, "ForkMessagesResult", "The user messages `fork` can start before.",
         *_HOST_ERRORS),
    _req(GET_ENTRIES, t.GetEntriesParams, "GetEntriesResult",
         "Raw entries in append order, optionally only those after an entry id.", *_HOST_ERRORS,
         ErrorCode.INVALID_ENTRY),
    # file checkpoints, spending caps, full-text search
    _req(LIST_CHECKPOINTS, t.ListCheckpointsParams, "ListCheckpointsResult",
         "The session's file checkpoints (one before each run's first change), oldest first.", *_HOST_ERRORS),
    _req(RESTORE_CHECKPOINT, t.RestoreCheckpointParams, "RestoreCheckpointResult",
         "Put the files the agent changed since a checkpoint back (a diff preview with dryRun; a file "
         "someone else changed since is written only with force).", *_HOST_ERRORS, ErrorCode.INVALID_ENTRY,
         ErrorCode.SESSION_BUSY, ErrorCode.SESSION_WRITE_FAILED),
    _req(SET_LIMITS, t.SetLimitsParams, "SetLimitsResult",
         "Spending and token caps for this daemon's sessions, checked before every model call.", *_HOST_ERRORS),
    _req(SEARCH_SESSIONS, t.SearchSessionsParams, "SearchSessionsResult",
         "Full-text search of every stored session (Pi's picker query syntax), with snippets and entry ids.",
         *_HOST_ERRORS, ErrorCode.INVALID_PARAMS),
    _req(READ_SESSION, t.ReadSessionParams, "ReadSessionResult",
         "Read a stored session (by file, id or unique id prefix) without switching to it.", *_HOST_ERRORS,
         ErrorCode.SESSION_FILE_NOT_FOUND, ErrorCode.NOT_A_SESSION, ErrorCode.INVALID_ENTRY),
    _req(EXPORT_MARKDOWN, t.ExportMarkdownParams, "ExportMarkdownResult",
         "Export the current branch as readable Markdown, tool calls folded.", *_HOST_ERRORS,
         ErrorCode.SESSION_NOT_SAVED, ErrorCode.SESSION_WRITE_FAILED),
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
