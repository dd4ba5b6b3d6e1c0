"""Recall@10 against each engine's search parameter: Qdrant edge, LanceDB, Chroma.

The same seeded clustered vectors (default 20,000 × 64, 100 clusters, cosine) go into each
engine through ``searchbench.db.connect``; each index is built at the engine's default
build settings (Qdrant also with a lower ``full_scan_threshold``); recall@10 is measured
against searchbench's exact float64 ground truth (``exact_knn``) for every value of the
engine's search knob, with the index use the store reports and the wall time of one
batched search (not a latency benchmark: the machine is shared).

    python benchmarks/db_engines_recall.py [--n 20000] [--dim 64] [--queries 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import searchbench.db as db
from searchbench.knn import exact_knn

SWEEPS = {  # label: URL, index kind, build parameters, fixed search parameters, knob, values
    "qdrant-edge": ("qdrant-edge://{root}?shard=docs", "hnsw", {}, {}, "hnsw_ef",
                    [10, 20, 40, 80, 160]),
    "qdrant-edge full_scan_threshold=1000": ("qdrant-edge://{root}?shard=docs", "hnsw",
                                             {"full_scan_threshold": 1000}, {}, "hnsw_ef",
                                             [10, 20, 40, 80, 160]),
    "lancedb ivf_hnsw_sq": ("lancedb://{root}?table=hnsw", "ivf_hnsw_sq", {}, {}, "ef",
                            [10, 20, 40, 80, 160]),
    "lancedb ivf_pq": ("lancedb://{root}?table=pq", "ivf_pq", {}, {}, "nprobes",
                       [1, 2, 5, 10, 20]),
    "lancedb ivf_pq refine_factor=10": ("lancedb://{root}?table=pq", None, {},
                                        {"refine_factor": 10}, "nprobes", [1, 2, 5, 10, 20]),
    "chroma": ("chroma://{root}?collection=docs", "hnsw", {}, {}, "ef_search",
               [10, 20, 40, 80, 160]),
}


def clustered(n: int, dim: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(100, dim))
    x = centers[rng.integers(0, 100, n)] + 0.6 * rng.normal(size=(n, dim))
    q = centers[rng.integers(0, 100, queries)] + 0.6 * rng.normal(size=(queries, dim))
    return x.astype(np.float32), q.astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    x, q = clustered(args.n, args.dim, args.queries)
    ids = [f"doc{i}#0-100" for i in range(args.n)]
    truth = exact_knn(x, q, 10, "cosine")
    want = [{ids[j] for j in row[:10]} for row in truth.ids]
    print(f"{args.n} × {args.dim} clustered vectors, {args.queries} queries, cosine, "
          "recall@10 vs searchbench's exact top-10")
    with tempfile.TemporaryDirectory() as tmp:
        for label, (url, kind, build_params, fixed, knob, values) in SWEEPS.items():
            store = db.connect(url.format(root=Path(tmp)))
            loaded = store.load(ids, x, metric="cosine", batch_size=2000)
            build = store.build_index(kind, **build_params) if kind else 0.0
            print(f"\n{label}: load {loaded.seconds:.1f} s ({loaded.added} added), "
                  f"build {build:.1f} s")
            print(f"  {knob:>10}  recall@10  index_used  search s")
            for value in values:
                start = time.perf_counter()
                hits = store.search(q, 10, params={**fixed, knob: value})
                took = time.perf_counter() - start
                rec = np.mean([len(set(h) & w) / 10 for h, w in zip(hits.ids, want,
                                                                     strict=True)])
                print(f"  {value:>10}  {rec:9.3f}  {hits.index_used!s:>10}  {took:8.2f}")
            store.close()


if __name__ == "__main__":
    main()
