"""Exception -> wire error mapping: context first, then the primary's class, never a traceback."""

from __future__ import annotations

import logging
import traceback

import pytest

from rpcd.core import errors as e
from rpcd.host.failures import FailureContext, attach_context
from rpcd.protocol.converter import unstructure
from rpcd.protocol.errors import ErrorCode
from rpcd.wire.errors import to_error, to_wire_dict


def test_terminal_replacement_failure_is_replacement_failed_whatever_the_primary() -> None:
    exc = attach_context(
        e.SessionWriteError("disk full"),
        FailureContext("resume", "replacement persistence", session_path="/s.jsonl", terminal=True),
    )
    error = to_error(exc, operation="resume")
    assert error.code == ErrorCode.REPLACEMENT_FAILED
    assert error.data is not None and error.data.terminal and error.data.target.session_path == "/s.jsonl"


def test_terminal_disposal_failure_is_disposal_failed() -> None:
    exc = attach_context(
        e.RuntimeFailure("dispose failed"), FailureContext("dispose", "final session runtime disposal", terminal=True)
    )
    assert to_error(exc, operation="dispose").code == ErrorCode.DISPOSAL_FAILED


def test_flat_group_keeps_primary_first_and_cleanup_in_order() -> None:
    group = ExceptionGroup(
        "x", [e.InvalidEntryError("no entry", entry_id="abc"), e.SessionWriteError("w1"), ValueError("cleanup bug")]
    )
    error = to_error(group, operation="fork")
    assert error.code == ErrorCode.INVALID_ENTRY
    assert error.data is not None
    assert [i.type for i in error.data.errors] == ["InvalidEntry", "SessionWriteError", "ValueError"]
    assert error.data.target.entry_id == "abc"
    assert error.data.correlation_id is not None  # an unexpected cleanup failure is logged under an id


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (e.SessionFileNotFoundError("x"), ErrorCode.SESSION_FILE_NOT_FOUND),
        (e.NotASessionError("x"), ErrorCode.NOT_A_SESSION),
        (e.MissingSessionCwdError("x"), ErrorCode.MISSING_SESSION_CWD),
        (e.SessionNotSavedError("x"), ErrorCode.SESSION_NOT_SAVED),
        (e.SessionBusyError("x"), ErrorCode.SESSION_BUSY),
        (e.ModelNotFoundError("x"), ErrorCode.MODEL_NOT_FOUND),
        (e.ProviderError("x"), ErrorCode.PROVIDER_ERROR),
        (e.HostUnavailableError("x"), ErrorCode.HOST_UNAVAILABLE),
        (e.HostDisposedError("x"), ErrorCode.HOST_DISPOSED),
        (KeyError("k"), ErrorCode.INTERNAL_ERROR),
    ],
)
def test_primary_class_decides_the_code_without_context(exc: BaseException, code: ErrorCode) -> None:
    assert to_error(exc, operation="op").code == code


def test_unexpected_exception_is_logged_with_the_correlation_id_and_hidden_on_the_wire(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="rpcd.core.errors"):
        error = to_error(RuntimeError("transcript: my private text"), operation="prompt")
    wire = str(to_wire_dict(error))
    assert error.code == ErrorCode.INTERNAL_ERROR and "private text" not in wire and "Traceback" not in wire
    assert error.data is not None and error.data.correlation_id is not None
    assert any(getattr(r, "correlationId", None) == error.data.correlation_id for r in caplog.records)


def test_error_data_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    error = to_error(e.ProviderError("401 from provider for key sk-abcdefghijklmnopqrstu"), operation="prompt")
    assert "sk-abcdefghij" not in str(to_wire_dict(error))
    assert unstructure(error)["data"]["errors"][0]["type"] == "ProviderError"


def test_unexpected_cleanup_failure_behind_a_typed_primary_is_logged_under_the_correlation_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    group = ExceptionGroup("fork failed", [e.SessionWriteError("disk full"), ZeroDivisionError("cleanup")])
    with caplog.at_level(logging.ERROR, logger="rpcd.core.errors"):
        error = to_error(group, operation="fork")
    assert error.data is not None and error.data.correlation_id is not None
    assert error.data.correlation_id in error.data.errors[1].message
    logged = [r for r in caplog.records if getattr(r, "correlationId", None) == error.data.correlation_id]
    assert logged and logged[0].exc_info is not None
    assert "ZeroDivisionError" in "".join(traceback.format_exception(logged[0].exc_info[1]))
