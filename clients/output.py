"""Where the CLI's output goes: results on stdout, the daemon's notifications as they arrive.

:class:`Printer` decides per item: human form (assistant text streamed to stdout, thinking
dimmed, tool runs / problems / diagnostics on stderr) or JSON (one document per result on
stdout; notifications as NDJSON only with ``--events``). :class:`EventPump` subscribes once,
before ``initialize``, so nothing the daemon says at startup or at a replacement is missed, and
prints every queued notification before a result, keeping the wire's order on the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from rpcd.clients import blocks, render
from rpcd.clients.blocks import Line, ToolBlock
from rpcd.clients.client import EventStream, RpcdClient
from rpcd.clients.types import Notification
from rpcd.clients.views import View, make_view
from rpcd.protocol.names import HOST_STATUS, PROGRESS, SESSION_DIAGNOSTICS, SESSION_EVENT, SESSION_LIFECYCLE, UI_NOTIFY

EVENT_METHODS = (SESSION_EVENT, SESSION_LIFECYCLE, SESSION_DIAGNOSTICS, HOST_STATUS, PROGRESS, UI_NOTIFY)


class BrokenStdout(Exception):
    """stdout's reader went away (``rpcctl … | head``): the run stops, exit 141."""


class Printer:
    """Routes results and events to stdout/stderr in human form (through a ``views`` view: plain
    text off a terminal, rich on one) or as JSON."""

    def __init__(
        self,
        as_json: bool,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        verbose: bool = False,
        events: bool = False,
        thinking: bool = False,
        quiet: bool = False,
    ) -> None:
        self.as_json = as_json
        self.verbose = verbose
        self.events = events
        self.thinking = thinking
        self.quiet = quiet
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.drain: Callable[[], None] = lambda: None
        self.on_broken_stdout: Callable[[], object] = lambda: None
        """Called once when stdout's reader has gone (the CLI cancels its run)."""
        self.broken = False
        self.cwd: str | None = None
        """The session's cwd (from its diagnostics): where a diff preview reads the file."""
        self._view: View | None = None
        self._blocks: dict[str, ToolBlock] = {}

    @property
    def view(self) -> View:
        if self._view is None:
            self._view = make_view(self.write_out, self.out, self.err, on_broken=self._broke)
        return self._view

    def _broke(self) -> None:
        if not self.broken:
            self.broken = True
            self.on_broken_stdout()

    def write_out(self, text: str) -> None:
        """Everything for stdout goes through here: a closed pipe stops the run instead of raising
        a traceback from wherever the write happened (an event callback, the interpreter's exit)."""
        if self.broken:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ConnectionResetError):
            self._broke()

    def result(self, value: Any, human: Callable[[Any], str] | None = None) -> None:
        self.drain()
        self.end_stream()
        if self.as_json:
            self.write_out(json.dumps(value, ensure_ascii=False) + "\n")
        elif human is not None:
            self.write_out(human(value) + "\n")
        elif value is not None:
            self.write_out(json.dumps(value, indent=2, ensure_ascii=False) + "\n")

    def note(self, text: str) -> None:
        """A human remark on stderr (progress, hints); silent with ``-q``."""
        if not self.quiet:
            self.warn(text)

    def warn(self, text: str) -> None:
        """A problem the user must see, on stderr, also with ``-q`` and ``--json``."""
        self.end_stream()
        self.err.write(text + "\n")
        self.err.flush()

    def pause(self) -> None:
        """Someone is about to write to the terminal (a question): finish what is being drawn."""
        if self._view is not None:
            self._view.pause()

    def lines(self, lines: Sequence[Line]) -> None:
        if lines and not self.as_json:
            self.view.lines(lines)

    def event(self, item: Notification | dict[str, Any]) -> None:
        method, params = item["method"], item["params"]
        if method == SESSION_DIAGNOSTICS and isinstance(params, dict) and isinstance(params.get("cwd"), str):
            self.cwd = params["cwd"]
        if self.as_json:
            if self.events:
                self.write_out(json.dumps(item, ensure_ascii=False) + "\n")
            elif method == SESSION_DIAGNOSTICS:
                self._diagnostics(params)
            return
        if (method == SESSION_EVENT and isinstance(params, dict) and isinstance(params.get("event"), dict)
                and self._session_event(params["event"])):
            return
        if method == SESSION_DIAGNOSTICS:
            self._diagnostics(params)
            return
        if not self.verbose and not _worth_showing(method, params):
            return
        line = render.event_line(method, params, ids=self.verbose)
        if line is not None and method != PROGRESS:
            self.lines([[(text, "dim" if self.verbose else "warn")] for text in line.split("\n")])

    def _session_event(self, event: dict[str, Any]) -> bool:
        """The events a person sees as the turn itself; True when handled."""
        kind = event.get("type")
        if kind == "message_update":
            delta = event.get("assistantMessageEvent")
            if isinstance(delta, dict) and delta.get("type") == "text_delta":
                self.view.text(str(delta.get("delta", "")))
            elif isinstance(delta, dict) and delta.get("type") == "thinking_delta":
                self.view.thinking(str(delta.get("delta", "")), self.thinking)
            return not self.verbose
        if kind == "agent_start":
            self.view.busy("working…")
        elif kind in ("agent_end", "agent_settled"):
            self.view.end_stream()
        elif kind == "tool_execution_start":
            call = str(event.get("toolCallId"))
            block = self._blocks[call] = ToolBlock(str(event.get("toolName", "?")), event.get("args"))
            self.lines([blocks.header(block.name, block.args), *blocks.preview(block, self.cwd)])
            self.view.busy(f"{block.name}…")
            return True
        elif kind == "tool_execution_update":
            running = self._blocks.get(str(event.get("toolCallId")))
            if running is not None:
                self.lines(running.update(event.get("partialResult")))
            return True
        elif kind == "tool_execution_end":
            ended = self._blocks.pop(str(event.get("toolCallId")), None) or ToolBlock(
                str(event.get("toolName", "?")), {})
            self.lines(ended.end(event.get("result"), bool(event.get("isError"))))
            self.view.busy("working…")
            return True
        return False

    def approval_preview(self, params: Any) -> list[Line]:
        """The diff of the call a ``tool/authorize`` asks about, unless its block already showed it."""
        call = params.get("toolCallId") if isinstance(params, dict) else None
        block = self._blocks.get(str(call))
        if block is None or block.previewed:
            return []
        return blocks.preview(block, self.cwd, approximate=True)

    def diff_shown(self, params: Any) -> bool:
        """Whether the call a ``tool/authorize`` asks about has had its diff drawn."""
        call = params.get("toolCallId") if isinstance(params, dict) else None
        block = self._blocks.get(str(call))
        return block is not None and block.name in ("edit", "write") and (block.previewed or block.approximated)

    def _diagnostics(self, params: Any) -> None:
        for line in render.diagnostic_lines(params, include_info=self.verbose):
            self.warn(line)

    def end_stream(self) -> None:
        if self._view is not None:
            self._view.end_stream()


def _worth_showing(method: str, params: Any) -> bool:
    """Without --verbose a human sees problems and notices, not the turn's bookkeeping (tool calls
    are drawn as blocks; a failed turn's reason is said once, at its end: render.turn_failure)."""
    if not isinstance(params, dict):
        return False
    if method == SESSION_EVENT:
        event = params.get("event") or {}
        kind = str(event.get("type", ""))
        return kind.startswith(("auto_retry", "extension_error", "compaction"))
    if method == HOST_STATUS:
        return params.get("status") == "unusable"
    return method == UI_NOTIFY


class EventPump:
    """One subscription for the client's whole life, printed as it arrives."""

    def __init__(self, client: RpcdClient, printer: Printer) -> None:
        self._stream: EventStream = client.notifications(EVENT_METHODS)
        self._printer = printer
        printer.drain = self.drain
        self._task = asyncio.get_running_loop().create_task(self._run(), name="rpcctl-events")

    def _show(self, item: Notification) -> None:
        self._printer.event(item)

    def drain(self) -> None:
        """Print everything already received (call before printing a result)."""
        while (item := self._stream.get_nowait()) is not None:
            self._show(item)

    async def _run(self) -> None:
        async for item in self._stream:
            self._show(item)

    async def close(self) -> None:
        self.drain()
        self._stream.close()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def run_prompt(client: RpcdClient, text: str, printer: Printer) -> dict[str, Any]:
    """Send one prompt (its events print live through the pump); returns the prompt result.

    The daemon writes every event of the turn before the result, and the reader queues them
    before it resolves the result: draining after the result prints up to the turn's last event."""
    result = await client.prompt(text)
    printer.drain()
    printer.end_stream()
    return dict(result)
