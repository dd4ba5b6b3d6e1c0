"""Exact k-nearest-neighbour ground truth: blocked BLAS matmul, bounded memory.

For a block of queries Q and a block of corpus vectors X the kernel computes one matrix
product S = Q Xᵀ (float32 sgemm when the inputs are float32) and turns it into a score
where larger is closer:

- ``ip``:     s = ⟨q, x⟩
- ``cosine``: s = ⟨q̂, x̂⟩ with rows scaled to unit norm
- ``l2``:     s = ⟨q, x⟩ − ‖x‖²/2, since ‖q − x‖² = ‖q‖² − 2s

Selection keeps the best ``k + extra`` per query: a threshold per query (first from a
column sample of the first block, then the (k + extra)-th best kept score) and only the
entries above it (corpus blocks come in id order, so a later entry equal to the threshold
has a larger id and loses under the tie policy). The kept candidates' distances are
recomputed in float64 and sorted by (distance, id) — the tie policy. The ``extra``
neighbours beyond k let recall see ties at position k and absorb float32 rounding.
Memory: one ``query_block × base_block`` score matrix per thread (16 MB by default) plus
the kept candidates; ``base`` may be memory-mapped.
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
    (default: all cores) parallel query blocks need threadpoolctl, which limits BLAS to one
    thread process-wide for the duration of the call (restored after); else BLAS threads.
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
    """One query block against all corpus blocks.

    Kept entries are flat (row, score, id) arrays; a block adds the entries above the row's
    threshold t (≥ t in the first block, > t after: a later equal score has a larger id
    and loses). When the new entries outnumber ``depth`` per row, t is raised to the
    ``depth``-th best kept score (a partition, no sort) and entries below it are dropped.
    One sort by (score desc, id asc) at the end gives the top ``depth``.
    """
    nr, bb = len(q), buf.shape[1]
    mask = np.empty(buf.shape, dtype=bool)
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    thr = np.empty((nr, 1), dtype=buf.dtype)
    n_new = 0
    for start in range(0, len(base), bb):
        block = _prepare_block(base[start:start + bb], metric, buf.dtype, start)
        s = np.matmul(q, block.T, out=buf[:nr, :len(block)])
        if metric == "l2":
            s -= 0.5 * np.einsum("ij,ij->i", block, block)
        m = mask[:nr, :len(block)]
        if start == 0:
            thr[:, 0] = _lower_bound(s, depth)
            np.greater_equal(s, thr, out=m)
        else:
            np.greater(s, thr, out=m)
        flat = np.flatnonzero(m)
        rows, cols = np.divmod(flat, s.shape[1])
        kept.append((rows, s[rows, cols], cols + start))
        n_new += len(flat)
        if n_new >= nr * depth or start == 0:
            kept, thr = _prune(kept, nr, depth)
            n_new = 0
    return _top(*map(np.concatenate, zip(*kept, strict=True)), nr, depth)


def _prepare_block(block: np.ndarray, metric: str, dtype: type, offset: int) -> np.ndarray:
    block = np.ascontiguousarray(block, dtype=dtype)
    if metric == "cosine":
        block = normalize_rows(block, "corpus vectors", offset)
    return block


def _lower_bound(s: np.ndarray, depth: int) -> np.ndarray:
    """Per row, the ``depth``-th best score of a column sample (≥ 8·depth columns): a
    threshold no higher than the true ``depth``-th best of the block."""
    stride = max(1, s.shape[1] // (8 * depth))
    sub = s[:, ::stride]
    return np.partition(sub, sub.shape[1] - depth, axis=1)[:, sub.shape[1] - depth]


def _padded(rows: np.ndarray, nr: int, *columns: np.ndarray) -> list[np.ndarray]:
    """Each column as a (n_rows × max count) matrix, entries of a row in their original
    order; −inf (scores) or int64 max (ids) where a row has fewer."""
    order = np.argsort(rows, kind="stable")
    counts = np.bincount(rows, minlength=nr)
    pos = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    r, width, out = rows[order], int(counts.max()), []
    for col in columns:
        fill = -np.inf if col.dtype.kind == "f" else np.iinfo(np.int64).max
        mat = np.full((nr, width), fill, dtype=col.dtype)
        mat[r, pos] = col[order]
        out.append(mat)
    return out


def _prune(kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]], nr: int, depth: int
           ) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray]:
    """New thresholds (the ``depth``-th best kept score per row) and the entries ≥ them."""
    rows, vals, ids = map(np.concatenate, zip(*kept, strict=True))
    (mat,) = _padded(rows, nr, vals)
    thr = np.partition(mat, mat.shape[1] - depth, axis=1)[:, mat.shape[1] - depth:][:, :1]
    keep = vals >= thr[rows, 0]
    return [(rows[keep], vals[keep], ids[keep])], thr


def _top(rows: np.ndarray, vals: np.ndarray, ids: np.ndarray, nr: int, depth: int
         ) -> tuple[np.ndarray, np.ndarray]:
    """Best ``depth`` per row by (score desc, id asc); every row holds ≥ ``depth``.

    Entries of a row arrive in id order (blocks in order, row-major within a block), so a
    stable sort by score alone applies the tie policy.
    """
    mv, mi = _padded(rows, nr, vals, ids)
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
