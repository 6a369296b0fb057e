"""AWS event-stream framing (``application/vnd.amazon.eventstream``: Bedrock's ``ConverseStream``),
decoded with ``botocore``'s ``EventStreamBuffer`` (prelude and message CRCs checked).

Each message becomes an ``SseEvent`` so the API module reads it like any other stream: ``event``
is the ``:event-type`` header (``messageStart``, ``contentBlockDelta``, …) for an event, or
``exception:<:exception-type>`` for a modeled exception (``throttlingException``, …) and
``error:<:error-code>`` for an error message; ``data`` is the JSON payload.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from rpcd.providers.sse import SseEvent


class MalformedEventStream(ValueError):
    """A message whose prelude or CRC does not check (the stream cannot be read further)."""


async def iter_aws_events(chunks: AsyncIterable[bytes]) -> AsyncIterator[SseEvent]:
    from botocore.eventstream import EventStreamBuffer, ParserError

    buffer = EventStreamBuffer()
    async for chunk in chunks:
        buffer.add_data(chunk)
        try:
            messages = list(buffer)
        except ParserError as exc:
            raise MalformedEventStream(f"Malformed AWS event stream: {type(exc).__name__}") from None
        for message in messages:
            headers = message.headers
            kind = headers.get(":message-type")
            payload = message.payload.decode("utf-8", "replace")
            if kind == "exception":
                yield SseEvent(data=payload or "{}", event=f"exception:{headers.get(':exception-type', '')}")
            elif kind == "error":
                yield SseEvent(data=payload or "{}", event=f"error:{headers.get(':error-code', '')}")
            else:
                yield SseEvent(data=payload or "{}", event=str(headers.get(":event-type", "")))
