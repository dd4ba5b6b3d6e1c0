"""Recall@10 against each engine's search parameter, for every local engine.

Qdrant edge, LanceDB, Chroma, DuckDB VSS, Redis Stack and Milvus Lite get the same seeded
clustered vectors (default 20,000 × 64, 100 clusters, cosine) through
``searchbench.db.connect``; each index is built at the engine's default build settings
(Qdrant also with a lower ``full_scan_threshold``), and recall@10 is measured against
searchbench's exact float64 ground truth (``exact_knn``) and against the engine's own exact
search (where it has one) for every value of the engine's search knob, with the index use
the store reports and the median per-query latency through the engine's client (a shared
2-core machine: latencies are indicative only). The Redis Stack server is started on
127.0.0.1 by ``searchbench.db.servers`` and stopped by its pid. Milvus Lite 3.x is FAISS
behind the Milvus API, not the Milvus engine.

    python benchmarks/db_engines_recall.py [--n 20000] [--dim 64] [--queries 200]
        [--engines qdrant-edge,lancedb,chroma,duckdb,redis,milvus-lite]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

import numpy as np

import searchbench.db as db
from searchbench.knn import exact_knn

KNOB = [10, 20, 40, 80, 160]
SWEEPS = {  # label: engine, URL, index kind, build params, fixed search params, knob, values
    "qdrant-edge": ("qdrant-edge", "qdrant-edge://{root}/qdrant?shard=docs", "hnsw", {}, {},
                    "hnsw_ef", KNOB),
    "qdrant-edge full_scan_threshold=1000": (
        "qdrant-edge", "qdrant-edge://{root}/qdrant?shard=docs", "hnsw",
        {"full_scan_threshold": 1000}, {}, "hnsw_ef", KNOB),
    "lancedb ivf_hnsw_sq": ("lancedb", "lancedb://{root}/lance?table=hnsw", "ivf_hnsw_sq", {},
                            {}, "ef", KNOB),
    "lancedb ivf_pq": ("lancedb", "lancedb://{root}/lance?table=pq", "ivf_pq", {}, {},
                       "nprobes", [1, 2, 5, 10, 20]),
    "lancedb ivf_pq refine_factor=10": ("lancedb", "lancedb://{root}/lance?table=pq", None, {},
                                        {"refine_factor": 10}, "nprobes", [1, 2, 5, 10, 20]),
    "chroma": ("chroma", "chroma://{root}/chroma?collection=docs", "hnsw", {}, {}, "ef_search",
               KNOB),
    "duckdb vss hnsw": ("duckdb", "duckdb://{root}/vec.duckdb?table=docs", "hnsw", {}, {},
                        "hnsw_ef_search", KNOB),
    "redis stack hnsw": ("redis", "{redis}?index=docs", "hnsw", {}, {}, "EF_RUNTIME", KNOB),
    "milvus-lite hnsw": ("milvus-lite", "milvus-lite://{root}/milvus.db?collection=hnsw",
                         "hnsw", {}, {}, "ef", KNOB),
    "milvus-lite ivf_flat": ("milvus-lite", "milvus-lite://{root}/milvus.db?collection=ivf",
                             "ivf_flat", {}, {}, "nprobe", [1, 2, 4, 8, 16]),
}
ENGINES = sorted({engine for engine, *_ in SWEEPS.values()})


def clustered(n: int, dim: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(100, dim))
    x = centers[rng.integers(0, 100, n)] + 0.6 * rng.normal(size=(n, dim))
    q = centers[rng.integers(0, 100, queries)] + 0.6 * rng.normal(size=(queries, dim))
    return x.astype(np.float32), q.astype(np.float32)


def _recall(ids: list[list[str]], want: list[set[str]]) -> float:
    return float(np.mean([len(set(h[:10]) & w) / 10 for h, w in zip(ids, want, strict=True)]))


def _sweep(store: db.VectorStore, q: np.ndarray, want: list[set[str]], fixed: dict,
           knob: str, values: list[int]) -> None:
    mine = [set(h[:10]) for h in store.exact_search(q, 10).ids] if store.has_exact else None
    if mine is not None:
        print(f"  engine exact vs searchbench exact: {_recall([list(m) for m in mine], want):.3f}")
    print(f"  {knob:>14}  recall@10  vs engine exact  index_used  p50 ms")
    for value in values:
        start = time.perf_counter()
        hits = store.search(q, 10, params={**fixed, knob: value})
        took = time.perf_counter() - start
        p50 = (np.median(hits.latencies_s) * 1e3 if hits.latencies_s is not None
               else took / len(q) * 1e3)
        vs_engine = f"{_recall(hits.ids, mine):15.3f}" if mine is not None else f"{'n/a':>15}"
        print(f"  {value:>14}  {_recall(hits.ids, want):9.3f}  {vs_engine}  "
              f"{hits.index_used!s:>10}  {p50:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help=f"comma-separated subset of {', '.join(ENGINES)}")
    args = parser.parse_args()
    chosen = set(args.engines.split(","))
    x, q = clustered(args.n, args.dim, args.queries)
    ids = [f"doc{i}#0-100" for i in range(args.n)]
    truth = exact_knn(x, q, 10, "cosine")
    want = [{ids[j] for j in row[:10]} for row in truth.ids]
    print(f"{args.n} × {args.dim} clustered vectors, {args.queries} queries, cosine, "
          "recall@10 vs searchbench's exact top-10 (and vs the engine's own exact search)")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        redis_url = ""
        if "redis" in chosen:
            from searchbench.db.servers import start_redis_stack

            redis_url = stack.enter_context(start_redis_stack(Path(tmp) / "redis")).url
        for label, (engine, url, kind, build_params, fixed, knob, values) in SWEEPS.items():
            if engine not in chosen:
                continue
            store = db.connect(url.format(root=tmp, redis=redis_url))
            loaded = store.load(ids, x, metric="cosine", batch_size=2000)
            build = store.build_index(kind, **build_params) if kind else 0.0
            print(f"\n{label} ({store.describe().get('engine', engine)}): load "
                  f"{loaded.seconds:.1f} s ({loaded.added} added), build {build:.1f} s")
            _sweep(store, q, want, fixed, knob, values)
            store.close()


if __name__ == "__main__":
    main()
