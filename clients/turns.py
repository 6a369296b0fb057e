"""One turn's outcome, from the events the daemon publishes while it runs.

The daemon answers ``prompt`` with ``{stopReason}`` only, but every assistant message of the
turn reaches the client before that answer as a ``session/event`` ``message_end`` (its text,
``usage`` with cost, ``stopReason`` and ``errorMessage``). :class:`TurnRecorder` watches those
events during one ``prompt`` call and :meth:`TurnRecorder.outcome` adds what a script keeps —
the reply text, the session, the turn's tokens and cost, ``isError`` and the reason — the way
``claude -p --output-format json`` gives ``result``, ``session_id`` and ``is_error``. The Node
client does the same (``clients/node/rpcdClient.js``: ``prompt``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpcd.protocol.names import SESSION_EVENT

USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
FAILED = ("error", "aborted")


class TurnRecorder:
    """Assistant messages ended while one prompt runs (fed by the client's notification reader)."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.last: Mapping[str, Any] | None = None
        self.usage = dict.fromkeys(USAGE_KEYS, 0)
        self.cost = 0.0

    def feed(self, method: str, params: Any) -> None:
        if method != SESSION_EVENT or not isinstance(params, Mapping):
            return
        event = params.get("event")
        if not isinstance(event, Mapping) or event.get("type") != "message_end":
            return
        message = event.get("message")
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            return
        if isinstance(params.get("sessionId"), str):
            self.session_id = params["sessionId"]
        self.last = message
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            for key in USAGE_KEYS:
                value = usage.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    self.usage[key] += int(value)
            cost = usage.get("cost")
            total = cost.get("total") if isinstance(cost, Mapping) else None
            if isinstance(total, int | float) and not isinstance(total, bool):
                self.cost += float(total)

    def outcome(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """``result`` (the daemon's answer) with the turn's facts added; unchanged for a prompt that
        ran no turn (an extension command, a prompt queued into a running turn)."""
        out = dict(result)
        if "stopReason" not in out:
            return out
        stop = out["stopReason"]
        out["text"] = message_text(self.last) if self.last is not None else ""
        if self.session_id is not None:
            out["sessionId"] = self.session_id
        out["usage"] = dict(self.usage)
        out["cost"] = round(self.cost, 10)
        out["isError"] = stop in FAILED
        if out["isError"]:
            reason = self.last.get("errorMessage") if self.last is not None else None
            out["errorMessage"] = reason if isinstance(reason, str) and reason else (
                "the turn was aborted" if stop == "aborted" else "the turn failed (no reason given)")
        return out


def message_text(message: Mapping[str, Any]) -> str:
    """The text blocks of an assistant message, joined (tool calls and thinking left out)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(part.get("text", "")) for part in content
                   if isinstance(part, Mapping) and part.get("type") == "text")
