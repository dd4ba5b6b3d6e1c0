"""Recall@10 against each engine's search parameter: DuckDB VSS, Redis Stack, Milvus Lite.

The companion of ``db_engines_recall.py`` (Qdrant edge, LanceDB, Chroma), on the same
seeded clustered vectors (default 20,000 × 64, 100 clusters, cosine). Each engine is loaded
through ``searchbench.db.connect``, its HNSW index built at the engine's default build
settings, and recall@10 measured against searchbench's exact float64 ground truth
(``exact_knn``) and against the engine's own exact search, for every value of its search
knob, with the index use the store reports and the median per-query latency through the
engine's client (a shared 2-core machine: latencies are indicative only). The Redis Stack
server is started on 127.0.0.1 by ``searchbench.db.servers`` and stopped by its pid.
Milvus Lite 3.x is FAISS behind the Milvus API, not the Milvus engine.

    python benchmarks/db_engines_recall_b.py [--n 20000] [--dim 64] [--queries 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import searchbench.db as db
from searchbench.db.servers import start_redis_stack
from searchbench.knn import exact_knn

SWEEPS = {  # label: URL, index kind, build parameters, knob, values
    "duckdb vss hnsw": ("duckdb://{root}/vec.duckdb?table=docs", "hnsw", {},
                        "hnsw_ef_search", [10, 20, 40, 80, 160]),
    "redis stack hnsw": ("{redis}?index=docs", "hnsw", {}, "EF_RUNTIME",
                         [10, 20, 40, 80, 160]),
    "milvus-lite hnsw": ("milvus-lite://{root}/milvus.db?collection=hnsw", "hnsw", {}, "ef",
                         [10, 20, 40, 80, 160]),
    "milvus-lite ivf_flat": ("milvus-lite://{root}/milvus.db?collection=ivf", "ivf_flat", {},
                             "nprobe", [1, 2, 4, 8, 16]),
}


def clustered(n: int, dim: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The same generator as db_engines_recall.py."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(100, dim))
    x = centers[rng.integers(0, 100, n)] + 0.6 * rng.normal(size=(n, dim))
    q = centers[rng.integers(0, 100, queries)] + 0.6 * rng.normal(size=(queries, dim))
    return x.astype(np.float32), q.astype(np.float32)


def _recall(ids: list[list[str]], want: list[set[str]]) -> float:
    return float(np.mean([len(set(h[:10]) & w) / 10 for h, w in zip(ids, want, strict=True)]))


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
          "recall@10 vs searchbench's exact top-10 (and vs the engine's own exact search)")
    with tempfile.TemporaryDirectory() as tmp, start_redis_stack(Path(tmp) / "redis") as srv:
        for label, (url, kind, build_params, knob, values) in SWEEPS.items():
            store = db.connect(url.format(root=tmp, redis=srv.url))
            loaded = store.load(ids, x, metric="cosine", batch_size=2000)
            build = store.build_index(kind, **build_params)
            exact = store.exact_search(q, 10)
            print(f"\n{label} ({store.describe()['engine']}): load {loaded.seconds:.1f} s, "
                  f"build {build:.1f} s; engine exact vs searchbench exact: "
                  f"{_recall(exact.ids, want):.3f}")
            print(f"  {knob:>14}  recall@10  vs engine exact  index_used  p50 ms")
            for value in values:
                start = time.perf_counter()
                hits = store.search(q, 10, params={knob: value})
                took = time.perf_counter() - start
                mine = [set(h[:10]) for h in exact.ids]
                p50 = (np.median(hits.latencies_s) * 1e3 if hits.latencies_s is not None
                       else took / len(q) * 1e3)
                print(f"  {value:>14}  {_recall(hits.ids, want):9.3f}  "
                      f"{_recall(hits.ids, mine):15.3f}  {hits.index_used!s:>10}  {p50:6.2f}")
            store.close()


if __name__ == "__main__":
    main()
