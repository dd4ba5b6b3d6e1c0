"""Exact k-nearest-neighbour ground truth: blocked BLAS matmul, bounded memory.

For a block of queries Q and a block of corpus vectors X the kernel computes one matrix
product S = Q Xᵀ (float32 sgemm when the inputs are float32) and turns it into a score
where larger is closer:

- ``ip``:     s = ⟨q, x⟩
- ``cosine``: s = ⟨q̂, x̂⟩ with rows scaled to unit norm
- ``l2``:     s = ⟨q, x⟩ − ‖x‖²/2, since ‖q − x‖² = ‖q‖² − 2s

Selection keeps the best ``k + extra`` per query: an ``argpartition`` on the first block,
then only the entries above the running threshold (corpus blocks come in id order, so an
entry equal to the threshold has a larger id and loses under the tie policy). The kept
candidates' distances are recomputed in float64 and sorted by (distance, id) — the tie
policy. The ``extra`` neighbours beyond k let recall see ties at position k and absorb
float32 rounding. Memory: one ``query_block × base_block`` score matrix (16 MB by default)
plus the kept candidates; ``base`` may be memory-mapped.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, DataFormatError
from ._metric import (
    TIE_POLICY,
    as_matrix,
    check_finite,
    check_metric,
    check_pair,
    exact_distances,
    normalize_rows,
)

__all__ = ["GroundTruth", "exact_knn", "fingerprint"]

FORMAT = "searchbench.ann.groundtruth/1"


@dataclass
class GroundTruth:
    """Exact neighbours: ``ids`` (int64) and ``distances`` (float64, smaller = closer),
    both ``(n_queries, k + extra)``, sorted by (distance, id)."""

    ids: np.ndarray
    distances: np.ndarray
    metric: str
    k: int
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return int(self.ids.shape[0])

    @property
    def depth(self) -> int:
        """Neighbours stored per query (k + extra)."""
        return int(self.ids.shape[1])

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``.npz`` with ``ids``, ``distances`` and a JSON ``provenance`` entry."""
        meta = dict(self.provenance, format=FORMAT, metric=self.metric, k=self.k)
        with open(path, "wb") as fh:
            np.savez(fh, ids=self.ids, distances=self.distances,
                     provenance=np.array(json.dumps(meta, sort_keys=True)))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> GroundTruth:
        """Read a file written by :meth:`save`."""
        try:
            with np.load(path, allow_pickle=False) as z:
                ids, dist, meta = z["ids"], z["distances"], json.loads(str(z["provenance"]))
        except (KeyError, ValueError, OSError) as exc:
            raise DataFormatError(f"{path}: not a searchbench ground-truth .npz "
                                  f"(expected ids, distances, provenance): {exc}") from exc
        if ids.shape != dist.shape or ids.ndim != 2:
            raise DataFormatError(f"{path}: ids {ids.shape} and distances {dist.shape} "
                                  "must be 2-D and of one shape")
        return cls(ids.astype(np.int64), dist.astype(np.float64), check_metric(meta["metric"]),
                   int(meta["k"]), meta)

    def check_compatible(self, metric: str, n_queries: int, k: int,
                         base: np.ndarray | None = None, where: str = "ground truth") -> None:
        """Raise :class:`ConfigError` if this ground truth cannot score a search."""
        metric = check_metric(metric)
        if self.metric != metric:
            raise ConfigError(f"{where} was made with metric {self.metric!r}, the search uses "
                              f"{metric!r}; recompute it with --metric {metric}")
        if self.n_queries != n_queries:
            raise ConfigError(f"{where} holds {self.n_queries} queries, the search has "
                              f"{n_queries}; use the ground truth of these queries")
        if self.depth < k:
            raise ConfigError(f"{where} holds {self.depth} neighbours per query, k={k} "
                              f"needs at least {k}; recompute it with -k {k}")
        fp = self.provenance.get("base_fingerprint")
        if base is not None and fp and fp != fingerprint(base):
            raise ConfigError(f"{where} was computed on other corpus vectors "
                              "(fingerprint differs); recompute it")


def fingerprint(x: np.ndarray, rows: int = 64) -> str:
    """blake2b of shape, dtype and ``rows`` evenly spaced rows: cheap identity check."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{x.shape}{x.dtype}".encode())
    idx = np.unique(np.linspace(0, len(x) - 1, num=min(rows, len(x))).astype(np.int64))
    h.update(np.ascontiguousarray(x[idx]).tobytes())
    return h.hexdigest()


def exact_knn(
    base: np.ndarray,
    queries: np.ndarray,
    k: int,
    metric: str = "ip",
    *,
    extra: int = 10,
    query_block: int = 1024,
    base_block: int = 4096,
    threads: int | None = None,
    check: bool = True,
) -> GroundTruth:
    """Exact top-(k + extra) neighbours of every query, with provenance.

    ``base`` may be a memory-mapped array; it is read block by block. Inputs are checked
    (dimensions, 1 ≤ k ≤ n, finite values) before any product is computed. ``threads``
    (default: all cores) parallel query blocks need threadpoolctl; else BLAS threads.
    """
    metric = check_metric(metric)
    base, queries = as_matrix(base, "corpus vectors"), as_matrix(queries, "query vectors")
    check_pair(base, queries, k)
    if extra < 0:
        raise ConfigError(f"extra={extra}; expected extra ≥ 0")
    if check:
        check_finite(base, "corpus vectors")
        check_finite(queries, "query vectors")
    dtype = np.float64 if np.float64 in (base.dtype, queries.dtype) else np.float32
    depth = min(k + extra, len(base))
    q = queries.astype(dtype, copy=False)
    if metric == "cosine":
        q = normalize_rows(q, "query vectors")
    ids, dist = _scan(base, q, queries, depth, metric, dtype, query_block, base_block,
                      threads or os.cpu_count() or 1)
    return GroundTruth(ids, dist, metric, k, _provenance(base, queries, metric, k, extra, dtype))


def _scan(base: np.ndarray, q: np.ndarray, queries: np.ndarray, depth: int, metric: str,
          dtype: type, query_block: int, base_block: int, threads: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """Ids and exact distances, sorted: query blocks (outer) × corpus blocks (inner).

    With ``threads > 1`` and threadpoolctl installed, query blocks run in parallel
    threads, each with single-threaded BLAS, so selection overlaps the products.
    """
    nq = len(q)
    workers = max(1, min(threads, nq // 64))
    qb = max(1, min(query_block, -(-nq // workers)))
    bb = max(4 * depth, base_block)
    starts = list(range(0, nq, qb))
    limits = _blas_limits(1) if workers > 1 else None
    if limits is None:
        workers = 1

    def one(start: int) -> tuple[np.ndarray, np.ndarray]:
        buf = np.empty((min(qb, nq - start), bb), dtype=dtype)
        _, top_i = _scan_queries(base, q[start:start + qb], depth, metric, buf)
        dist = exact_distances(base, queries[start:start + qb], top_i, metric)
        order = np.lexsort((top_i, dist), axis=-1)
        return np.take_along_axis(top_i, order, 1), np.take_along_axis(dist, order, 1)

    if workers == 1:
        parts = [one(st) for st in starts]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with limits, ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(one, starts))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _blas_limits(n: int) -> Any:
    """threadpoolctl's context limiting BLAS to ``n`` threads, or None if not installed."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(n, user_api="blas")


def _scan_queries(base: np.ndarray, q: np.ndarray, depth: int, metric: str,
                  buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One query block against all corpus blocks; candidates above the threshold are
    buffered and merged when they outnumber the kept entries (few sorts in all)."""
    nr, bb = len(q), buf.shape[1]
    top_v = np.full((nr, depth), -np.inf, dtype=buf.dtype)
    top_i = np.full((nr, depth), np.iinfo(np.int64).max, dtype=np.int64)
    pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    n_pending = 0
    mask = np.empty(buf.shape, dtype=bool)
    for start in range(0, len(base), bb):
        block = _prepare_block(base[start:start + bb], metric, buf.dtype, start)
        s = np.matmul(q, block.T, out=buf[:nr, :len(block)])
        if metric == "l2":
            s -= 0.5 * np.einsum("ij,ij->i", block, block)
        cand = _candidates(s, top_v[:, -1:], depth, start, start == 0,
                           mask[:nr, :len(block)])
        if cand is not None:
            pending.append(cand)
            n_pending += len(cand[0])
        if n_pending >= nr * depth or (pending and start == 0):
            top_v, top_i = _merge(top_v, top_i, *map(np.concatenate, zip(*pending, strict=True)))
            pending, n_pending = [], 0
    if pending:
        top_v, top_i = _merge(top_v, top_i, *map(np.concatenate, zip(*pending, strict=True)))
    return top_v, top_i


def _prepare_block(block: np.ndarray, metric: str, dtype: type, offset: int) -> np.ndarray:
    block = np.ascontiguousarray(block, dtype=dtype)
    if metric == "cosine":
        block = normalize_rows(block, "corpus vectors", offset)
    return block


def _candidates(s: np.ndarray, thr: np.ndarray, depth: int, offset: int, first: bool,
                mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(rows, scores, ids) of block entries that may enter the top; ids = offset + col.

    Entries strictly above the row's threshold (an equal score has a larger id and loses);
    an ``argpartition`` of the block when that would be more than ``depth`` per row.
    """
    if not first:
        flat = np.flatnonzero(np.greater(s, thr, out=mask))
        if len(flat) == 0:
            return None
        if len(flat) <= s.shape[0] * depth:
            rows, cols = np.divmod(flat, s.shape[1])
            return rows, s[rows, cols], cols + offset
    take = min(depth, s.shape[1])
    part = np.argpartition(s, s.shape[1] - take, axis=1)[:, s.shape[1] - take:]
    part.sort(axis=1)  # id order within a row, for the stable merge
    vals = np.take_along_axis(s, part, axis=1)
    rows = np.repeat(np.arange(s.shape[0]), take)
    return rows, vals.ravel(), part.ravel().astype(np.int64) + offset


def _merge(top_v: np.ndarray, top_i: np.ndarray, rows: np.ndarray, vals: np.ndarray,
           ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best ``depth`` per row of (current top ∪ candidates) by (score desc, id asc).

    Candidates of one row arrive in id order and have larger ids than the current top, so
    a *stable* sort by score on ``[top | candidates]`` applies the tie policy.
    """
    nr, depth = top_v.shape
    order = np.argsort(rows, kind="stable")
    rows, vals, ids = rows[order], vals[order], ids[order]
    counts = np.bincount(rows, minlength=nr)
    pos = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    width = depth + int(counts.max())
    mv = np.full((nr, width), -np.inf, dtype=top_v.dtype)
    mi = np.full((nr, width), np.iinfo(np.int64).max, dtype=np.int64)
    mv[:, :depth], mi[:, :depth] = top_v, top_i
    mv[rows, depth + pos], mi[rows, depth + pos] = vals, ids
    keep = np.argsort(-mv, axis=1, kind="stable")[:, :depth]
    return np.take_along_axis(mv, keep, axis=1), np.take_along_axis(mi, keep, axis=1)


def _provenance(base: np.ndarray, queries: np.ndarray, metric: str, k: int, extra: int,
                dtype: type) -> dict[str, Any]:
    from .. import __version__

    return {
        "library": f"searchbench {__version__} (numpy {np.__version__} matmul)",
        "dtype": np.dtype(dtype).name,
        "metric": metric,
        "distance": {"ip": "-<q,x>", "cosine": "1 - cos(q,x)", "l2": "||q-x||^2"}[metric],
        "k": k,
        "extra": extra,
        "tie_policy": TIE_POLICY,
        "distances_recomputed": "float64",
        "n_base": int(base.shape[0]),
        "n_queries": int(queries.shape[0]),
        "dim": int(base.shape[1]),
        "base_fingerprint": fingerprint(base),
        "queries_fingerprint": fingerprint(queries),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
