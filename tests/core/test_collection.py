"""The collector held while a front starts: resumed once, where the front says, and only if held."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from rpcd.core import collection


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    collection.resume()
    (gc.enable if was else gc.disable)()


def test_a_held_collector_is_resumed_once() -> None:
    collection.hold()
    assert not gc.isenabled()
    collection.resume()
    assert gc.isenabled()
    gc.disable()  # someone else's choice after the start-up
    collection.resume()  # a second resume (the timer's) does not undo it
    assert not gc.isenabled()


def test_resume_without_hold_leaves_the_collector_as_it_is() -> None:
    gc.disable()
    collection.resume()
    assert not gc.isenabled()


def test_what_was_made_while_held_is_still_collected_later() -> None:
    collection.hold()

    class Node:
        def __init__(self) -> None:
            self.me = self

    garbage = Node()
    del garbage  # a cycle: only the collector frees it
    collection.resume()
    assert gc.collect() >= 1  # moved to the oldest generation, not frozen for good
