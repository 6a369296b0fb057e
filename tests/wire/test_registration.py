"""The daemon serves exactly the method table: registration reads it (rpcd.wire.handlers.register),
so a method is added in one place and a handler that the table does not name cannot exist."""

from __future__ import annotations

import inspect

import pytest

from rpcd.daemon.app import Daemon, parse_options
from rpcd.protocol.methods import client_requests
from rpcd.wire.approvals import ApprovalMethods
from rpcd.wire.handlers import SessionMethods, handler_name


@pytest.mark.anyio
async def test_every_client_request_of_the_table_is_served_and_nothing_else(tmp_path: object) -> None:
    daemon = Daemon(parse_options(["--in-memory", "--agent-dir", str(tmp_path)]))
    assert set(daemon.server.method_names) == {spec.name for spec in client_requests()}


@pytest.mark.parametrize("handlers", [SessionMethods, ApprovalMethods])
def test_every_public_handler_is_named_after_a_method_of_the_table(handlers: type) -> None:
    served = {handler_name(spec.name) for spec in client_requests()}
    public = {name for name, _ in inspect.getmembers(handlers, inspect.isfunction) if not name.startswith("_")}
    assert public <= served, sorted(public - served)


def test_handler_names_are_the_snake_case_of_the_method() -> None:
    assert [handler_name(m) for m in ("newSession", "importJsonl", "getState", "cycleModel", "prompt")] == [
        "new_session", "import_jsonl", "get_state", "cycle_model", "prompt",
    ]
