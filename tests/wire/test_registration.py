"""The daemon serves exactly the method table: registration reads it (rpcd.wire.handlers.register),
so a method is added in one place and a handler that the table does not name cannot exist."""

from __future__ import annotations

import inspect

import pytest

from rpcd.daemon.app import Daemon, parse_options
from rpcd.protocol.methods import SPECS, client_requests
from rpcd.wire.approvals import ApprovalMethods
from rpcd.wire.handlers import SessionMethods, handler_name
from rpcd.wire.trust import TrustMethods


@pytest.mark.anyio
async def test_every_client_request_of_the_table_is_served_and_nothing_else(tmp_path: object) -> None:
    daemon = Daemon(parse_options(["--in-memory", "--agent-dir", str(tmp_path)]))
    assert set(daemon.server.method_names) == {spec.name for spec in client_requests()}


@pytest.mark.parametrize("handlers", [SessionMethods, ApprovalMethods, TrustMethods])
def test_every_public_handler_is_named_after_a_method_of_the_table(handlers: type) -> None:
    served = {handler_name(spec.name) for spec in client_requests()}
    public = {name for name, _ in inspect.getmembers(handlers, inspect.isfunction) if not name.startswith("_")}
    assert public <= served, sorted(public - served)


def test_handler_names_are_the_snake_case_of_the_method() -> None:
    assert [handler_name(m) for m in ("newSession", "importJsonl", "getState", "cycleModel", "prompt")] == [
        "new_session", "import_jsonl", "get_state", "cycle_model", "prompt",
    ]


def test_the_method_table_names_every_method_once() -> None:
    names = [spec.name for spec in SPECS]
    assert sorted({n for n in names if names.count(n) > 1}) == []


class _Twice:
    """A handler for ``setSessionName``, a plain session call the generic handler serves."""

    def set_session_name(self, params: object) -> None: ...


class _Again:
    def get_messages(self, params: object) -> None: ...


@pytest.mark.parametrize(("row", "extra", "clash"), [("setSessionName", _Twice, "plain session call"),
                                                    ("getMessages", _Again, "2 handlers")])
def test_two_handlers_of_one_row_are_refused_at_registration(tmp_path: object, monkeypatch: pytest.MonkeyPatch,
                                                             row: str, extra: type, clash: str) -> None:
    """Two places serving one row (a plain session call with a handler of its own, or two handler
    objects naming the same method) fail at start-up instead of one silently winning."""
    from rpcd.wire import handlers as module
    from rpcd.wire.server import create_server

    daemon = Daemon(parse_options(["--in-memory", "--agent-dir", str(tmp_path)]))
    sessions = SessionMethods(daemon.host, daemon.pump, daemon.library)
    monkeypatch.setattr(module, "client_requests", lambda: [s for s in client_requests() if s.name == row])
    module.register(create_server(), sessions)  # alone, it serves the row
    with pytest.raises(LookupError, match=clash):
        module.register(create_server(), sessions, extra())
