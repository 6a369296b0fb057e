"""rpcd's failures as ACP error responses: the SDK's ``RequestError`` carrying rpcd's flat ``data``.

Codes and the flat ``{operation, phase, target, terminal, errors}`` come from the one mapping the
JSON-RPC daemon uses (``rpcd.wire.errors.to_error``: a terminal failure, a busy session, a missing
file, a provider refusal, our own bugs with a correlation id in the log, every string redacted).
ACP's own codes are the SDK's: ``-32002`` resource not found (an unknown ``sessionId``), ``-32000``
authentication required. ``operation`` names the ACP method (``session/prompt``, …).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from acp.exceptions import RequestError

from rpcd.protocol.errors import DEFAULT_MESSAGES, ErrorCode, ErrorData, ErrorItem, ErrorObject, ErrorTarget
from rpcd.wire.errors import to_error, to_wire_dict

__all__ = [
    "auth_required",
    "invalid_params",
    "provider_failure",
    "request_error",
    "session_not_found",
    "to_request_error",
]


def _error(code: int, message: str, data: ErrorData) -> RequestError:
    plain = to_wire_dict(ErrorObject(code, message, data))
    return RequestError(int(plain["code"]), str(plain["message"]), plain.get("data"))


def _data(operation: str, phase: str, items: Sequence[ErrorItem], *, cwd: str | None = None,
          session_path: str | None = None, terminal: bool = False) -> ErrorData:
    return ErrorData(operation, phase, ErrorTarget(cwd, session_path), terminal, list(items))


def to_request_error(exc: BaseException, operation: str) -> RequestError:
    """``exc`` (a host failure, a flat group, anything unexpected) as the error of ``operation``
    (the ACP method, also where the host's own context names its call: ``prompt``, ``setModel``)."""
    plain = to_wire_dict(to_error(exc, operation=operation))
    data = plain.get("data")
    if isinstance(data, dict):
        data["operation"] = operation
    return RequestError(int(plain["code"]), str(plain["message"]), data)


def request_error(code: ErrorCode, operation: str, kind: str, message: str, *, cwd: str | None = None,
                  session_path: str | None = None) -> RequestError:
    """One of rpcd's codes with one error item."""
    return _error(int(code), message, _data(operation, "request", [ErrorItem(kind, message)], cwd=cwd,
                                            session_path=session_path))


def invalid_params(operation: str, items: Sequence[Mapping[str, str]]) -> RequestError:
    """``-32602`` naming each offending path (``$.cwd``: "must be an absolute path")."""
    errors = [ErrorItem(item.get("type", "InvalidParams"), item["message"], path=item.get("path")) for item in items]
    return _error(int(ErrorCode.INVALID_PARAMS), DEFAULT_MESSAGES[ErrorCode.INVALID_PARAMS],
                  _data(operation, "validation", errors))


def session_not_found(operation: str, session_id: str) -> RequestError:
    """ACP's ``-32002``: no session with this id (neither live here nor in the session store)."""
    template = RequestError.resource_not_found()
    item = ErrorItem("SessionNotFound", f"No session with id {session_id}")
    return _error(template.code, str(template), _data(operation, "request", [item]))


def auth_required(operation: str, message: str) -> RequestError:
    """ACP's ``-32000``: the selected provider has no usable credentials (``message`` names where to put one)."""
    template = RequestError.auth_required()
    return _error(template.code, str(template), _data(operation, "request", [ErrorItem("AuthRequired", message)]))


def provider_failure(operation: str, message: str, *, cwd: str | None, session_path: str | None) -> RequestError:
    """A turn that ended in the provider's error (Pi's ``stopReason: "error"``): rpcd's PROVIDER_ERROR
    with the assistant's ``errorMessage`` (already redacted by the agent loop) as ``errors[0]``."""
    return _error(int(ErrorCode.PROVIDER_ERROR), message or DEFAULT_MESSAGES[ErrorCode.PROVIDER_ERROR],
                  _data(operation, "turn", [ErrorItem("ProviderError", message or "the provider failed")], cwd=cwd,
                        session_path=session_path))
