"""Steering and follow-up input queued while a turn runs (Pi's ``PendingMessageQueue`` plus what
``AgentSession`` shows of it).

Two queues, each with a delivery mode (``all``: everything queued goes at once;
``one-at-a-time``: one message per opportunity — Pi's default for both). The agent loop drains
steering after each tool round (before the next model call) and follow-ups when it would
otherwise stop (``rpcd.runtime.turns.agent``). A drained message stays *shown* (in ``queue_update``,
``clearQueue``, ``pendingMessageCount``) until its ``message_start`` is emitted, exactly like
Pi, which takes a text off its lists when that event is handled; unlike Pi, an item is
recognised by identity, not by its text, so a prompt with the same words as a queued steer
does not make the steer disappear from the list.

Nothing here emits events: the session calls :meth:`InputQueues.delivered` from its event path
and emits ``queue_update`` when it (or any other change) returns true.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs

from rpcd.core.values import QueueMode, QueueSnapshot

Kind = Literal["steering", "follow_up"]


@attrs.define(eq=False)
class Queued:
    kind: Kind
    text: str | None
    """What clients are shown (``queue_update``); ``None`` for an extension's custom message, which
    Pi queues without showing it."""
    message: dict[str, Any]


class PendingQueue:
    """pi-agent-core's ``PendingMessageQueue``: FIFO, drained whole or one at a time."""

    def __init__(self, mode: QueueMode = "one-at-a-time") -> None:
        self.mode: QueueMode = mode
        self.items: list[Queued] = []

    def drain(self) -> list[Queued]:
        if not self.items:
            return []
        if self.mode == "all":
            drained, self.items = self.items, []
            return drained
        return [self.items.pop(0)]


class InputQueues:
    """The session's steering and follow-up queues and the items drained but not yet delivered."""

    def __init__(self, steering_mode: QueueMode = "one-at-a-time", follow_up_mode: QueueMode = "one-at-a-time") -> None:
        self.steering = PendingQueue(steering_mode)
        self.follow_up = PendingQueue(follow_up_mode)
        self._drained: list[Queued] = []

    def add(self, kind: Kind, text: str | None, message: dict[str, Any]) -> None:
        (self.steering if kind == "steering" else self.follow_up).items.append(Queued(kind, text, message))

    def has_items(self) -> bool:
        """Messages the agent has not taken yet (Pi's ``hasQueuedMessages``)."""
        return bool(self.steering.items or self.follow_up.items)

    def drain(self, kind: Kind) -> list[dict[str, Any]]:
        """The messages to deliver now, by the queue's mode; they stay shown until delivered."""
        items = (self.steering if kind == "steering" else self.follow_up).drain()
        self._drained.extend(items)
        return [item.message for item in items]

    def put_back(self, messages: Sequence[dict[str, Any]]) -> None:
        """Messages drained but not delivered (the run stopped first) go back to the front of their
        queues, in order."""
        for kind in ("steering", "follow_up"):
            items = [item for item in self._drained if item.kind == kind and any(item.message is m for m in messages)]
            if items:
                queue = self.steering if kind == "steering" else self.follow_up
                queue.items[:0] = items
                self._drained = [item for item in self._drained if item not in items]

    def delivered(self, message: object) -> bool:
        """``message`` is being delivered (its ``message_start``): stop showing it. True if it was queued."""
        for index, item in enumerate(self._drained):
            if item.message is message:
                del self._drained[index]
                return item.text is not None
        return False

    def snapshot(self) -> QueueSnapshot:
        def texts(kind: Kind, items: Sequence[Queued]) -> tuple[str, ...]:
            return tuple(item.text for item in (*(i for i in self._drained if i.kind == kind), *items)
                         if item.text is not None)

        return QueueSnapshot(texts("steering", self.steering.items), texts("follow_up", self.follow_up.items))

    @property
    def pending_count(self) -> int:
        return sum(1 for item in (*self._drained, *self.steering.items, *self.follow_up.items) if item.text is not None)

    def clear(self) -> QueueSnapshot:
        """Drop everything the agent has not taken yet (Pi's ``clearQueue``); returns what was dropped.

        A message already taken is being delivered right now (its ``message_start`` follows without
        a model call in between), so it is not reported as dropped."""
        dropped = QueueSnapshot(tuple(i.text for i in self.steering.items if i.text is not None),
                                tuple(i.text for i in self.follow_up.items if i.text is not None))
        self.steering.items.clear()
        self.follow_up.items.clear()
        return dropped
