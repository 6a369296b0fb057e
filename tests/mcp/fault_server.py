"""A small MCP server on the official SDK (``mcp.server.fastmcp``) that misbehaves on request — the
faults real servers have, which the npm servers do not show on demand.

``python fault_server.py [MODE] [--pid-file PATH]``; MODE is ``serve`` (default), ``exit-at-start``
(writes to stderr and exits 3 before answering anything) or ``hang-at-start`` (never answers
``initialize``). Its tools: ``echo`` (read-only), ``write_note`` (may change things), ``slow``
(sleeps, reporting progress), ``never`` (never answers), ``crash`` (the process exits mid-call),
``huge`` (a result of N bytes), ``flood`` (N log notifications, then a result), ``garbage`` (lines
that are not JSON-RPC on its stdout, then a result), ``nan`` (answers itself, raw, with ``NaN`` and
``Infinity`` in its result: what Python's ``json.dumps`` writes), ``malformed`` (a raw answer that is no
``CallToolResult``), ``ask`` (an elicitation), and a
prompt ``greet``. ``--pid-file`` records the process id (a test kills it).
"""

from __future__ import annotations

import json
import os
import sys
import time

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 and not argv[1].startswith("--") else "serve"
    if "--pid-file" in argv:
        with open(argv[argv.index("--pid-file") + 1], "w") as handle:
            handle.write(str(os.getpid()))
    if mode == "exit-at-start":
        sys.stderr.write("fault server: refusing to start (exit-at-start)\n")
        sys.stderr.flush()
        sys.exit(3)
    if mode == "hang-at-start":
        while True:
            time.sleep(3600)
    server = FastMCP("fault-server")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @server.tool()
    def write_note(text: str) -> str:
        """Pretend to write a note (a tool that may change things)."""
        return f"noted: {text}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def slow(seconds: float, ctx: Context) -> str:  # type: ignore[type-arg]
        """Sleep for a while, reporting progress every 0.1 s."""
        steps = max(1, int(seconds * 10))
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
            await anyio.sleep(seconds / steps)
        return f"slept {seconds}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def never() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def crash() -> str:
        """The process exits in the middle of the call."""
        sys.stderr.write("fault server: crashing mid-call\n")
        sys.stderr.flush()
        os._exit(7)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def huge(size: int) -> str:
        """A result of ``size`` bytes (lines of 100)."""
        line = "x" * 99 + "\n"
        return (line * (size // 100 + 1))[:size]

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def flood(count: int, ctx: Context) -> str:  # type: ignore[type-arg]
        """``count`` log notifications, then a result."""
        for index in range(count):
            await ctx.info(f"flood {index}")
        return f"flooded {count}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def garbage() -> str:
        """Lines on stdout that are no JSON-RPC message, then a result."""
        os.write(1, b"this is not json\n{\"jsonrpc\": \"2.0\", \"id\": \n[1, 2\n\xff\xfe garbage\n")
        return "after garbage"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
    def nan(ctx: Context) -> str:  # type: ignore[type-arg]
        """Its own answer, written raw with NaN / Infinity (the SDK's answer that follows is dropped)."""
        answer = {"jsonrpc": "2.0", "id": ctx.request_id, "result": {
            "content": [{"type": "text", "text": "values follow"}],
            "structuredContent": {"ratio": float("nan"), "limit": float("inf"), "floor": float("-inf"), "n": 1},
        }}
        os.write(1, (json.dumps(answer) + "\n").encode())
        return "unreachable"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
    def malformed(ctx: Context) -> str:  # type: ignore[type-arg]
        """Its own answer, written raw: JSON-RPC, but no ``CallToolResult`` (content is no list)."""
        answer = {"jsonrpc": "2.0", "id": ctx.request_id, "result": {"content": "not a list", "isError": "maybe"}}
        os.write(1, (json.dumps(answer) + "\n").encode())
        return "unreachable"

    class Answer(BaseModel):
        name: str
        age: int
        happy: bool

    @server.tool()
    async def ask(ctx: Context) -> str:  # type: ignore[type-arg]
        """Ask the user for a name, an age and a mood (an elicitation)."""
        result = await ctx.elicit("Who are you?", Answer)
        if result.action == "accept":
            data = result.data
            return f"hello {data.name}, {data.age}, happy={data.happy}"
        return f"no answer: {result.action}"

    @server.prompt()
    def greet(name: str, style: str = "plain") -> str:
        """A greeting prompt."""
        return f"Please greet {name} in a {style} style."

    @server.resource("fault://notes/{name}")
    def note(name: str) -> str:
        """A note by name."""
        return f"the note called {name}"

    @server.resource("fault://readme", mime_type="text/plain")
    def readme() -> str:
        """The server's readme."""
        return "fault server readme"

    server.run("stdio")


if __name__ == "__main__":
    main(sys.argv)
