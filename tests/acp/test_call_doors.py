"""The ACP front takes the method table's doors (issue 28 item 2): its model and thinking-level
options, its model list, its commands and its replay are the same host calls through the same doors
as the JSON-RPC front's ``setModel``, ``setThinkingLevel``, ``getAvailableModels``, ... — never a direct
session access around the FIFO."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from rpcd.acp.extensions import METHODS, PREFIX
from rpcd.host.host import CallDoor, SerializedHost
from rpcd.protocol.methods import door_of
from tests.acp.conftest import Project
from tests.acp.peer import Editor
from tests.acp.test_isolation_in_process import front

pytestmark = pytest.mark.anyio


async def test_config_options_and_replay_go_through_the_tables_doors(agent_dir: Path, project: Project,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str]] = []
    real = SerializedHost.call

    def spy(self: SerializedHost, operation: str, act: Any, door: CallDoor = "queue", **kw: Any) -> Any:
        seen.append((operation, door))
        return real(self, operation, act, door, **kw)

    monkeypatch.setattr(SerializedHost, "call", spy)
    cwd = project("p")
    async with front(agent_dir, Editor()) as (client, _):
        session = (await client.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        options = await client.set_config_option(config_id="model", session_id=session, value="faux/faux-1")
        assert {o.id for o in options.config_options} >= {"mode", "model"}
        await client.load_session(cwd=str(cwd), session_id=session, mcp_servers=[])
    names = {name for name, _ in seen}
    assert {"getAvailableModels", "getAvailableThinkingLevels", "setModel", "getCommands", "getMessages"} <= names
    assert all(door == door_of(name) for name, door in seen), seen


async def test_rpcds_own_methods_over_acp_take_the_doors_of_their_rows(agent_dir: Path, project: Project,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``_rpcd/<method>`` extension method is one host call named after its row, through its door."""
    seen: list[tuple[str, str]] = []
    real = SerializedHost.call

    def spy(self: SerializedHost, operation: str, act: Any, door: CallDoor = "queue", **kw: Any) -> Any:
        seen.append((operation, door))
        return real(self, operation, act, door, **kw)

    monkeypatch.setattr(SerializedHost, "call", spy)
    cwd = project("p")
    answered: dict[str, bool] = {}
    async with front(agent_dir, Editor()) as (client, _):
        session = (await client.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        for name in METHODS:
            seen.clear()
            params: dict[str, Any] = {"sessionId": session}
            if name == "restoreCheckpoint":
                params["entryId"] = "no-such-entry"
            try:
                await client.ext_method(f"{PREFIX}{name}", params)
                answered[name] = True
            except RequestError:
                answered[name] = False  # no such checkpoint: the call was made all the same
            assert seen == [(name, door_of(name))], name
    assert answered == {"listCheckpoints": True, "restoreCheckpoint": False, "setLimits": True, "exportMarkdown": True}
