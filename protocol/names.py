"""The names of the wire, stdlib only: every method name, the error codes and their names.

This is the one owner of these facts. ``rpcd.protocol.methods`` (the method table with the
params/result types), ``rpcd.protocol.errors`` (the error shapes), the daemon and the bundled
clients all import them from here; the client imports nothing else of ``rpcd.protocol``, so it
starts without attrs/cattrs/pygls.
"""

from __future__ import annotations

import enum
from typing import Final

PROTOCOL_VERSION: Final = 1
"""The wire protocol version this package speaks (``initialize.protocolVersion``)."""

# -- requests client -> daemon ---------------------------------------------------------------------
INITIALIZE: Final = "initialize"
SHUTDOWN: Final = "shutdown"
PING: Final = "ping"
NEW_SESSION: Final = "newSession"
RESUME: Final = "resume"
RELOAD: Final = "reload"
FORK: Final = "fork"
CLONE: Final = "clone"
IMPORT_JSONL: Final = "importJsonl"
DISPOSE: Final = "dispose"
GET_STATE: Final = "getState"
GET_MESSAGES: Final = "getMessages"
GET_TREE: Final = "getTree"
LIST_SESSIONS: Final = "listSessions"
PROMPT: Final = "prompt"
ABORT: Final = "abort"
SET_SESSION_NAME: Final = "setSessionName"
SET_MODEL: Final = "setModel"
DELETE_SESSION: Final = "deleteSession"
RENAME_SESSION: Final = "renameSession"
EXPORT_HTML: Final = "exportHtml"
EXPORT_JSONL: Final = "exportJsonl"
GET_COMMANDS: Final = "getCommands"
LIST_MCP_SERVERS: Final = "listMcpServers"
SET_APPROVAL_POLICY: Final = "setApprovalPolicy"
SET_SANDBOX: Final = "setSandbox"
LIST_APPROVAL_RULES: Final = "listApprovalRules"
REVOKE_APPROVAL_RULE: Final = "revokeApprovalRule"
LIST_TRUST: Final = "listTrust"
REVOKE_TRUST: Final = "revokeTrust"
SAVE_TRUST: Final = "saveTrust"
LIST_AUTH_PROVIDERS: Final = "listAuthProviders"
LOGIN: Final = "login"
LOGOUT: Final = "logout"
GET_AVAILABLE_MODELS: Final = "getAvailableModels"
CYCLE_MODEL: Final = "cycleModel"
COMPACT: Final = "compact"
SET_AUTO_COMPACTION: Final = "setAutoCompaction"
NAVIGATE_TREE: Final = "navigateTree"
SET_LABEL: Final = "setLabel"
# turn control (Pi's rpc commands, camelCase)
STEER: Final = "steer"
FOLLOW_UP: Final = "followUp"
SET_STEERING_MODE: Final = "setSteeringMode"
SET_FOLLOW_UP_MODE: Final = "setFollowUpMode"
CLEAR_QUEUE: Final = "clearQueue"
SET_THINKING_LEVEL: Final = "setThinkingLevel"
CYCLE_THINKING_LEVEL: Final = "cycleThinkingLevel"
GET_AVAILABLE_THINKING_LEVELS: Final = "getAvailableThinkingLevels"
GET_SESSION_STATS: Final = "getSessionStats"
BASH: Final = "bash"
ABORT_BASH: Final = "abortBash"
SET_AUTO_RETRY: Final = "setAutoRetry"
ABORT_RETRY: Final = "abortRetry"
GET_LAST_ASSISTANT_TEXT: Final = "getLastAssistantText"
GET_FORK_MESSAGES: Final = "getForkMessages"
GET_ENTRIES: Final = "getEntries"
# file checkpoints, spending caps, full-text search (rpcd's own: no peer has them)
LIST_CHECKPOINTS: Final = "listCheckpoints"
RESTORE_CHECKPOINT: Final = "restoreCheckpoint"
SET_LIMITS: Final = "setLimits"
SEARCH_SESSIONS: Final = "searchSessions"
READ_SESSION: Final = "readSession"
EXPORT_MARKDOWN: Final = "exportMarkdown"

# -- notifications client -> daemon ----------------------------------------------------------------
EXIT: Final = "exit"
CANCEL_REQUEST: Final = "$/cancelRequest"
CANCEL_REQUEST_ACP: Final = "$/cancel_request"
CANCEL_METHODS: Final = (CANCEL_REQUEST, CANCEL_REQUEST_ACP)

# -- notifications daemon -> client ----------------------------------------------------------------
SESSION_EVENT: Final = "session/event"
SESSION_LIFECYCLE: Final = "session/lifecycle"
SESSION_DIAGNOSTICS: Final = "session/diagnostics"
HOST_STATUS: Final = "host/status"
MCP_STATUS: Final = "mcp/status"
PROGRESS: Final = "$/progress"
UI_NOTIFY: Final = "ui/notify"
UI_SET_STATUS: Final = "ui/setStatus"
UI_SET_WIDGET: Final = "ui/setWidget"
UI_SET_TITLE: Final = "ui/setTitle"
UI_SET_EDITOR_TEXT: Final = "ui/setEditorText"
AUTH_NOTIFY: Final = "auth/notify"
SESSION_SCOPED: Final = frozenset({SESSION_EVENT, SESSION_LIFECYCLE})
"""Notifications that carry ``sessionId``/``generation``/``seq``."""

# -- requests daemon -> client (only if the client declared the capability) ------------------------
AUTHORIZE_PROJECT: Final = "host/authorizeProject"
UI_CONFIRM: Final = "ui/confirm"
UI_SELECT: Final = "ui/select"
UI_INPUT: Final = "ui/input"
UI_EDITOR: Final = "ui/editor"
TOOL_AUTHORIZE: Final = "tool/authorize"
AUTH_PROMPT: Final = "auth/prompt"

# -- capability keys -------------------------------------------------------------------------------
UI_EDITOR_FEATURE: Final = "editor"
"""The ``extensionUi`` key that declares the ``ui/editor`` dialog."""
UI_NOTIFICATION_FEATURES: Final = ("setStatus", "setWidget", "setTitle", "setEditorText")
"""The ``extensionUi`` keys that opt into the ``ui/set*`` notifications."""
UI_FEATURES: Final = (UI_EDITOR_FEATURE, *UI_NOTIFICATION_FEATURES)
"""Every ``extensionUi`` key beyond confirm/select/input/notify (those need no declaration)."""


class ErrorCode(enum.IntEnum):
    """Every code the daemon answers with (``rpcd.protocol.errors.WHEN`` says when each is used).

    ``-32002`` is avoided on purpose: LSP reads it as "not initialized", ACP as "resource not found".
    """

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    NOT_INITIALIZED = -32010
    ALREADY_INITIALIZED = -32011
    MESSAGE_TOO_LARGE = -32012
    SHUTTING_DOWN = -32013
    HOST_UNAVAILABLE = -32020
    HOST_DISPOSED = -32021
    REPLACEMENT_FAILED = -32022
    DISPOSAL_FAILED = -32023
    SESSION_FILE_NOT_FOUND = -32030
    NOT_A_SESSION = -32031
    INVALID_ENTRY = -32032
    MISSING_SESSION_CWD = -32033
    SESSION_NOT_SAVED = -32034
    SESSION_WRITE_FAILED = -32035
    SESSION_IN_USE = -32036
    SESSION_BUSY = -32040
    MODEL_NOT_FOUND = -32041
    PROVIDER_ERROR = -32042
    INPUT_NOT_SUPPORTED = -32043
    COMPACTION_FAILED = -32044
    MCP_SERVER_FAILED = -32045
    LOGIN_FAILED = -32046
    LOGIN_CANCELLED = -32047


def error_name(code: int, unknown: str = "ERROR") -> str:
    """``HOST_UNAVAILABLE`` for -32020; ``unknown`` for a code this version does not know."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return unknown
