"""The collector held while a front starts: resumed once, where the front says, and only if held."""

from __future__ import annotations

import gc
import threading
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


def test_a_pause_turns_the_collector_off_inside_and_on_after() -> None:
    with collection.paused():
        assert not gc.isenabled()
        with collection.paused():  # nested: the outer one ends the pause
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_inside_the_start_up_hold_does_not_end_it() -> None:
    collection.hold()
    with collection.paused():
        pass
    assert not gc.isenabled()  # the start-up has not settled yet
    collection.resume()
    assert gc.isenabled()


def test_a_start_up_that_settles_during_a_load_leaves_the_load_paused() -> None:
    collection.hold()
    with collection.paused():
        collection.resume()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_leaves_a_collector_someone_else_turned_off_off() -> None:
    gc.disable()
    with collection.paused():
        pass
    assert not gc.isenabled()


def test_no_pause_when_not_asked_for() -> None:
    with collection.paused(False):
        assert gc.isenabled()


def test_pauses_in_two_threads_end_with_the_last() -> None:
    first_in, second_out = threading.Event(), threading.Event()

    def load() -> None:
        with collection.paused():
            first_in.set()
            second_out.wait(5)

    worker = threading.Thread(target=load)
    worker.start()
    first_in.wait(5)
    with collection.paused():
        pass
    assert not gc.isenabled()  # the worker's load is still paused
    second_out.set()
    worker.join(5)
    assert gc.isenabled()


def test_what_a_pause_made_is_in_the_oldest_generation_and_its_cycles_still_collected(
    collector_runs: list[int],
) -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    collector_runs.clear()
    with collection.paused():
        made = [{"n": [n]} for n in range(5_000)]  # tracked: a dict holding a list
        garbage = Node()
        del garbage
    more = [[n] for n in range(10)]
    assert collector_runs == []  # not left to the youngest generation, whose next pass would scan it all
    assert len(made) + len(more) == 5_010
    assert gc.collect() >= 1


def test_an_exception_inside_a_pause_still_ends_it() -> None:
    with pytest.raises(RuntimeError), collection.paused():
        raise RuntimeError("the load failed")
    assert gc.isenabled()


def test_what_outlives_a_pause_for_passing_work_is_scanned_as_young(collector_runs: list[int]) -> None:
    collector_runs.clear()
    with collection.paused(kept=False):
        made = [{"n": [n]} for n in range(5_000)]  # tracked: a dict holding a list
        assert collector_runs == []
    more = [[n] for n in range(10)]  # the next allocations, if the pause's end made none
    assert collector_runs[:1] == [0]  # a young collection over what the pause left alive
    assert len(made) + len(more) == 5_010


def test_a_kept_pause_that_ends_last_moves_what_both_made(collector_runs: list[int]) -> None:
    collector_runs.clear()
    with collection.paused(), collection.paused(kept=False):
        made = [{"n": [n]} for n in range(5_000)]  # tracked: a dict holding a list
    more = [[n] for n in range(10)]
    assert collector_runs == []  # moved to the oldest generation: nothing young to scan
    assert len(made) + len(more) == 5_010
