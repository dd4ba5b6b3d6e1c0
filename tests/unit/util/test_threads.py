"""``_util.threads.map_in_threads``: the results in order, whatever the threads; the first
failing item's error raised in the caller."""

from __future__ import annotations

import threading
import time

import pytest

from searchbench._util.threads import cores, map_in_threads


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_results_come_in_the_order_of_the_items(threads: int) -> None:
    items = list(range(40))

    def slow_square(i: int) -> int:
        time.sleep(0.001 * (i % 3))  # items finish out of order
        return i * i

    assert map_in_threads(slow_square, items, threads) == [i * i for i in items]
    assert map_in_threads(slow_square, [], threads) == []


def test_items_are_spread_over_threads() -> None:
    seen: set[str] = set()
    barrier = threading.Barrier(2, timeout=10)

    def note(_: int) -> None:
        seen.add(threading.current_thread().name)
        barrier.wait()  # two items run at once, or this times out

    map_in_threads(note, [0, 1], 2)
    assert len(seen) == 2


def test_the_first_failing_item_s_error_is_raised() -> None:
    def fail_some(i: int) -> int:
        if i in (5, 9):
            time.sleep(0.01 if i == 5 else 0)  # the later item fails first
            raise ValueError(f"item {i}")
        return i

    for threads in (1, 2):
        with pytest.raises(ValueError, match="item 5"):
            map_in_threads(fail_some, list(range(12)), threads)


def test_cores_is_at_least_one() -> None:
    assert cores() >= 1
