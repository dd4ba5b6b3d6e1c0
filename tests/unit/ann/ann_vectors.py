"""Structured vectors for ann tests: clustered, never i.i.d. Gaussian alone."""

from __future__ import annotations

import numpy as np


def clustered(n: int, nq: int, dim: int, n_clusters: int = 20, seed: int = 0,
              spread: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Corpus and queries drawn around shared cluster centres (float32)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, dim))
    base = centres[rng.integers(0, n_clusters, n)] + spread * rng.standard_normal((n, dim))
    qs = centres[rng.integers(0, n_clusters, nq)] + spread * rng.standard_normal((nq, dim))
    return base.astype(np.float32), qs.astype(np.float32)


def brute_force(base: np.ndarray, queries: np.ndarray, k: int, metric: str):
    """Reference: all float64 distances, sorted by (distance, id)."""
    b, q = base.astype(np.float64), queries.astype(np.float64)
    if metric == "ip":
        d = -(q @ b.T)
    elif metric == "cosine":
        bn = b / np.linalg.norm(b, axis=1, keepdims=True)
        qn = q / np.linalg.norm(q, axis=1, keepdims=True)
        d = 1.0 - qn @ bn.T
    else:
        d = ((q[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)
    ids = np.broadcast_to(np.arange(len(b)), d.shape)
    order = np.lexsort((ids, d), axis=-1)[:, :k]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(d, order, axis=1)
