"""Server-sent events, just enough for streamed chat completions.

OpenAI-compatible servers differ in small ways (``data:`` with or without a space,
``\\r\\n`` line ends, ``: keep-alive`` comments, ``event:`` lines some proxies add), so
the parser follows the WHATWG rules for the fields we need and ignores the rest
instead of guessing per vendor. It works on text lines so it can sit on top of
``httpx.Response.aiter_lines()`` without buffering the whole body.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import attrs


@attrs.frozen
class SseEvent:
    """One dispatched event: its ``event:`` name (``message`` if none) and joined ``data:`` lines."""

    data: str
    event: str = "message"


async def iter_sse(lines: AsyncIterable[str]) -> AsyncIterator[SseEvent]:
    """Group lines into events; an event is dispatched on a blank line or at end of stream.

    Dispatching the trailing event at end of stream matters: a connection cut right
    after the last ``data:`` line must still deliver what was received.
    """
    data_lines: list[str] = []
    event_name = ""
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if line == "":
            if data_lines:
                yield SseEvent(data="\n".join(data_lines), event=event_name or "message")
            data_lines = []
            event_name = ""
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data_lines.append(value)
        elif field == "event":
            event_name = value
        # id / retry / unknown fields: not needed for one-shot completions
    if data_lines:
        yield SseEvent(data="\n".join(data_lines), event=event_name or "message")
