"""Building Pi's assistant message from streamed pieces, the same way for every API.

``Blocks`` appends content blocks and returns the matching Pi events (``text_start`` …
``toolcall_end``) with dense, increasing ``contentIndex`` values. Tool-call arguments
arrive as JSON fragments; they are kept beside the message (never in it: Pi strips its
``partialJson`` scratch buffer before persisting) and parsed at the block's end with
pi-ai's ``parseStreamingJson`` rules, strictly: a non-finite number is a ``StreamError``.

``calculate_cost`` is pi-ai's ``calculateCost`` (tiered rates, 1 h cache writes at twice
the input rate).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpcd.providers.http import StreamError
from rpcd.providers.jsonstream import NonFiniteNumberError, parse_streaming_json

Event = dict[str, Any]


class Blocks:
    def __init__(self, message: dict[str, Any], provider: str) -> None:
        self.message = message
        self.content: list[dict[str, Any]] = message["content"]
        self.provider = provider
        self._json: dict[int, list[str]] = {}
        self._open: set[int] = set()

    # -- text / thinking ----------------------------------------------------------------

    def start(self, block: dict[str, Any]) -> tuple[int, Event]:
        self.content.append(block)
        index = len(self.content) - 1
        self._open.add(index)
        kind = {"text": "text_start", "thinking": "thinking_start", "toolCall": "toolcall_start"}[block["type"]]
        event: Event = {"type": kind, "contentIndex": index}
        if block["type"] == "toolCall":
            event["id"] = block.get("id", "")
            event["toolName"] = block.get("name", "")
            self._json[index] = []
        return index, event

    def append(self, index: int, delta: str) -> Event:
        block = self.content[index]
        if block["type"] == "text":
            block["text"] += delta
            return {"type": "text_delta", "contentIndex": index, "delta": delta}
        if block["type"] == "thinking":
            block["thinking"] += delta
            return {"type": "thinking_delta", "contentIndex": index, "delta": delta}
        self._json.setdefault(index, []).append(delta)
        return {"type": "toolcall_delta", "contentIndex": index, "delta": delta}

    def partial_json(self, index: int) -> str:
        return "".join(self._json.get(index, ()))

    def set_partial_json(self, index: int, text: str) -> None:
        self._json[index] = [text]

    def end(self, index: int, *, arguments_json: str | None = None) -> Event:
        """Close block ``index``; a tool call's arguments are parsed now (strictly)."""
        self._open.discard(index)
        block = self.content[index]
        if block["type"] == "text":
            return {"type": "text_end", "contentIndex": index, "content": block["text"]}
        if block["type"] == "thinking":
            return {"type": "thinking_end", "contentIndex": index, "content": block["thinking"]}
        text = self.partial_json(index) if arguments_json is None else arguments_json
        self._json.pop(index, None)
        if text or not block.get("arguments"):
            block["arguments"] = self._parse_arguments(text)
        return {"type": "toolcall_end", "contentIndex": index, "toolCall": dict(block)}

    def is_open(self, index: int) -> bool:
        return index in self._open

    def close_all(self) -> list[Event]:
        """End every block still open (a stream that stopped early keeps what it had)."""
        events: list[Event] = []
        for index in sorted(self._open):
            try:
                events.append(self.end(index))
            except StreamError:
                self.content[index]["arguments"] = {}
                raise
        return events

    def _parse_arguments(self, text: str) -> dict[str, Any]:
        try:
            value = parse_streaming_json(text)
        except NonFiniteNumberError:
            raise StreamError(
                f'Provider "{self.provider}" sent tool call arguments with a non-finite number'
            ) from None
        return dict(value) if isinstance(value, Mapping) else {}


def calculate_cost(rates: Mapping[str, Any], usage: dict[str, Any]) -> None:
    """Fill ``usage["cost"]`` from per-million rates (pi-ai ``calculateCost``)."""
    input_tokens = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
    chosen: Mapping[str, Any] = rates
    threshold = -1
    for tier in rates.get("tiers") or ():
        above = tier.get("inputTokensAbove", 0) if isinstance(tier, Mapping) else 0
        if input_tokens > above and above > threshold:
            chosen, threshold = tier, above

    def rate(key: str) -> float:
        value = chosen.get(key, 0)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    long_write = usage.get("cacheWrite1h") or 0
    short_write = usage["cacheWrite"] - long_write
    cost = usage["cost"]
    cost["input"] = rate("input") / 1_000_000 * usage["input"]
    cost["output"] = rate("output") / 1_000_000 * usage["output"]
    cost["cacheRead"] = rate("cacheRead") / 1_000_000 * usage["cacheRead"]
    cost["cacheWrite"] = (rate("cacheWrite") * short_write + rate("input") * 2 * long_write) / 1_000_000
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]


def mapping_field(value: Any) -> Mapping[str, Any]:
    """A JSON object from a chunk, or an empty one for anything else."""
    return value if isinstance(value, Mapping) else {}


def int_field(value: Any) -> int:
    """A token count from a chunk (anything else counts 0, as Pi's ``|| 0``)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
