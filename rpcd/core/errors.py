"""Typed failures shared by every room below the server.

Each class has a stable ``kind`` (the ``type`` of an item in the wire's
``data.errors``) and carries the target it concerns. The server maps classes to
wire codes (``protocol.errors``); nothing here knows JSON-RPC. Messages never hold
transcript content or secrets: paths, ids and short reasons only.
"""

from __future__ import annotations

from typing import ClassVar


class RpcdError(Exception):
    """Base of every expected failure. ``kind`` is stable; ``message`` is for humans."""

    kind: ClassVar[str] = "RpcdError"

    def __init__(
        self,
        message: str,
        *,
        cwd: str | None = None,
        session_path: str | None = None,
        entry_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.cwd = cwd
        self.session_path = session_path
        self.entry_id = entry_id


# -- session files (rpcd.store) ------------------------------------------------------


class StoreError(RpcdError):
    kind = "StoreError"


class SessionFileNotFoundError(StoreError):
    """A session or import source path does not exist (Pi: ``SessionImportFileNotFoundError``)."""

    kind = "SessionFileNotFound"


class NotASessionError(StoreError):
    """A non-empty file whose first parsed line is not a session header; never overwritten."""

    kind = "NotASession"


class SessionFileTooLargeError(NotASessionError):
    """An import source over the size limit; refused before anything is copied (wire: NOT_A_SESSION)."""

    kind = "SessionFileTooLarge"


class InvalidEntryError(StoreError):
    """Unknown entry id, or ``fork`` before a non-user entry (Pi: ``Invalid entry ID for forking``)."""

    kind = "InvalidEntry"


class MissingSessionCwdError(StoreError):
    """The session's stored working directory does not exist (Pi: ``MissingSessionCwdError``)."""

    kind = "MissingSessionCwd"


class SessionNotSavedError(StoreError):
    """Fork/clone of a persisted session whose file is not written yet."""

    kind = "SessionNotSaved"


class SessionWriteError(StoreError):
    """Writing a session file failed (ENOSPC, a file where a directory must be, ...)."""

    kind = "SessionWriteError"


class SessionInUseError(StoreError):
    """The session file is in use and cannot be deleted (it is this daemon's current session)."""

    kind = "SessionInUse"


class SessionLockedError(SessionInUseError):
    """Another rpcd process holds the session file's writer lock; ``holder_pid`` names it when known."""

    kind = "SessionLocked"

    def __init__(self, message: str, *, holder_pid: int | None = None, **target: str | None) -> None:
        super().__init__(message, **target)
        self.holder_pid = holder_pid


# -- arguments -------------------------------------------------------------------------


class InvalidArgumentError(RpcdError):
    """A value the caller passed is refused by its meaning, not its type (an empty session name).

    The wire answers INVALID_PARAMS (the request was wrong, nothing failed); ``param`` names the
    argument (``name``), which the wire reports as the offending path (``$.name``).
    """

    kind = "InvalidParams"

    def __init__(self, message: str, *, param: str | None = None, **target: str | None) -> None:
        super().__init__(message, **target)
        self.param = param


# -- session runtime (rpcd.runtime) ----------------------------------------------------


class RuntimeFailure(RpcdError):
    kind = "RuntimeFailure"


class SessionBusyError(RuntimeFailure):
    """A prompt while a turn is running (never two turns at once)."""

    kind = "SessionBusy"


class SessionDisposedError(RuntimeFailure):
    """An operation on a session that was already disposed."""

    kind = "SessionDisposed"


class FactoryError(RuntimeFailure):
    """The runtime factory could not build a session for the target cwd."""

    kind = "FactoryError"


class ModelNotFoundError(RuntimeFailure):
    kind = "ModelNotFound"


class InputNotSupportedError(RuntimeFailure):
    """The current model does not take this kind of input (images); nothing was recorded."""

    kind = "InputNotSupported"


class McpServerError(RuntimeFailure):
    """An MCP server failed a request that is not a tool call (a prompt's ``prompts/get``): it is
    not running, did not answer in time, or answered with an error."""

    kind = "McpServerFailed"


class CompactionError(RuntimeFailure):
    """A compaction or branch summary did not happen: nothing to compact, the summary call failed
    (or stopped at its token cap), an extension's result was unusable. Nothing was written."""

    kind = "CompactionFailed"
    reason: str | None = None
    """The failure without rpcd's ``Compaction failed:`` prefix (what Pi's ``compact()`` throws)."""


class CompactionCancelledError(CompactionError):
    """A compaction was aborted (``abort``, a replacement) or cancelled by an extension's
    ``session_before_compact``. Nothing was written."""

    kind = "CompactionCancelled"


class ProviderError(RuntimeFailure):
    """The model provider failed (auth, rate limit after retries, transport)."""

    kind = "ProviderError"


class LoginFailedError(RuntimeFailure):
    """A login or logout did not happen (no such login, the client cannot be asked, an OAuth
    endpoint failed, auth.json could not be written); auth.json is as it was."""

    kind = "LoginFailed"


class LoginCancelledError(RuntimeFailure):
    """The person declined a login prompt (or it was withdrawn); nothing was stored."""

    kind = "LoginCancelled"


class ContextOverflowError(ProviderError):
    """The request did not fit the model's context window — the one type for this condition,
    whatever the API (``rpcd.providers.failures.context_overflow`` recognises it).

    ``reason``: ``error`` (the provider refused the request), ``silent`` (it answered, but
    reported more input tokens than the window), ``length`` (it filled the window and could
    not answer). ``provider_message`` is the provider's redacted text, if any."""

    kind = "ContextOverflow"

    def __init__(self, message: str, *, provider: str = "", model: str = "", reason: str = "error",
                 provider_message: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.reason = reason
        self.provider_message = provider_message


# -- host (rpcd.host) ------------------------------------------------------------------


class HostError(RpcdError):
    kind = "HostError"


class HostUnavailableError(HostError):
    """The host has no usable current session (terminal failure or replacement in flight)."""

    kind = "HostUnavailable"


class HostDisposedError(HostError):
    """The host was disposed; every later call fails with this."""

    kind = "HostDisposed"
