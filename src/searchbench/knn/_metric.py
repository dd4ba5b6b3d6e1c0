"""Metrics and input checks shared by exact k-NN, ANN recall and sweeps.

Every distance in ``searchbench.knn`` and ``searchbench.ann`` is **smaller = closer**:

- ``ip``:     d(q, x) = −⟨q, x⟩
- ``cosine``: d(q, x) = 1 − ⟨q, x⟩ / (‖q‖ ‖x‖)   (ann-benchmarks' "angular")
- ``l2``:     d(q, x) = ‖q − x‖²                 (squared, as FAISS returns it)
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ConfigError, DataFormatError
from ..vocab import canonical_metric

TIE_POLICY = "distance ascending, then id ascending"


def check_metric(metric: str) -> str:
    """Return the canonical metric name or raise :class:`ConfigError` listing the valid ones."""
    return canonical_metric(metric)


def as_matrix(x: object, what: str) -> np.ndarray:
    """A 2-D float array (float32 kept, other floats/ints cast to float32)."""
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise DataFormatError(f"{what}: expected a 2-D array (n, dim), found shape {arr.shape}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float32)
    return arr


def check_finite(x: np.ndarray, what: str, block: int = 65536, offset: int = 0) -> None:
    """Raise :class:`DataFormatError` naming the first row holding NaN or ±inf (``offset``
    is added to the row number)."""
    for start in range(0, len(x), block):
        part = x[start:start + block]
        with np.errstate(over="ignore", invalid="ignore"):
            sums = np.add.reduce(part, axis=1)
        if np.isfinite(sums).all():
            continue  # NaN and ±inf propagate through a sum; overflow is checked below
        ok = np.isfinite(part).all(axis=1)
        if not ok.all():
            row = offset + start + int(np.flatnonzero(~ok)[0])
            raise DataFormatError(f"{what}: row {row} holds NaN or inf; "
                                  "expected finite vectors (drop or fix that row)")


def check_pair(base: np.ndarray, queries: np.ndarray, k: int) -> None:
    """Dimensions agree, 1 ≤ k ≤ corpus size."""
    if base.shape[1] != queries.shape[1]:
        raise DataFormatError(f"dimension mismatch: corpus vectors have dim {base.shape[1]}, "
                              f"queries have dim {queries.shape[1]}; embed both with one model")
    if k < 1 or k > base.shape[0]:
        raise ConfigError(f"k={k} but the corpus holds {base.shape[0]} vectors; "
                          f"expected 1 ≤ k ≤ {base.shape[0]}")
    if len(queries) == 0:
        raise DataFormatError("no query vectors")


def check_knn_inputs(base: object, queries: object, k: int, metric: str,
                     extra: int) -> tuple[np.ndarray, np.ndarray, str]:
    """``(base, queries, metric)`` of an exact k-NN search, checked before any work: a
    known metric (canonical name), two 2-D arrays (:func:`as_matrix`) of one dimension,
    1 ≤ k ≤ corpus size (:func:`check_pair`), ``extra`` ≥ 0."""
    metric = check_metric(metric)
    base, queries = as_matrix(base, "corpus vectors"), as_matrix(queries, "query vectors")
    check_pair(base, queries, k)
    if extra < 0:
        raise ConfigError(f"extra={extra}; expected extra ≥ 0")
    return base, queries, metric


def normalize_rows(x: np.ndarray, what: str, offset: int = 0) -> np.ndarray:
    """Rows scaled to unit L2 norm; a zero row raises (cosine is undefined for it)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    zero = norms[:, 0] == 0
    if zero.any():
        row = offset + int(np.flatnonzero(zero)[0])
        raise DataFormatError(f"{what}: row {row} is a zero vector; cosine is undefined for it")
    return (x / norms).astype(x.dtype, copy=False)


def exact_distances(base: np.ndarray, queries: np.ndarray, ids: np.ndarray,
                    metric: str, chunk: int = 4) -> np.ndarray:
    """Distances (float64) of ``queries[i]`` to ``base[ids[i, j]]``; id −1 gives +inf.

    Rows are gathered in their own dtype for a few queries at a time and reduced with
    float64 accumulation (einsum), so the gathered block stays in cache.
    """
    valid = ids >= 0
    safe = np.where(valid, ids, 0)
    q = np.asarray(queries, dtype=np.float64)
    if metric == "cosine":
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
    out = np.empty(ids.shape, dtype=np.float64)
    for i in range(0, len(ids), chunk):
        out[i:i + chunk] = _pair_distance(q[i:i + chunk], base[safe[i:i + chunk]], metric)
    out[~valid] = np.inf
    return out


def _pair_distance(q: np.ndarray, x: np.ndarray, metric: str) -> np.ndarray:
    """q: (c, d) float64, x: (c, m, d) -> (c, m) float64 distances."""
    f64 = np.float64
    if metric == "l2":
        diff = x - q[:, None, :]
        return np.einsum("cmd,cmd->cm", diff, diff)
    dots = np.einsum("cmd,cd->cm", x, q, dtype=f64)
    if metric == "ip":
        return -dots
    norms = np.sqrt(np.einsum("cmd,cmd->cm", x, x, dtype=f64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - dots / norms


def max_norm(x: np.ndarray, what: str, check: bool = True, block: int = 32768) -> float:
    """Largest row L2 norm (float64), in one blocked pass (blocks on parallel threads);
    with ``check``, NaN or ±inf raises like :func:`check_finite`."""

    def one(start: int) -> float:
        part = x[start:start + block]
        with np.errstate(over="ignore", invalid="ignore"):
            sq = np.einsum("ij,ij->i", part, part)
            if not np.isfinite(sq).all():
                if check:
                    check_finite(part, what, offset=start)
                sq = np.einsum("ij,ij->i", part, part, dtype=np.float64)  # float32 overflow
        if check and not np.isfinite(sq).all():
            row = start + int(np.flatnonzero(~np.isfinite(sq))[0])
            raise DataFormatError(f"{what}: row {row} holds values too large (its squared "
                                  "norm overflows float64); expected finite distances: scale "
                                  "or drop that row")
        return float(sq.max(initial=0.0))

    starts = range(0, len(x), block)
    workers = min(len(starts), os.cpu_count() or 1)
    if workers < 2:
        return float(np.sqrt(max(map(one, starts), default=0.0)))
    from concurrent.futures import ThreadPoolExecutor  # lazy: loads concurrent.futures on first use

    with ThreadPoolExecutor(workers) as pool:  # einsum releases the GIL
        return float(np.sqrt(max(pool.map(one, starts))))
