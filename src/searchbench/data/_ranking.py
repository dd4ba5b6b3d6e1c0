"""trec_eval's order of a run's entries (ARCHITECTURE §3): by query, score descending,
then doc id descending (byte-wise) among tied scores, found without a full sort where the
file is already in that order (the usual run file: grouped by query, scores falling)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._entries import is_compiled_entries, is_compiled_vocab, shifted_order

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["file_order", "rank_order", "repair_sorted_ties"]


def file_order(query: np.ndarray, score: np.ndarray, ids: Any
                ) -> tuple[np.ndarray | None, bool]:
    """``(order, ties repaired)`` as :func:`rank_order` finds it, but None for an order
    that leaves every entry in place, and int32 where that suffices (no n-sized int64
    arrays for the usual run file, grouped by query with falling scores)."""
    if len(query) == 0:
        return None, True
    segments = _segments(query, score)
    if segments is None:
        order = _sorted_order(query, score)
        if order is None:
            return rank_order(query, score, None, ids), True
        return order, False
    return shifted_order(*segments, len(query)), False


def repair_sorted_ties(order: np.ndarray | None, scores: np.ndarray, offsets: np.ndarray,
                        ids: Any, doc: np.ndarray | None = None
                        ) -> tuple[np.ndarray | None, np.ndarray]:
    """:func:`_repair_ties` for entries already ranked by (query, score): ``scores`` and
    ``offsets`` are in rank order, ``order`` None means "in place". Returns the order
    (still None when no tie needs moving) and the scores (a -0.0 tied with a 0.0 moves
    with its entry)."""
    if len(scores) < 2:
        return order, scores
    tied_next = scores[1:] == scores[:-1]
    tied_next[offsets[1:-1] - 1] = False  # the last entry of a query and the next query's
    if not tied_next.any():
        return order, scores
    pos, sub, perm = _tie_permutation(tied_next, order, doc, ids)
    del tied_next
    if order is None:
        if (perm == np.arange(len(perm))).all():
            return None, scores
        order = np.arange(len(scores), dtype=np.int32 if len(scores) < 2**31 else np.int64)
    order[pos] = sub[perm]
    moved = scores[pos][perm]
    if (np.signbit(moved) != np.signbit(scores[pos])).any():
        scores = scores.copy()  # may be the caller's array
        scores[pos] = moved
    return order, scores


def rank_order(query: np.ndarray, score: np.ndarray, doc: np.ndarray | None,
                vocab: np.ndarray | pa.Array) -> np.ndarray:
    """Permutation ranking entries by query, then score descending, then doc descending.

    Run files usually list each query's documents together, by decreasing score: then
    the order is read off the file's segments with no sort at all. Otherwise one int64
    sort on ``query × dense score rank``. Either way only entries tied on (query, score)
    are then re-sorted by doc id (byte-wise, from the id strings), so no full three-key
    sort and no sorted doc vocabulary are needed.
    """
    if len(query) == 0:
        return np.zeros(0, dtype=np.int64)
    order = _segment_order(query, score)
    if order is None:
        order = _sorted_order(query, score)
    if order is None:
        everything = np.arange(len(query))
        return everything[np.lexsort((-_doc_rank(vocab, doc), -score, query))]
    _repair_ties(order, query, score, doc, vocab)
    return order


def _doc_rank(vocab: np.ndarray | pa.Array, codes: np.ndarray | None) -> np.ndarray:
    """Byte-wise rank of the ids ``vocab[codes]`` among themselves (``codes`` None: all).

    Only the order within one query matters, where ids are unique (duplicates are refused),
    so a plain sort position is the rank.
    """
    if is_compiled_vocab(vocab) or is_compiled_entries(vocab):
        order = np.frombuffer(cast(Any, vocab).order(None if codes is None else
                                          np.ascontiguousarray(codes, dtype=np.int32)),
                              dtype=np.int64)
    elif codes is None or not isinstance(vocab, np.ndarray):  # Arrow ids
        import pyarrow.compute as pc  # lazy: loads pyarrow on first use

        from ._arrow import from_numpy, to_numpy  # lazy: loads _arrow, pyarrow on first use

        chosen = vocab if codes is None else vocab.take(from_numpy(codes))
        order = to_numpy(pc.sort_indices(chosen))
    else:
        order = np.argsort(vocab[codes].astype(str), kind="stable")  # str order = UTF-8 order
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def _segment_order(query: np.ndarray, score: np.ndarray) -> np.ndarray | None:
    """The order when each query is one contiguous segment with non-increasing scores."""
    segments = _segments(query, score)
    if segments is None:
        return None
    shift, seg_len = segments
    return np.repeat(shift, seg_len) + np.arange(len(query))


def _segments(query: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For a file of contiguous query segments with non-increasing scores, the segments in
    query order: ``(shift, length)``, ``shift`` being how far each one moves back."""
    change = np.flatnonzero(query[1:] != query[:-1]) + 1
    starts = np.concatenate(([0], change))
    seg_query = query[starts]
    by_id = np.sort(seg_query)  # not np.unique: its first call imports numpy.ma (30 ms)
    if (by_id[1:] == by_id[:-1]).any():
        return None
    del by_id
    descending = score[:-1] >= score[1:]
    descending[change - 1] = True
    if not descending.all():
        return None
    lengths = np.diff(np.concatenate((starts, [len(query)])))
    by_query = np.argsort(seg_query)
    seg_len, seg_start = lengths[by_query], starts[by_query]
    shift = seg_start - np.concatenate(([0], np.cumsum(seg_len)[:-1]))
    return shift, seg_len


def _sorted_order(query: np.ndarray, score: np.ndarray) -> np.ndarray | None:
    """One int64 argsort on ``query × (n_ranks - 1 - dense score rank)``; None if too wide."""
    uniq, score_rank = np.unique(score, return_inverse=True)
    n_ranks = len(uniq)
    if (int(query.max()) + 1) * n_ranks >= 2**62:
        return None
    key = query.astype(np.int64) * n_ranks + (n_ranks - 1 - score_rank.ravel())
    del score_rank
    return np.argsort(key)


def _repair_ties(order: np.ndarray, query: np.ndarray, score: np.ndarray,
                 doc: np.ndarray | None, vocab: np.ndarray | pa.Array) -> None:
    """Re-sort, in place, the entries of ``order`` tied on (query, score) by doc descending.

    Tied entries form runs in ``order``; one argsort of ``run number × n + (n − 1 − doc
    rank)`` orders every run by doc descending and keeps the runs where they are.
    """
    q, s = query[order], score[order]
    tied_next = (q[1:] == q[:-1]) & (s[1:] == s[:-1])  # entry i and i + 1 are tied
    del q, s
    if not tied_next.any():
        return
    pos, sub, perm = _tie_permutation(tied_next, order, doc, vocab)
    order[pos] = sub[perm]


def _tie_permutation(tied_next: np.ndarray, order: np.ndarray | None, doc: np.ndarray | None,
                     vocab: np.ndarray | pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pos, sub, perm)``: rank positions of the tied entries, their entries (``order[pos]``;
    ``pos`` when ``order`` is None) and the permutation ``perm`` putting each tied run in
    doc-descending order: ``order[pos] = sub[perm]``."""
    in_run = np.zeros(len(tied_next) + 1, dtype=bool)
    in_run[:-1] |= tied_next
    in_run[1:] |= tied_next
    pos = np.flatnonzero(in_run)
    starts_run = np.ones(len(pos), dtype=bool)  # a tied run starts where i - 1 isn't tied to i
    starts_run[1:] = ~tied_next[pos[1:] - 1]
    sub = pos if order is None else order[pos]
    n = len(sub)
    rank = _doc_rank(vocab, sub if doc is None else doc[sub])
    key = (np.cumsum(starts_run, dtype=np.int64) - 1) * n + (n - 1 - rank)
    return pos, sub, np.argsort(key)
