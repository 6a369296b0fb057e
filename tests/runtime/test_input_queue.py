"""The steering / follow-up queues (``rpcd.runtime.turns.queue``): Pi's delivery modes, what is shown
while a drained message is on its way, and — for any interleaving — nothing lost or duplicated."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rpcd.runtime.turns.queue import InputQueues, Kind


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def test_one_at_a_time_drains_one_and_all_drains_everything() -> None:
    queues = InputQueues()
    for text in ("a", "b", "c"):
        queues.add("steering", text, _message(text))
    assert [m["content"][0]["text"] for m in queues.drain("steering")] == ["a"]
    queues.steering.mode = "all"
    assert [m["content"][0]["text"] for m in queues.drain("steering")] == ["b", "c"]
    assert queues.drain("steering") == []


def test_a_drained_message_stays_shown_until_its_delivery() -> None:
    queues = InputQueues()
    message = _message("s")
    queues.add("steering", "s", message)
    queues.add("follow_up", "f", _message("f"))
    assert queues.drain("steering") == [message]
    assert queues.snapshot().steering == ("s",) and queues.pending_count == 2
    assert queues.has_items(), "the follow-up is still waiting"
    assert queues.clear().steering == (), "what the agent took is not reported as dropped"
    assert queues.delivered(dict(message)) is False, "an equal message is not the queued one"
    assert queues.delivered(message) is True
    assert queues.snapshot().steering == () and queues.pending_count == 0


Op = tuple[str, Kind, str]
_kinds = st.sampled_from(["steering", "follow_up"])
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), _kinds, st.text(max_size=3)),
        st.tuples(st.just("drain"), _kinds, st.just("")),
        st.tuples(st.just("mode"), _kinds, st.sampled_from(["all", "one-at-a-time"])),
        st.tuples(st.just("clear"), st.just("steering"), st.just("")),
    ),
    max_size=40,
)


@given(_ops)
def test_every_queued_message_is_delivered_once_in_order_or_reported_dropped(ops: list[Op]) -> None:
    queues = InputQueues()
    added: dict[str, list[str]] = {"steering": [], "follow_up": []}
    delivered: dict[str, list[str]] = {"steering": [], "follow_up": []}
    dropped: dict[str, list[str]] = {"steering": [], "follow_up": []}
    counter = 0
    for op, kind, value in ops:
        if op == "add":
            counter += 1
            text = f"{value}#{counter}"
            queues.add(kind, text, _message(text))
            added[kind].append(text)
        elif op == "drain":
            mode = (queues.steering if kind == "steering" else queues.follow_up).mode
            waiting = len((queues.steering if kind == "steering" else queues.follow_up).items)
            taken = queues.drain(kind)
            assert len(taken) == (min(waiting, 1) if mode == "one-at-a-time" else waiting)
            for message in taken:
                assert queues.delivered(message)
                delivered[kind].append(message["content"][0]["text"])
        elif op == "mode":
            (queues.steering if kind == "steering" else queues.follow_up).mode = value  # type: ignore[assignment]
        else:
            gone = queues.clear()
            dropped["steering"].extend(gone.steering)
            dropped["follow_up"].extend(gone.follow_up)
        snapshot = queues.snapshot()
        assert queues.pending_count == len(snapshot.steering) + len(snapshot.follow_up)
    rest = queues.snapshot()
    for kind, left in (("steering", rest.steering), ("follow_up", rest.follow_up)):
        assert sorted(delivered[kind] + dropped[kind] + list(left)) == sorted(added[kind])
        assert delivered[kind] == [t for t in added[kind] if t in delivered[kind]], "FIFO per queue"
