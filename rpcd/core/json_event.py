"""Pi 0.85's JSON form of a session event (``modes/json-event.js``: ``toJsonEvent``), which both
Pi's RPC mode and rpcd's fronts put on their wire.

Only ``message_update`` changes: the partial assistant message, repeated in full on every delta,
is left out (forwarding it would make a streamed reply quadratic on the wire); the delta event
loses its ``partial`` and the event gets the partial's cumulative ``usage``. A ``toolcall_start``
keeps the call's ``id`` and ``toolName`` (the agent loop already adds them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["to_json_event"]


def to_json_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """``toJsonEvent(event)``: the event as it goes on the wire (a new dict, or the event itself when it
    is a ``message_update`` already in that shape: the agent loop's own updates are)."""
    if event.get("type") != "message_update":
        return dict(event)
    ame = event.get("assistantMessageEvent")
    if type(event) is dict and "message" not in event and "usage" in event and type(ame) is dict \
            and "partial" not in ame:
        # Already the wire shape (the agent loop's own updates): sent as it is, never changed here
        # (whoever merges deltas copies first).
        return event
    out = {k: v for k, v in event.items() if k != "message"}
    if isinstance(ame, Mapping):
        out["assistantMessageEvent"] = {k: v for k, v in ame.items() if k != "partial"}
        partial = ame.get("partial")
        if isinstance(partial, Mapping) and "usage" in partial:
            out.setdefault("usage", partial["usage"])
    message = event.get("message")
    if "usage" not in out and isinstance(message, Mapping) and "usage" in message:
        out["usage"] = message["usage"]
    return out
