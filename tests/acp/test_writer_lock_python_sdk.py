"""``rpcd acp`` keeps the one-writer rule of the session files (issue 29 item 7): a session another rpcd
process holds — here a real JSON-RPC daemon that resumed it — is neither loaded nor deleted (the file
is left as it is), and once that process let go, ``session/delete`` moves it to the user's trash (it
used to be unlinked for good, and the lock ignored)."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import anyio
import pytest
from acp.exceptions import RequestError

from rpcd.store import SessionManager
from tests.acp.conftest import Project
from tests.acp.peer import Editor, request, spawn
from tests.driver import Daemon


def _written_session(cwd: Path, agent_dir: Path) -> tuple[str, str]:
    manager = SessionManager.create(str(cwd), None, agent_dir=str(agent_dir))
    manager.append_message({"role": "user", "content": "held elsewhere", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2,
                            "stopReason": "stop", "provider": "faux", "model": "faux-1", "api": "faux"})
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return path, manager.get_session_id()


def test_a_session_another_process_holds_is_not_loaded_nor_deleted_and_a_free_one_goes_to_the_trash(
        agent_dir: Path, project: Project, tmp_path: Path) -> None:
    cwd = project("p")
    path, session_id = _written_session(cwd, agent_dir)
    xdg = tmp_path / "xdg"
    refusals: list[str] = []
    holder = Daemon("--agent-dir", str(agent_dir), "--resume", path)
    try:
        holder.initialize()
        assert holder.call("getState")["sessionFile"] == path
        content = Path(path).read_bytes()  # (as the holder left it: resuming records the thinking level)

        async def editor() -> None:
            async with spawn(Editor(), agent_dir, env={"XDG_DATA_HOME": str(xdg)}) as (conn, _):
                with pytest.raises(RequestError) as load:
                    await conn.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[])
                refusals.append(load.value.data["errors"][0]["type"])
                with pytest.raises(RequestError) as delete:
                    await request(conn, "session/delete", {"sessionId": session_id})
                refusals.append(delete.value.data["errors"][0]["type"])
                refusals.append("unchanged" if await anyio.Path(path).read_bytes() == content else "changed")
                holder.close()  # the other process lets go
                await request(conn, "session/delete", {"sessionId": session_id})

        anyio.run(editor)
    finally:
        holder.close()
    assert refusals == ["SessionLocked", "SessionLocked", "unchanged"]
    assert not Path(path).exists()
    trashed = xdg / "Trash" / "files" / Path(path).name
    assert trashed.read_bytes() == content
    info = (xdg / "Trash" / "info" / f"{Path(path).name}.trashinfo").read_text().splitlines()
    assert info[0] == "[Trash Info]" and urllib.parse.unquote(info[1].removeprefix("Path=")) == path
