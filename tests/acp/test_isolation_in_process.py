"""Sessions are independent: a session whose factory fails, or whose host fails terminally, answers
with its own flat errors while the others keep working. The front runs in this process (the real
``RpcdAgent`` behind the real SDK connection) with the official Python client on the other end of the
SDK's in-memory transport; the only fake is the injected fault."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import text_block
from acp._transport import memory_transport_pair
from acp.client.connection import ClientSideConnection
from acp.exceptions import RequestError

from rpcd.acp.agent import RpcdAgent
from rpcd.acp.config import AcpConfig
from rpcd.acp.connection import AcpConnection
from rpcd.core.errors import FactoryError
from rpcd.core.values import ExtensionBindings
from rpcd.runtime import factory as factory_module
from rpcd.runtime.runtime import RuntimeFactory
from rpcd.runtime.session import AgentSession
from rpcd.sessions.spec import ProcessSpec
from tests.acp.conftest import Project
from tests.acp.peer import Editor

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def front(agent_dir: Path, editor: Editor) -> AsyncIterator[tuple[ClientSideConnection, RpcdAgent]]:
    agent_side, client_side = memory_transport_pair()
    async with anyio.create_task_group() as group:
        agent = RpcdAgent(AcpConfig(ProcessSpec(agent_dir=str(agent_dir))), group)
        conn = AcpConnection(agent, agent_side)
        agent.attach(conn)
        async with agent.services.serving():  # the process services (the MCP pool), as rpcd acp runs them
            group.start_soon(conn.serve)
            client = ClientSideConnection(editor, client_side, use_unstable_protocol=True)
            try:
                await client.initialize(protocol_version=1, client_capabilities=editor.capabilities)
                yield client, agent
            finally:
                await agent.close_all()
                await client.close()
                await conn.close()
        group.cancel_scope.cancel()


def _failing_for(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = factory_module.make_default_factory

    def make(*args: Any, **kwargs: Any) -> RuntimeFactory:
        factory = real(*args, **kwargs)

        async def failing(**call: Any) -> Any:
            if call["cwd"] == str(cwd):
                raise FactoryError("injected: the factory cannot build this project's session", cwd=str(cwd))
            return await factory(**call)

        return failing

    monkeypatch.setattr(factory_module, "make_default_factory", make)  # the session service composes with it


async def test_a_failing_factory_fails_its_session_only(agent_dir: Path, project: Project,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = project("good"), project("bad")
    _failing_for(bad, monkeypatch)
    editor = Editor()
    async with front(agent_dir, editor) as (client, agent):
        first = await client.new_session(cwd=str(good), mcp_servers=[])
        with pytest.raises(RequestError) as failed:
            await client.new_session(cwd=str(bad), mcp_servers=[])
        data: Mapping[str, Any] = failed.value.data
        assert failed.value.code == -32022  # REPLACEMENT_FAILED: the daemon's code for a factory failure
        assert data["operation"] == "session/new"
        assert data["errors"] == [{"type": "FactoryError",
                                   "message": "injected: the factory cannot build this project's session"}]
        assert list(agent.sessions) == [first.session_id]
        answer = await client.prompt(session_id=first.session_id, prompt=[text_block("still fine?")])
        assert answer.stop_reason == "end_turn"
        assert editor.text_of(first.session_id) == "echo: still fine?"


async def test_a_host_whose_binding_fails_is_terminal_and_the_other_session_goes_on(
        agent_dir: Path, project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = project("one"), project("two")
    real_bind = AgentSession.bind_extensions

    async def bind(self: AgentSession, bindings: ExtensionBindings) -> None:
        if self.cwd == str(two):
            raise OSError(5, "Input/output error")
        await real_bind(self, bindings)

    monkeypatch.setattr(AgentSession, "bind_extensions", bind)
    editor = Editor()
    async with front(agent_dir, editor) as (client, agent):
        a = (await client.new_session(cwd=str(one), mcp_servers=[])).session_id
        turn = client.prompt(session_id=a, prompt=[text_block("a long one")])
        with pytest.raises(RequestError) as failed:
            await client.new_session(cwd=str(two), mcp_servers=[])
        data = failed.value.data
        assert data["terminal"] is True and data["phase"] == "initial session binding"
        assert [(e["type"], e.get("code")) for e in data["errors"]] == [("OSError", "EIO")]
        assert (await turn).stop_reason == "end_turn"
        assert list(agent.sessions) == [a]
        assert (await client.prompt(session_id=a, prompt=[text_block("and now?")])).stop_reason == "end_turn"
