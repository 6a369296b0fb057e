"""Error codes and the error-data shape of the wire (docs/wire-contract.md, "Errors").

Codes are coarse and stable; the detail lives in ``data.errors`` (one item per failure,
primary first, cleanup failures after it in occurrence order). ``-32002`` is avoided on
purpose: LSP reads it as "not initialized", ACP as "resource not found".

This module is shared by the daemon and by clients, so it imports neither pygls nor
lsprotocol (a CLI must start fast).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs


class ErrorCode(enum.IntEnum):
    """Every code the daemon answers with. The docstring of each member says when."""

    PARSE_ERROR = -32700
    """Invalid JSON or invalid UTF-8 in a frame, or garbage between Content-Length frames. ``id`` is null."""
    INVALID_REQUEST = -32600
    """Valid JSON that is not a JSON-RPC 2.0 request object: not an object, a batch array, missing or wrong
    ``jsonrpc``, non-string ``method``, bad ``id`` type, ``params`` neither object nor array. ``id`` is null
    unless the object carried a usable id."""
    METHOD_NOT_FOUND = -32601
    """The request names a method the daemon does not serve (unknown notifications are ignored)."""
    INVALID_PARAMS = -32602
    """``params`` fail the strict converter; ``data.errors`` has one item per offending path."""
    INTERNAL_ERROR = -32603
    """An unexpected exception in a handler; ``data.correlationId`` is also logged to stderr."""
    REQUEST_CANCELLED = -32800
    """The request was cancelled by ``$/cancelRequest`` / ``$/cancel_request`` before it finished."""
    NOT_INITIALIZED = -32010
    """A request other than ``initialize`` arrived before ``initialize``."""
    ALREADY_INITIALIZED = -32011
    """A second ``initialize``."""
    MESSAGE_TOO_LARGE = -32012
    """A frame over the size limit; it was drained and the daemon keeps serving. ``id`` is null."""
    SHUTTING_DOWN = -32013
    """A request after ``shutdown`` (only the ``exit`` notification is accepted then)."""
    HOST_UNAVAILABLE = -32020
    """The host is terminal (``terminal: true``) or has no usable session."""
    HOST_DISPOSED = -32021
    """The host was disposed (``dispose``/``shutdown``)."""
    REPLACEMENT_FAILED = -32022
    """A replacement failed after the old session was invalidated; the host is now terminal."""
    DISPOSAL_FAILED = -32023
    """Final disposal failed."""
    SESSION_FILE_NOT_FOUND = -32030
    """A session or import source path does not exist."""
    NOT_A_SESSION = -32031
    """The file is not a session file; it was refused and left untouched."""
    INVALID_ENTRY = -32032
    """Unknown entry id, or fork before a non-user entry."""
    MISSING_SESSION_CWD = -32033
    """The session's stored working directory does not exist."""
    SESSION_NOT_SAVED = -32034
    """Fork/clone before the session's first write."""
    SESSION_WRITE_FAILED = -32035
    """Writing a session file failed (disk trouble)."""
    SESSION_BUSY = -32040
    """A prompt while a turn is running."""
    MODEL_NOT_FOUND = -32041
    """The requested model is unknown."""
    PROVIDER_ERROR = -32042
    """The model provider failed (auth, rate limit after retries, transport)."""


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
    ErrorCode.SESSION_BUSY: "Session busy",
    ErrorCode.MODEL_NOT_FOUND: "Model not found",
    ErrorCode.PROVIDER_ERROR: "Provider error",
}


@attrs.frozen
class ErrorItem:
    """One failure: ``errors[0]`` is the primary, later items are cleanup failures in occurrence order."""

    type: str
    """Stable kind (``rpcd.errors.RpcdError.kind``, ``InvalidParams``, ``ParseError``, ``Internal``, ...)."""
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

    @classmethod
    def from_error(cls, error: Any) -> RpcError:
        """Build from a wire ``error`` object (a dict); tolerant of missing members."""
        if not isinstance(error, dict):
            return cls(int(ErrorCode.INTERNAL_ERROR), "malformed error object", error)
        code = error.get("code")
        message = error.get("message")
        return cls(
            code if isinstance(code, int) and not isinstance(code, bool) else int(ErrorCode.INTERNAL_ERROR),
            message if isinstance(message, str) else "",
            error.get("data"),
        )

    @property
    def name(self) -> str:
        try:
            return ErrorCode(self.code).name
        except ValueError:
            return "UNKNOWN"
