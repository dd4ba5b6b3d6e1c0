"""The doc ids of a run read by the compiled reader, one per entry, held in C.

The scanner (``data/_scan.c``) keeps a run's doc ids as it reads them - offsets and
bytes, like an Arrow string column - instead of interning them into a run-wide table:
that table outgrew the cache on large runs (a miss per line), and evaluation needs only
each entry's id looked up among the ids its query judges (:meth:`CompiledDocs.judge`). A
:class:`CompiledDocs` is that column in rank order: the scan's ids (file order) and the
permutation ranking them (None: file order). Everything else a run offers (codes, a
vocabulary, Arrow arrays) is built from :meth:`CompiledDocs.arrow` on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CompiledDocs", "JudgedEntries", "is_compiled_entries", "shifted_order"]


class JudgedEntries(NamedTuple):
    """The run entries found among their own query's judged docs, by query then rank:
    each one's run query (index), rank in that query (0-based) and qrels row."""

    query: np.ndarray
    rank: np.ndarray
    row: np.ndarray


def is_compiled_entries(ids: object) -> bool:
    """Whether ``ids`` is the scanner's ``Entries`` (a run's doc ids, file order, in C)."""
    return type(ids).__name__ == "Entries" and hasattr(ids, "judge")


class CompiledDocs:
    """Doc id of every run entry in rank order: ``entries`` (the scanner's ``Entries``,
    file order) taken at ``order`` (entry positions; None: file order). A run whose
    queries' segments of the file only change places gives ``segments`` instead: rank
    positions ``offsets[q]:offsets[q + 1]`` are the entries from ``starts[q]`` on, and
    ``order`` is built from them on first use (judging a run needs no order)."""

    __slots__ = ("_order", "_segments", "entries")

    def __init__(self, entries: Any, order: np.ndarray | None,
                 segments: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.entries = entries
        self._order = order
        self._segments = segments  # (starts, offsets)

    @property
    def order(self) -> np.ndarray | None:
        """The entry at each rank position (None: file order)."""
        if self._segments is not None:
            starts, offsets = self._segments
            self._order = shifted_order(starts - offsets[:-1], np.diff(offsets),
                                        int(offsets[-1]))
            self._segments = None
        return self._order

    def __len__(self) -> int:
        if self._segments is not None:
            return int(self._segments[1][-1])
        return len(self.entries) if self._order is None else len(self._order)

    def take(self, index: np.ndarray) -> CompiledDocs:
        """The ids at rank positions ``index``."""
        order = self.order
        return CompiledDocs(self.entries, index if order is None else order[index])

    def judge(self, bounds: np.ndarray, first_row: np.ndarray, end_row: np.ndarray,
              row_ids: tuple[np.ndarray, Any]) -> JudgedEntries:
        """The entries whose doc id is among their own query's judged ids: query ``q``'s
        entries are rank positions ``bounds[q]:bounds[q + 1]``, its judged ids the rows
        ``first_row[q]:end_row[q]`` of ``row_ids`` (int64 offsets and UTF-8 bytes, as an
        Arrow string column). Looked up in C, on every core for a large run."""
        segments = self._segments
        by_segment = segments is not None and np.array_equal(segments[1], bounds)
        found = self.entries.judge(
            None if by_segment else self.order, np.ascontiguousarray(bounds, np.int64),
            np.ascontiguousarray(first_row, np.int64), np.ascontiguousarray(end_row, np.int64),
            np.ascontiguousarray(row_ids[0], np.int64), row_ids[1],
            starts=np.ascontiguousarray(segments[0], np.int64) if by_segment and segments
            else None)
        query, rank, row = found
        return JudgedEntries(np.frombuffer(query, dtype=np.int32),
                             np.frombuffer(rank, dtype=np.int64),
                             np.frombuffer(row, dtype=np.int32))

    def sample(self, limit: int) -> list[str]:
        """At most ``limit`` ids, every step-th entry (for advice about ids)."""
        n = len(self)
        at = np.arange(0, n, max(n // max(limit, 1), 1))[:limit]
        if self._segments is not None:  # the entries there, without building the order
            starts, offsets = self._segments
            query = np.searchsorted(offsets, at, side="right") - 1
            at = starts[query] + (at - offsets[query])
        elif self._order is not None:
            at = self._order[at]
        return [self.entries.get(int(i)) for i in at]

    def arrow(self) -> pa.Array:
        """The ids as an Arrow string array, in rank order."""
        from ._arrow import from_numpy  # lazy: loads pyarrow on first use

        column = entries_arrow(self.entries)
        return column if self.order is None else column.take(from_numpy(self.order))


def entries_arrow(entries: Any) -> pa.Array:
    """The scanner's ``Entries`` (or ``Vocab``) as an Arrow string array, by position."""
    import pyarrow as pa  # lazy: pyarrow only when ids become Arrow strings

    offsets, data = entries.buffers()  # lent by ``entries``, not copied
    offsets = np.frombuffer(offsets, dtype=np.int64)
    if memoryview(data).nbytes < 2**31 - 1:
        return pa.Array.from_buffers(pa.string(), len(entries), [
            None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])
    return pa.Array.from_buffers(pa.large_string(), len(entries),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def is_compiled_vocab(vocab: object) -> bool:
    """Whether ``vocab`` is the compiled reader's ``Vocab`` (ids held in C)."""
    return type(vocab).__name__ == "Vocab" and hasattr(vocab, "codes_of")


def shifted_order(shift: np.ndarray, seg_len: np.ndarray, n: int) -> np.ndarray | None:
    """The order putting segments of ``seg_len`` entries, each ``shift`` entries further on
    in the file, one after the other (None: no segment moves); int32 where it suffices."""
    if not shift.any():
        return None
    kind = np.int32 if n < 2**31 else np.int64
    order = np.repeat(shift.astype(kind), seg_len)
    order += np.arange(n, dtype=kind)
    return order
