"""What ``rpcd acp`` writes — turns, tool rounds approved through ``session/request_permission``, an
image prompt, a name-less title, a fork through ``session/fork`` — opens in real Pi 0.85.0 with the same tree, leaf
and context as in our store, and Pi changes nothing in the files."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from acp import image_block, text_block

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn
from tests.pi_compat.oracle import PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file, sha256_of

pytestmark = [pytest.mark.anyio, pytest.mark.node]

IMAGE = Path(__file__).resolve().parents[1] / "fixtures" / "images" / "python.png"
PNG = base64.b64encode(IMAGE.read_bytes()).decode()


async def test_pi_reads_the_files_rpcd_acp_writes(pi_reader: PiReader, agent_dir: Path, project: Project) -> None:
    cwd = project("p", [
        {"thinking": "Writing it.", "toolCall": {"name": "write", "arguments": {"path": "a.txt", "content": "a\n"}}},
        {"text": "Written."},
        {"toolCall": {"name": "bash", "arguments": {"command": "cat a.txt"}}},
        {"text": "It says a."},
        {"text": "From the fork."},
    ])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.prompt(session_id=session, prompt=[text_block("Write a.txt")])
        await conn.prompt(session_id=session, prompt=[text_block("What is in it?"), image_block(PNG, "image/png")])
        forked = (await conn.fork_session(session_id=session, cwd=str(cwd), mcp_servers=[])).session_id
        await conn.prompt(session_id=forked, prompt=[text_block("And in the fork?")])
    # write and bash approved by the client (the fork's own host runs its faux script from the start)
    assert [p["toolCall"]["kind"] for p in editor.permissions][:2] == ["edit", "execute"]
    files = sorted((agent_dir / "sessions").rglob("*.jsonl"), key=lambda p: forked in p.name)
    assert [session in files[0].name, forked in files[1].name] == [True, True]
    digests = {path: sha256_of(path) for path in files}
    readings = pi_reader.inspect(files)
    for path, pi in zip(files, readings, strict=True):
        assert_pi_reads_as_we_do(pi, reading_of_file(path), path)
        assert pi["sha256Before"] == digests[path] == sha256_of(path)
    original, fork = readings
    asked = original["context"]["messages"][4]
    assert asked["role"] == "user" and asked["content"][1] == {"type": "image", "data": PNG, "mimeType": "image/png"}
    assert original["context"]["roles"].count("toolResult") == 2
    assert fork["header"]["parentSession"] == str(files[0])
    assert fork["context"]["roles"][: len(original["context"]["roles"])] == original["context"]["roles"]
