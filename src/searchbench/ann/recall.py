"""k-NN recall of an approximate search against exact ground truth.

This is **not** relevance recall (``R@k`` in ``searchbench.measures``): it asks whether an
index returns the same neighbours as exact search, whatever their relevance.

Per query, with G = the exact top k (``gt.ids[:, :k]``), d_k = the k-th exact distance and
F = the first K ids the index returned (K ≥ k):

- by id:      ``knn_recall k@K = |F ∩ G| / k``
- tie-aware:  ``min(k, |{f ∈ F : f ∈ G or d(f) ≤ d_k + tol}|) / k`` with
  ``tol = atol + rtol·|d_k|`` — a returned neighbour as close as the k-th true one counts.
- ``1-recall@R`` (FAISS): 1 if the exact nearest neighbour is among the first R returned.

d(f) is recomputed exactly from the vectors when they are given (approximate distances
of PQ codes never decide a tie); otherwise the index's own distances are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, DataFormatError
from ..knn import GroundTruth, exact_distances

__all__ = ["KnnRecall", "knn_recall", "one_recall_at"]

RTOL = 1e-5
ATOL = 1e-6


@dataclass
class KnnRecall:
    """Per-query k-NN recall by id and tie-aware, plus tie counts."""

    k: int
    K: int
    by_id: np.ndarray
    tie_aware: np.ndarray
    queries_with_ties: int | None
    ties_beyond_depth: int | None
    tolerance: str

    @property
    def name(self) -> str:
        return f"knn_recall@{self.k}" if self.k == self.K else f"knn_recall {self.k}@{self.K}"

    def summary(self) -> dict[str, Any]:
        """Mean, 5th percentile and minimum of both variants, with the tie counts."""
        return {
            "measure": self.name,
            "by_id": _distribution(self.by_id),
            "tie_aware": _distribution(self.tie_aware),
            "queries": len(self.by_id),
            "queries_with_ties": self.queries_with_ties,
            "ties_beyond_depth": self.ties_beyond_depth,
            "tolerance": self.tolerance,
        }


def _distribution(x: np.ndarray) -> dict[str, float]:
    return {"mean": float(np.mean(x)), "p5": float(np.percentile(x, 5)),
            "min": float(np.min(x))}


def knn_recall(
    gt: GroundTruth,
    found_ids: np.ndarray,
    k: int = 10,
    *,
    base: np.ndarray | None = None,
    queries: np.ndarray | None = None,
    found_distances: np.ndarray | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> KnnRecall:
    """``knn_recall k@K`` of ``found_ids`` (n_queries × K, −1 = no result) against ``gt``.

    Give ``base`` and ``queries`` (exact distances of the returned ids are recomputed) or
    ``found_distances`` (searchbench's convention: smaller = closer) for the tie-aware
    variant; with neither, tie-aware equals by-id.
    """
    found = _check_found(gt, found_ids, k)
    truth = gt.ids[:, :k]
    first = _first_occurrence(found) & (found >= 0)
    hit = (found[:, :, None] == truth[:, None, :]).any(axis=2) & first
    by_id = hit.sum(axis=1) / k
    d_k = gt.distances[:, k - 1]
    tol = atol + rtol * np.abs(d_k)
    dist = _found_distances(gt, found, base, queries, found_distances)
    if dist is None:
        tie_aware = by_id.copy()
    else:
        close = (dist <= (d_k + tol)[:, None]) & first
        tie_aware = np.minimum(k, (close | hit).sum(axis=1)) / k
    with_ties = beyond = None
    if gt.depth > k:
        with_ties = int(np.sum(np.abs(gt.distances[:, k] - d_k) <= tol))
        beyond = int(np.sum(np.abs(gt.distances[:, -1] - d_k) <= tol))
    text = f"|d − d_k| ≤ {atol:g} + {rtol:g}·|d_k|"
    return KnnRecall(k, found.shape[1], by_id, tie_aware, with_ties, beyond, text)


def one_recall_at(gt: GroundTruth, found_ids: np.ndarray, r: int) -> float:
    """FAISS's 1-recall@R: share of queries whose exact nearest neighbour is in the top R."""
    found = _check_found(gt, found_ids, 1)
    if r < 1 or r > found.shape[1]:
        raise ConfigError(f"R={r}; expected 1 ≤ R ≤ {found.shape[1]} (results per query)")
    return float(np.mean((found[:, :r] == gt.ids[:, :1]).any(axis=1)))


def _check_found(gt: GroundTruth, found_ids: np.ndarray, k: int) -> np.ndarray:
    found = np.asarray(found_ids, dtype=np.int64)
    if found.ndim != 2 or found.shape[0] != gt.n_queries:
        raise DataFormatError(f"results have shape {found.shape}; expected "
                              f"({gt.n_queries}, K) for {gt.n_queries} queries")
    if k < 1 or k > gt.depth:
        raise ConfigError(f"k={k} but the ground truth holds {gt.depth} neighbours per query")
    if found.shape[1] < k:
        raise ConfigError(f"the index returned {found.shape[1]} results per query; "
                          f"knn_recall@{k} needs K ≥ {k}")
    return found


def _first_occurrence(found: np.ndarray) -> np.ndarray:
    """True where an id appears for the first time in its row (a repeated id counts once)."""
    order = np.argsort(found, axis=1, kind="stable")
    srt = np.take_along_axis(found, order, axis=1)
    first_sorted = np.ones_like(srt, dtype=bool)
    first_sorted[:, 1:] = srt[:, 1:] != srt[:, :-1]
    out = np.empty_like(first_sorted)
    np.put_along_axis(out, order, first_sorted, axis=1)
    return out


def _found_distances(gt: GroundTruth, found: np.ndarray, base: np.ndarray | None,
                     queries: np.ndarray | None,
                     found_distances: np.ndarray | None) -> np.ndarray | None:
    if base is not None and queries is not None:
        return exact_distances(base, queries, found, gt.metric)
    if found_distances is not None:
        dist = np.asarray(found_distances, dtype=np.float64)
        if dist.shape != found.shape:
            raise DataFormatError(f"distances {dist.shape} and ids {found.shape} differ")
        return dist
    return None
