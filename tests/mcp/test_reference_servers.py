"""The npm reference servers through the pool and the seam: ``server-filesystem`` (read-only and
writing tools, a failing call) and ``server-everything`` (prompts as commands, resources, progress,
elicitation, structured content) — over stdio, streamable HTTP and SSE."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from rpcd.mcp.config import ServerConfig
from rpcd.mcp.pool import McpPool
from rpcd.mcp.session import SessionMcp
from rpcd.tools.base import AbortSignal
from rpcd.tools.seam import ToolOutcome, ToolSeam
from tests.mcp.npm_servers import NpmServers

pytestmark = pytest.mark.anyio


def _text(outcome: ToolOutcome) -> str:
    return "\n".join(block.get("text", "") for block in outcome.content)


async def _call(mcp: SessionMcp, name: str, args: dict[str, Any], updates: list[Any] | None = None) -> ToolOutcome:
    return await ToolSeam(mcp.tools()).run("c1", name, args, AbortSignal(),
                                           on_update=updates.append if updates is not None else None)


def everything(npm_servers: NpmServers, name: str = "everything") -> ServerConfig:
    return ServerConfig(name=name, transport="stdio", command=npm_servers.node,
                        args=(npm_servers.everything, "stdio"), source="test")


async def test_filesystem_server_reads_writes_and_fails_as_tool_results(pool: McpPool, npm_servers: NpmServers,
                                                                         tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    config = ServerConfig(name="fs", transport="stdio", command=npm_servers.node,
                          args=(npm_servers.filesystem, str(tmp_path)), source="test")
    mcp = await SessionMcp.open(pool, [config])
    assert mcp.diagnostics() == []
    profiles = mcp.profiles()
    assert profiles["mcp__fs__read_text_file"].read_only is True
    assert profiles["mcp__fs__write_file"].read_only is False
    read = await _call(mcp, "mcp__fs__read_text_file", {"path": str(tmp_path / "notes.txt")})
    assert not read.is_error and "second line" in _text(read)
    wrote = await _call(mcp, "mcp__fs__write_file", {"path": str(tmp_path / "new.txt"), "content": "made by mcp"})
    assert not wrote.is_error
    assert (tmp_path / "new.txt").read_text() == "made by mcp"
    outside = await _call(mcp, "mcp__fs__read_text_file", {"path": "/etc/hostname"})
    assert outside.is_error and "outside allowed directories" in _text(outside).lower()
    mcp.release()


class ScriptedUi:
    """The person at the UI: answers each dialog from a script (what a client's ui/* answers would be)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str, Sequence[str] | None]] = []

    def _answer(self, kind: str, title: str, options: Sequence[str] | None = None) -> Any:
        self.asked.append((kind, title, options))
        for key, value in self.answers.items():
            if key in title:
                return value
        if kind == "select" and options:
            return options[0]
        return "" if kind == "input" else None

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        answer: str | None = self._answer("select", title, options)
        return answer

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None:
        answer: str | None = self._answer("input", title)
        return answer

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        return bool(self._answer("confirm", f"{title} {message}"))


async def test_everything_server_prompts_resources_progress_and_elicitation(pool: McpPool,
                                                                             npm_servers: NpmServers) -> None:
    mcp = await SessionMcp.open(pool, [everything(npm_servers)])
    commands = {c.name: c for c in mcp.commands()}
    assert commands["mcp__everything__args-prompt"].argument_hint == "<city> [state]"
    text = await mcp.expand('/mcp__everything__args-prompt "New York" state=NY')
    assert text is not None and "New York" in text and "NY" in text
    assert await mcp.expand("/not_an_mcp_prompt x") is None

    listed = await _call(mcp, "mcp__everything__read_resource", {})
    assert "demo://resource/static/document/architecture.md" in _text(listed)
    read = await _call(mcp, "mcp__everything__read_resource", {"uri": "demo://resource/dynamic/text/7"})
    assert not read.is_error and "[resource demo://resource/dynamic/text/7]" in _text(read)

    updates: list[Any] = []
    slow = await _call(mcp, "mcp__everything__trigger-long-running-operation", {"duration": 1, "steps": 3},
                       updates=updates)
    assert not slow.is_error
    assert [u["details"]["progress"] for u in updates] == [1, 2, 3]

    ui = ScriptedUi({"String\n": "Ada Lovelace", "String —": "Ada Lovelace", "Boolean": "Yes"})
    mcp.bind_ui(ui)  # type: ignore[arg-type]
    answered = await _call(mcp, "mcp__everything__trigger-elicitation-request", {})
    assert not answered.is_error, _text(answered)
    assert "- Name: Ada Lovelace" in _text(answered) and "- Agreed to terms: true" in _text(answered)
    assert ui.asked[0][1].startswith("MCP server everything asks\nPlease provide inputs for the following fields:")
    mcp.bind_ui(None)
    declined = await _call(mcp, "mcp__everything__trigger-elicitation-request", {})
    assert "declined" in _text(declined)

    structured = await _call(mcp, "mcp__everything__get-structured-content", {"location": "Chicago"})
    assert structured.details["structuredContent"]["temperature"] is not None
    mcp.release()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(params=["streamableHttp", "sse"])
def http_everything(request: pytest.FixtureRequest, npm_servers: NpmServers) -> Iterator[ServerConfig]:
    """server-everything over HTTP on a loopback port (``PORT``), as its own process."""
    port = _free_port()
    mode: str = request.param
    process = subprocess.Popen([npm_servers.node, npm_servers.everything, mode], env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert process.stderr is not None
        for _ in range(50):  # its banner says it listens
            line = process.stderr.readline().decode()
            if "port" in line.lower() or not line:
                break
        path = "/mcp" if mode == "streamableHttp" else "/sse"
        yield ServerConfig(name="remote", transport="http" if mode == "streamableHttp" else "sse",
                           url=f"http://127.0.0.1:{port}{path}", source="test")
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


async def test_http_and_sse_transports_serve_the_same_tools(pool: McpPool, http_everything: ServerConfig) -> None:
    mcp = await SessionMcp.open(pool, [http_everything])
    assert mcp.diagnostics() == []
    outcome = await _call(mcp, "mcp__remote__echo", {"message": "over http"})
    assert not outcome.is_error and "over http" in _text(outcome)
    (status,) = pool.servers()
    assert status.transport == http_everything.transport and status.target.startswith("http://127.0.0.1:")
    await pool.close()  # the HTTP session is ended (DELETE) while the server still runs
