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
from collections.abc import Callable
from typing import Any, TextIO

from rpcd.clients import render
from rpcd.clients.client import EventStream, RpcdClient
from rpcd.clients.types import Notification
from rpcd.protocol.names import HOST_STATUS, PROGRESS, SESSION_DIAGNOSTICS, SESSION_EVENT, SESSION_LIFECYCLE, UI_NOTIFY

EVENT_METHODS = (SESSION_EVENT, SESSION_LIFECYCLE, SESSION_DIAGNOSTICS, HOST_STATUS, PROGRESS, UI_NOTIFY)
DIM, UNDIM = "\x1b[2m", "\x1b[22m"


class Printer:
    """Routes results and events to stdout/stderr in human or JSON form."""

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
        self._mid_line = False
        self._in_thinking = False

    def result(self, value: Any, human: Callable[[Any], str] | None = None) -> None:
        self.drain()
        self.end_stream()
        if self.as_json:
            self.out.write(json.dumps(value, ensure_ascii=False) + "\n")
        elif human is not None:
            self.out.write(human(value) + "\n")
        elif value is not None:
            self.out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        """A human remark on stderr (progress, hints); silent with ``-q``."""
        if not self.quiet:
            self.end_stream()
            self.err.write(text + "\n")
            self.err.flush()

    def warn(self, text: str) -> None:
        """A problem the user must see, on stderr, also with ``-q`` and ``--json``."""
        self.end_stream()
        self.err.write(text + "\n")
        self.err.flush()

    def event(self, item: Notification | dict[str, Any]) -> None:
        method, params = item["method"], item["params"]
        if self.as_json:
            if self.events:
                self.out.write(json.dumps(item, ensure_ascii=False) + "\n")
                self.out.flush()
            elif method == SESSION_DIAGNOSTICS:
                self._diagnostics(params)
            return
        if method == SESSION_EVENT and isinstance(params, dict):
            delta = render.text_delta(params)
            if delta is not None:
                self._stream(delta, thinking=False)
                return
            thought = render.thinking_delta(params)
            if thought is not None:
                if self.thinking:
                    self._stream(thought, thinking=True)
                return
        if method == SESSION_DIAGNOSTICS and not self.verbose:
            self._diagnostics(params)
            return
        if not self.verbose and not _worth_showing(method, params):
            return
        line = render.event_line(method, params)
        if line is not None and method != PROGRESS:
            self.end_stream()
            self.err.write(line + "\n")
            self.err.flush()

    def _diagnostics(self, params: Any) -> None:
        for line in render.diagnostic_lines(params, include_info=self.verbose):
            self.warn(line)

    def _stream(self, text: str, *, thinking: bool) -> None:
        if not text:
            return
        if thinking != self._in_thinking:
            if self._mid_line:
                self.out.write("\n")
                self._mid_line = False
            self._in_thinking = thinking
        dim = thinking and self.out.isatty()
        self.out.write(f"{DIM}{text}{UNDIM}" if dim else text)
        self.out.flush()
        self._mid_line = not text.endswith("\n")

    def end_stream(self) -> None:
        self._in_thinking = False
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False


def _worth_showing(method: str, params: Any) -> bool:
    """Without --verbose a human sees tool runs, problems and notices, not the turn's bookkeeping."""
    if not isinstance(params, dict):
        return False
    if method == SESSION_EVENT:
        event = params.get("event") or {}
        kind = str(event.get("type", ""))
        if kind.startswith(("tool_execution", "auto_retry", "extension_error")):
            return True
        # a turn that failed or was aborted says why (e.g. the provider refused the key)
        message = event.get("message")
        return (
            kind == "message_end"
            and isinstance(message, dict)
            and message.get("role") == "assistant"
            and message.get("stopReason") in ("error", "aborted")
        )
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
