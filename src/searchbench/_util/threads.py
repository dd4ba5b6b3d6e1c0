"""Work spread over the machine's cores by threads, for code whose heavy steps release the
GIL (numpy's array operations, the compiled reader)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["cores", "map_in_threads"]

T = TypeVar("T")
R = TypeVar("R")


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def map_in_threads(fn: Callable[[T], R], items: Sequence[T], threads: int) -> list[R]:
    """``[fn(item) for item in items]``, the items taken in turn by up to ``threads``
    threads (the caller's among them). What ``fn`` raised for the first item, in order, that
    failed is raised here; the other threads stop taking items once one failed."""
    threads = max(1, min(threads, len(items)))
    if threads == 1:
        return [fn(item) for item in items]
    results: list[R | None] = [None] * len(items)
    errors: dict[int, BaseException] = {}
    lock = threading.Lock()
    taken = iter(range(len(items)))

    def work() -> None:
        while not errors:
            with lock:
                i = next(taken, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # raised again below, in the caller's thread
                errors[i] = exc

    helpers = [threading.Thread(target=work, name="searchbench-work", daemon=True)
               for _ in range(threads - 1)]
    for helper in helpers:
        helper.start()
    try:
        work()
    finally:
        for helper in helpers:
            helper.join()
    if errors:
        raise errors[min(errors)]
    return results  # type: ignore[return-value]
