"""Error codes and the error-data shape of the wire (docs/wire-contract.md, "Errors").

Codes are coarse and stable; the detail lives in ``data.errors`` (one item per failure,
primary first, cleanup failures after it in occurrence order). The codes themselves are
``rpcd.protocol.names.ErrorCode`` (stdlib only, shared with the client).

Imports neither pygls nor lsprotocol.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from rpcd.protocol.names import ErrorCode, error_name

__all__ = [
    "CODE_BY_KIND",
    "DEFAULT_MESSAGES",
    "WHEN",
    "ErrorCode",
    "ErrorData",
    "ErrorItem",
    "ErrorObject",
    "ErrorTarget",
    "RpcError",
]


WHEN: dict[ErrorCode, str] = {
    ErrorCode.PARSE_ERROR: (
        "Invalid JSON or invalid UTF-8 in a frame, or garbage between Content-Length frames. ``id`` is null."
    ),
    ErrorCode.INVALID_REQUEST: (
        "Valid JSON that is not a JSON-RPC 2.0 request object: not an object, a batch array, missing or wrong "
        "``jsonrpc``, non-string ``method``, bad ``id`` type, ``params`` neither object nor array, or the ``id`` "
        "of a request the daemon itself is still waiting on. ``id`` is null unless the object carried a usable id."
    ),
    ErrorCode.METHOD_NOT_FOUND: (
        "The request names a method the daemon does not serve (unknown notifications are ignored)."
    ),
    ErrorCode.INVALID_PARAMS: (
        "``params`` fail the strict converter, or a value is refused by its meaning (an empty session name); "
        "``data.errors`` has one item per offending path."
    ),
    ErrorCode.INTERNAL_ERROR: (
        "An unexpected exception in a handler; ``data.correlationId`` is also logged to stderr."
    ),
    ErrorCode.REQUEST_CANCELLED: (
        "The request was cancelled by ``$/cancelRequest`` / ``$/cancel_request`` before it finished."
    ),
    ErrorCode.NOT_INITIALIZED: "A request other than ``initialize`` arrived before ``initialize``.",
    ErrorCode.ALREADY_INITIALIZED: "A second ``initialize``.",
    ErrorCode.MESSAGE_TOO_LARGE: (
        "A frame over the size limit; it was drained and the daemon keeps serving. ``id`` is null."
    ),
    ErrorCode.SHUTTING_DOWN: "A request after ``shutdown`` (only the ``exit`` notification is accepted then).",
    ErrorCode.HOST_UNAVAILABLE: "The host is terminal (``terminal: true``) or has no usable session.",
    ErrorCode.HOST_DISPOSED: "The host was disposed (``dispose``/``shutdown``).",
    ErrorCode.REPLACEMENT_FAILED: (
        "A replacement failed after the old session was invalidated; the host is now terminal."
    ),
    ErrorCode.DISPOSAL_FAILED: "Final disposal failed.",
    ErrorCode.SESSION_FILE_NOT_FOUND: "A session or import source path does not exist.",
    ErrorCode.NOT_A_SESSION: (
        "The file is not a session file (or not a regular file: a FIFO, a device; or, for ``importJsonl``, over "
        "the size limit: ``SessionFileTooLarge``); it was refused and left untouched."
    ),
    ErrorCode.INVALID_ENTRY: "Unknown entry id, or fork before a non-user entry.",
    ErrorCode.MISSING_SESSION_CWD: "The session's stored working directory does not exist.",
    ErrorCode.SESSION_NOT_SAVED: "Fork/clone before the session's first write.",
    ErrorCode.SESSION_WRITE_FAILED: "Writing a session file failed (disk trouble).",
    ErrorCode.SESSION_IN_USE: (
        "The session file is in use: another rpcd process holds its writer lock (``SessionLocked``, its pid "
        "in the message; ``resume``/``renameSession``/``deleteSession`` of that file), or it is this daemon's "
        "current session (``deleteSession``: ``SessionInUse``). Nothing was read, written or moved."
    ),
    ErrorCode.SESSION_BUSY: (
        "A prompt while a turn is running (without ``streamingBehavior``); a reload while a turn or a "
        "compaction runs."
    ),
    ErrorCode.MODEL_NOT_FOUND: "The requested model is unknown.",
    ErrorCode.PROVIDER_ERROR: "The model provider failed (auth, rate limit after retries, transport).",
    ErrorCode.INPUT_NOT_SUPPORTED: "The current model does not take this input (images); nothing was recorded.",
    ErrorCode.COMPACTION_FAILED: (
        "A compaction or branch summary did not happen (``CompactionFailed``: nothing to compact, already "
        "compacted, the summary call failed or hit its token cap; ``CompactionCancelled``: aborted, or an "
        "extension cancelled it). Nothing was written; the session is as it was."
    ),
    ErrorCode.MCP_SERVER_FAILED: (
        "An MCP server failed a request made for the caller (``McpServerFailed``: a prompt command's "
        "``prompts/get``): it is not running, did not answer in time, or answered an error. Nothing was "
        "recorded. (A failing MCP *tool* is a tool error result, never this code.)"
    ),
    ErrorCode.LOGIN_FAILED: (
        "A ``login`` / ``logout`` did not happen: the provider has no such login, the client cannot answer "
        "``auth/prompt``, an OAuth endpoint refused or failed, or ``auth.json`` could not be written "
        "(``LoginFailed``). ``auth.json`` is as it was; the message names the provider and the step, never a token."
    ),
    ErrorCode.LOGIN_CANCELLED: (
        "The person declined a ``auth/prompt`` (or the request was withdrawn, or timed out); nothing was stored."
    ),
}
"""When each code is used (the OpenRPC document and docs/protocol.md carry the same text)."""


DEFAULT_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.PARSE_ERROR: "Parse error",
    ErrorCode.INVALID_REQUEST: "Invalid request",
    ErrorCode.METHOD_NOT_FOUND: "Method not found",
    ErrorCode.INVALID_PARAMS: "Invalid params",
    ErrorCode.INTERNAL_ERROR: "Internal error",
    ErrorCode.REQUEST_CANCELLED: "Request cancelled",
    ErrorCode.NOT_INITIALIZED: "Not initialized",
    ErrorCode.ALREADY_INITIALIZED: "Already initialized",
    ErrorCode.MESSAGE_TOO_LARGE: "Message too large",
    ErrorCode.SHUTTING_DOWN: "Shutting down",
    ErrorCode.HOST_UNAVAILABLE: "Host unavailable",
    ErrorCode.HOST_DISPOSED: "Host disposed",
    ErrorCode.REPLACEMENT_FAILED: "Replacement failed",
    ErrorCode.DISPOSAL_FAILED: "Disposal failed",
    ErrorCode.SESSION_FILE_NOT_FOUND: "Session file not found",
    ErrorCode.NOT_A_SESSION: "Not a session file",
    ErrorCode.INVALID_ENTRY: "Invalid entry",
    ErrorCode.MISSING_SESSION_CWD: "Missing session cwd",
    ErrorCode.SESSION_NOT_SAVED: "Session not saved",
    ErrorCode.SESSION_WRITE_FAILED: "Session write failed",
    ErrorCode.SESSION_IN_USE: "Session in use",
    ErrorCode.SESSION_BUSY: "Session busy",
    ErrorCode.MODEL_NOT_FOUND: "Model not found",
    ErrorCode.PROVIDER_ERROR: "Provider error",
    ErrorCode.INPUT_NOT_SUPPORTED: "Input not supported",
    ErrorCode.COMPACTION_FAILED: "Compaction failed",
    ErrorCode.MCP_SERVER_FAILED: "MCP server failed",
    ErrorCode.LOGIN_FAILED: "Login failed",
    ErrorCode.LOGIN_CANCELLED: "Login cancelled",
}


CODE_BY_KIND: Final[dict[str, ErrorCode]] = {
    "SessionFileNotFound": ErrorCode.SESSION_FILE_NOT_FOUND,
    "NotASession": ErrorCode.NOT_A_SESSION,
    "InvalidEntry": ErrorCode.INVALID_ENTRY,
    "MissingSessionCwd": ErrorCode.MISSING_SESSION_CWD,
    "SessionNotSaved": ErrorCode.SESSION_NOT_SAVED,
    "SessionWriteError": ErrorCode.SESSION_WRITE_FAILED,
    "SessionInUse": ErrorCode.SESSION_IN_USE,
    "SessionBusy": ErrorCode.SESSION_BUSY,
    "ModelNotFound": ErrorCode.MODEL_NOT_FOUND,
    "InputNotSupported": ErrorCode.INPUT_NOT_SUPPORTED,
    "CompactionFailed": ErrorCode.COMPACTION_FAILED,
    "ProviderError": ErrorCode.PROVIDER_ERROR,
    "LoginFailed": ErrorCode.LOGIN_FAILED,
    "LoginCancelled": ErrorCode.LOGIN_CANCELLED,
    "HostDisposed": ErrorCode.HOST_DISPOSED,
    "HostUnavailable": ErrorCode.HOST_UNAVAILABLE,
    "SessionDisposed": ErrorCode.HOST_UNAVAILABLE,
    "FactoryError": ErrorCode.REPLACEMENT_FAILED,
    "InvalidParams": ErrorCode.INVALID_PARAMS,
    "McpServerFailed": ErrorCode.MCP_SERVER_FAILED,
}
"""A failure's stable ``kind`` (``rpcd.core.errors.RpcdError.kind``, the ``type`` of its error item)
-> its code. A kind not listed here takes the code of the nearest listed kind among its bases."""


@attrs.frozen
class ErrorItem:
    """One failure: ``errors[0]`` is the primary, later items are cleanup failures in occurrence order."""

    type: str
    """Stable kind (``rpcd.core.errors.RpcdError.kind``, ``InvalidParams``, ``ParseError``, ``Internal``, ...)."""
    message: str
    """Short human text; never a traceback, a secret, or transcript content."""
    code: str | None = None
    """Optional finer machine code (e.g. an errno name)."""
    path: str | None = None
    """For ``InvalidParams``: the offending location, JSONPath-like (``$.entryId``, ``$.options[2]``)."""


@attrs.frozen
class ErrorTarget:
    """What the failed operation was about."""

    cwd: str | None = None
    session_path: str | None = None
    entry_id: str | None = None


@attrs.frozen
class ErrorData:
    """``error.data`` of every error response the daemon sends."""

    operation: str
    """The wire method (``fork``, ``resume``, ...) or ``transport`` for framing/parse failures."""
    phase: str
    """Where it failed: a host phase in the seed's words, or ``framing``/``parse``/``validation``/``handshake``."""
    target: ErrorTarget
    terminal: bool
    """True if the host is now unusable until restart."""
    errors: list[ErrorItem]
    correlation_id: str | None = None
    """Set for internal errors; the same id is logged to stderr."""


@attrs.frozen
class ErrorObject:
    """The JSON-RPC ``error`` member."""

    code: int
    message: str
    data: ErrorData | None = None


class RpcError(Exception):
    """A received error response, for Python callers that speak the wire (tests, tools).

    ``data`` is kept as plain JSON: a newer daemon may add fields an older client does not know.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data

    @property
    def name(self) -> str:
        return error_name(self.code, "UNKNOWN")
