"""Seeded data and reference checks shared by the engine tests (DuckDB, Redis, Milvus).

Reference answers come from :func:`searchbench.knn.exact_knn` (float64-verified numpy/faiss
exact search), never from the engine under test.
"""

from __future__ import annotations

import numpy as np

from searchbench.db import StoreHits
from searchbench.knn import exact_knn

# ids an engine must keep byte for byte: chunk ids, spaces, quotes, glob and URL characters
ODD_IDS = ["doc#0-120", "doc#120-240", "a b/ü#3-9", "it's \"quoted\"", "x*?[]:{}", "k=v&w"]


def corpus(n: int = 3000, dim: int = 64, seed: int = 7) -> tuple[list[str], np.ndarray]:
    """``n`` seeded Gaussian vectors (float32) and string ids ``d<i>#0-120`` (+ odd ones)."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    ids = [f"d{i:05d}#0-120" for i in range(n - len(ODD_IDS))] + ODD_IDS
    return ids, vectors


def queries(vectors: np.ndarray, nq: int = 40, seed: int = 8) -> np.ndarray:
    """Queries near stored vectors (so neighbours are meaningful), float32."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(vectors), nq, replace=False)
    noise = rng.standard_normal((nq, vectors.shape[1])).astype(np.float32)
    return (vectors[rows] + 0.5 * noise).astype(np.float32)


def categories(n: int) -> list[dict[str, object]]:
    """Metadata: ``cat`` = "rare" for every 50th row (2 %), else "common"; ``n`` = row."""
    return [{"cat": "rare" if i % 50 == 0 else "common", "n": i} for i in range(n)]


def assert_exact(hits: StoreHits, ids: list[str], base: np.ndarray, q: np.ndarray, k: int,
                 metric: str, rows: np.ndarray | None = None, tol: float = 2e-5) -> None:
    """The engine's exact answer equals exact_knn: same ids (up to float32 near-ties) and
    distances within ``tol`` (relative to the distances' scale)."""
    subset = np.arange(len(base)) if rows is None else rows
    gt = exact_knn(base[subset], q, k, metric, extra=0)
    scale = max(1.0, float(np.abs(gt.distances).max()))
    for i in range(len(q)):
        want_ids = [ids[subset[j]] for j in gt.ids[i][:k]]
        got = hits.ids[i]
        assert len(got) == k, (i, got)
        np.testing.assert_allclose(hits.distances[i], gt.distances[i][:k], atol=tol * scale,
                                   rtol=0)
        # an id may differ only where two reference distances are within float32 noise
        for rank, (a, b) in enumerate(zip(got, want_ids, strict=True)):
            if a != b:
                d = gt.distances[i]
                near = np.abs(d - d[rank]) <= tol * scale
                assert a in {ids[subset[j]] for j in np.flatnonzero(near)} | set(want_ids), \
                    (i, rank, a, b)


def recall(hits: StoreHits, reference: StoreHits, k: int) -> float:
    """Mean |approximate ∩ exact| / k over the queries."""
    return float(np.mean([len(set(a[:k]) & set(b[:k])) / k
                          for a, b in zip(hits.ids, reference.ids, strict=True)]))
