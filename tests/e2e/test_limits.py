"""Spending caps through both fronts (JSON-RPC and ACP, the same scenario): a cap reached mid-run
stops the turn before the next model call — with its own stop reason and an event, nothing half
written (the session file ends with the tool result, the next scripted reply is never asked for) —
a prompt at the cap records nothing, and raising the cap (``setLimits`` / ``_rpcd/setLimits``)
lets the conversation go on."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.to_thread
import pytest
from acp import text_block

from tests.acp.peer import Editor, spawn
from tests.driver import Daemon, events_of

pytestmark = pytest.mark.anyio

STEPS = [
    {"toolCall": {"name": "bash", "arguments": {"command": "echo tool ran"}, "id": "c1"}, "cost": 1.0},
    {"text": "the reply after the cap was raised", "cost": 0.5},
]


class Front(Protocol):
    async def prompt(self, text: str) -> str: ...
    async def set_limits(self, **caps: float) -> dict[str, Any] | None: ...
    def limit_events(self) -> list[dict[str, Any]]: ...
    def session_file(self) -> Path: ...


class JsonRpcFront:
    def __init__(self, daemon: Daemon) -> None:
        self.d = daemon

    async def prompt(self, text: str) -> str:
        result = await anyio.to_thread.run_sync(self.d.call, "prompt", {"text": text})
        return str(result["stopReason"])

    async def set_limits(self, **caps: float) -> dict[str, Any] | None:
        result = await anyio.to_thread.run_sync(self.d.call, "setLimits", caps)
        limits: dict[str, Any] | None = result["limits"]
        state = await anyio.to_thread.run_sync(self.d.call, "getState")
        assert state.get("limits") == limits
        return limits

    def limit_events(self) -> list[dict[str, Any]]:
        return [p["event"] for p in events_of(self.d.log, "session/event") if p["event"]["type"] == "limit_reached"]

    def session_file(self) -> Path:
        return Path(self.d.call("getState")["sessionFile"])


class AcpFront:
    def __init__(self, conn: Any, editor: Editor, session_id: str, agent_dir: Path) -> None:
        self.conn, self.editor, self.session_id, self.agent_dir = conn, editor, session_id, agent_dir

    async def prompt(self, text: str) -> str:
        answer = await self.conn.prompt(session_id=self.session_id, prompt=[text_block(text)])
        meta = answer.field_meta or {}
        if answer.stop_reason == "max_turn_requests" and meta.get("rpcd/stopReason") == "limit":
            return "limit"
        return "stop" if answer.stop_reason == "end_turn" else str(answer.stop_reason)

    async def set_limits(self, **caps: float) -> dict[str, Any] | None:
        result = await self.conn.ext_method("rpcd/setLimits", {"sessionId": self.session_id, **caps})
        limits: dict[str, Any] | None = result["limits"]
        return limits

    def limit_events(self) -> list[dict[str, Any]]:
        return [u["_meta"]["rpcd/limitReached"] for u in self.editor.of(self.session_id, "agent_message_chunk")
                if "rpcd/limitReached" in u.get("_meta", {})]

    def session_file(self) -> Path:
        (path,) = (self.agent_dir / "sessions").rglob("*.jsonl")
        return path


@asynccontextmanager
async def front(kind: str, tmp_path: Path) -> AsyncIterator[Front]:
    agent = tmp_path / "agent"
    agent.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "replies.json").write_text(json.dumps(STEPS))
    (agent / "settings.json").write_text(json.dumps({"fauxScript": "replies.json", "limits": {"maxCost": 1.0}}))
    if kind == "json-rpc":
        with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
            await anyio.to_thread.run_sync(d.initialize)
            yield JsonRpcFront(d)
        return
    editor = Editor()
    async with spawn(editor, agent) as (conn, _):
        created = await conn.new_session(cwd=str(project), mcp_servers=[])
        yield AcpFront(conn, editor, created.session_id, agent)


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("kind", ["json-rpc", "acp"])
async def test_a_cap_reached_mid_run_stops_before_the_next_model_call(kind: str, tmp_path: Path) -> None:
    async with front(kind, tmp_path) as f:
        assert await f.prompt("run the tool") == "limit"
        [event] = f.limit_events()
        assert event == {"type": "limit_reached", "limit": "maxCost", "scope": "session", "used": 1.0, "max": 1.0}
        entries = _entries(f.session_file())
        messages = [e["message"] for e in entries if e["type"] == "message"]
        assert [m["role"] for m in messages] == ["user", "assistant", "toolResult"]  # no reply was asked for
        assert messages[-1]["content"][0]["text"] == "tool ran\n"

        # at the cap: a prompt is not recorded at all
        assert await f.prompt("and now?") == "limit"
        assert _entries(f.session_file()) == entries
        assert len(f.limit_events()) == 2

        limits = await f.set_limits(maxCost=5.0)
        assert limits == {"cost": 1.0, "tokens": limits["tokens"] if limits else 0, "maxCost": 5.0}
        assert await f.prompt("go on") == "stop"
        replies = [e["message"] for e in _entries(f.session_file()) if e["type"] == "message"]
        assert replies[-1]["content"] == [{"type": "text", "text": "the reply after the cap was raised"}]
        assert (await f.set_limits())["cost"] == 1.5  # {}: the settings' cap again (1.0), now over it


async def test_a_token_cap_and_a_daily_cap_count_what_was_spent(tmp_path: Path) -> None:
    async with front("json-rpc", tmp_path) as f:
        assert isinstance(f, JsonRpcFront)
        state = await anyio.to_thread.run_sync(f.d.call, "getState")
        assert state["limits"] == {"cost": 0.0, "tokens": 0, "maxCost": 1.0}
        limits = await f.set_limits(maxCost=100.0, maxTokensPerDay=1)
        assert limits is not None and limits["tokensToday"] == 0 and limits["maxTokensPerDay"] == 1
        assert await f.prompt("one call only") == "limit"
        [event] = f.limit_events()
        assert event["limit"] == "maxTokensPerDay" and event["scope"] == "day" and event["used"] >= 1
        ledger = list((tmp_path / "agent" / "rpcd" / "usage").glob("*.jsonl"))
        assert len(ledger) == 1 and ledger[0].stat().st_mode & 0o777 == 0o600


async def test_a_session_s_spend_counts_after_a_restart_and_in_its_forks(tmp_path: Path) -> None:
    """The spend is counted from the session file: a fork keeps what its branch cost, and a daemon
    started again on a capped session (``--session``) stops before the first model call."""
    async with front("json-rpc", tmp_path) as f:
        assert isinstance(f, JsonRpcFront)
        assert await f.prompt("run the tool") == "limit"
        await f.set_limits(maxCost=5.0)
        assert await f.prompt("go on") == "stop"
        assert (await f.set_limits())["cost"] == 1.5  # {}: the settings' cap (1.0) again
        messages = await anyio.to_thread.run_sync(f.d.call, "getForkMessages")
        go_on = next(m["entryId"] for m in messages["messages"] if m["text"] == "go on")
        await anyio.to_thread.run_sync(lambda: f.d.call("fork", {"entryId": go_on}))
        state = await anyio.to_thread.run_sync(f.d.call, "getState")
        assert state["limits"]["cost"] == 1.0  # the fork's branch: the tool round, not the later reply
        assert await f.prompt("in the fork") == "limit"
        forked = f.session_file()
    entries = _entries(forked)
    agent, project = tmp_path / "agent", tmp_path / "project"
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--session", str(forked)) as d:
        d.initialize()
        limits = d.call("getState")["limits"]
        assert (limits["cost"], limits["maxCost"], limits["reached"]) == (1.0, 1.0, "maxCost")
        assert d.call("prompt", {"text": "after a restart"}) == {"stopReason": "limit"}
        [event] = [p["event"] for p in events_of(d.log, "session/event") if p["event"]["type"] == "limit_reached"]
        assert event["used"] == 1.0
    assert _entries(forked) == entries  # nothing recorded at the cap
