"""Undo of the agent's file changes through both fronts (JSON-RPC ``listCheckpoints`` /
``restoreCheckpoint`` and ACP's ``_rpcd/listCheckpoints`` / ``_rpcd/restoreCheckpoint``), the same
scenario and the same answers: the run's checkpoint listed with its files, a preview that writes
nothing, a restore that keeps the file the person changed since, then ``force`` for that one file;
and the branch as Markdown (``exportMarkdown`` / ``_rpcd/exportMarkdown``) with the calls folded."""

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
from tests.driver import Daemon

pytestmark = pytest.mark.anyio

STEPS = [
    {"toolCalls": [{"name": "write", "arguments": {"path": "a.txt", "content": "agent a\n"}, "id": "w1"},
                   {"name": "write", "arguments": {"path": "b.txt", "content": "agent b\n"}, "id": "w2"}]},
    {"text": "changed both"},
]


class Front(Protocol):
    async def prompt(self, text: str) -> None: ...
    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...


class JsonRpcFront:
    def __init__(self, daemon: Daemon) -> None:
        self.d = daemon

    async def prompt(self, text: str) -> None:
        assert await anyio.to_thread.run_sync(self.d.call, "prompt", {"text": text}) == {"stopReason": "stop"}

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await anyio.to_thread.run_sync(self.d.call, method, params)
        return result


class AcpFront:
    def __init__(self, conn: Any, session_id: str) -> None:
        self.conn, self.session_id = conn, session_id

    async def prompt(self, text: str) -> None:
        answer = await self.conn.prompt(session_id=self.session_id, prompt=[text_block(text)])
        assert answer.stop_reason == "end_turn"

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self.conn.ext_method(f"rpcd/{method}", {"sessionId": self.session_id, **params})
        return result


@asynccontextmanager
async def front(kind: str, tmp_path: Path) -> AsyncIterator[tuple[Front, Path]]:
    agent = tmp_path / "agent"
    agent.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("original a\n")
    (project / "b.txt").write_text("original b\n")
    (agent / "replies.json").write_text(json.dumps(STEPS))
    (agent / "settings.json").write_text(json.dumps({"fauxScript": str(agent / "replies.json")}))
    if kind == "json-rpc":
        with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
            await anyio.to_thread.run_sync(d.initialize)
            yield JsonRpcFront(d), project
        return
    async with spawn(Editor(), agent) as (conn, _):
        created = await conn.new_session(cwd=str(project), mcp_servers=[])
        yield AcpFront(conn, created.session_id), project


def _files(answer: dict[str, Any]) -> list[tuple[str, str, str | None, bool]]:
    return sorted((Path(f["path"]).name, f["action"], f.get("conflict"), f["applied"]) for f in answer["files"])


@pytest.mark.parametrize("kind", ["json-rpc", "acp"])
async def test_both_fronts_list_preview_and_restore_alike(kind: str, tmp_path: Path) -> None:
    async with front(kind, tmp_path) as (f, project):
        await f.prompt("change both files")
        listing = await f.call("listCheckpoints", {"files": True})
        [checkpoint] = listing["checkpoints"]
        assert listing["undoEntryId"] == checkpoint["entryId"]
        assert (checkpoint["kind"], checkpoint["prompt"], checkpoint["finished"]) == \
            ("files", "change both files", True)
        assert sorted(Path(p).name for p in checkpoint["changedFiles"]) == ["a.txt", "b.txt"]

        (project / "b.txt").write_text("the person's b\n")
        preview = await f.call("restoreCheckpoint", {"entryId": checkpoint["entryId"], "dryRun": True})
        assert preview["dryRun"] is True and _files(preview) == [
            ("a.txt", "restore", None, False), ("b.txt", "restore", "changed since the agent's last change", False)]
        assert "-agent a\n+original a\n" in next(x["diff"] for x in preview["files"] if x["path"].endswith("a.txt"))
        assert (project / "a.txt").read_text() == "agent a\n"  # a preview writes nothing

        restored = await f.call("restoreCheckpoint", {"entryId": checkpoint["entryId"]})
        assert _files(restored) == [
            ("a.txt", "restore", None, True), ("b.txt", "restore", "changed since the agent's last change", False)]
        assert (project / "a.txt").read_text() == "original a\n"
        assert (project / "b.txt").read_text() == "the person's b\n"

        forced = await f.call("restoreCheckpoint", {"entryId": checkpoint["entryId"], "force": True,
                                                    "files": [str(project / "b.txt")]})
        assert [(name, applied) for name, _, _, applied in _files(forced)] == [("b.txt", True)]
        assert (project / "b.txt").read_text() == "original b\n"
        assert isinstance(forced["restoreEntryId"], str)
        after = await f.call("listCheckpoints", {})
        assert [c["reason"] for c in after["checkpoints"]] == ["run", "restore", "restore"]

        markdown = (await f.call("exportMarkdown", {"inline": True}))["markdown"]
        assert markdown.startswith("# change both files\n")
        assert markdown.count("<summary>🔧 write") == 2 and "changed both" in markdown
        assert markdown.count("_📸 Checkpoint (") == 3  # the run's and the two restores'
        assert f"`{checkpoint['checkpointId']}`_" in markdown
