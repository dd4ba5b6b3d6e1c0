"""Does an engine's search setting cap the rows one search returns? And does a
document-level search over a chunked store get k distinct documents? (issue 22 item 5)

    HF_HUB_OFFLINE=1 python benchmarks/db_doc_depth.py [--engines qdrant-edge,lancedb]
        [--part rows,docs] [--k 10]

``rows``: 5,000 seeded vectors (dim 32, cosine): one document of 1,500 chunks around one
point and 700 documents of 5 random chunks; 20 queries near the big document. Per engine,
a sparse index (HNSW m=4, ef_construction=8; IVF with 16 partitions) searched at the
smallest search setting for 20, 80, 320, 1,280 and 5,000 rows: the rows returned (min–max
over the queries). Fewer rows than asked while the store holds more is a *cap*.

``docs``: pyref (79 documents) cut ``tokens:32:4`` (4,600 chunks of the static model's
tokens), loaded with ``load_store`` and the same sparse builds, then ``DbRetriever`` at
``level="doc"``, ``k`` documents, the smallest search setting: rounds, queries widened,
queries left short (``describe()["search"]``) and the warnings the run printed.

Embedded engines live in a temporary folder; Redis is started on 127.0.0.1 and stopped by
its process id.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

import searchbench as sb
from searchbench.db import connect
from searchbench.db.servers import start_redis_stack
from searchbench.retrieval.stores import DbRetriever, load_store

# name -> (URL under {tmp}, index kind, sparse build, smallest search setting)
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "qdrant-edge": ("qdrant-edge://{tmp}/q?shard=docs", "hnsw",
                    {"m": 4, "ef_construct": 8, "full_scan_threshold": 1}, {"hnsw_ef": 1}),
    "lancedb-ivf_pq": ("lancedb://{tmp}/l?table=pq", "ivf_pq",
                       {"num_partitions": 16, "num_sub_vectors": 4}, {"nprobes": 1}),
    "lancedb-ivf_hnsw_sq": ("lancedb://{tmp}/l?table=hn", "ivf_hnsw_sq",
                            {"num_partitions": 16, "m": 4, "ef_construction": 8},
                            {"nprobes": 1, "ef": 1}),
    "chroma": ("chroma://{tmp}/c?collection=docs", "hnsw",
               {"max_neighbors": 4, "ef_construction": 8}, {"ef_search": 1}),
    "milvus-lite-hnsw": ("milvus-lite://{tmp}/m.db?collection=docs", "hnsw",
                         {"M": 4, "efConstruction": 8}, {"ef": 1}),
    "milvus-lite-ivf_flat": ("milvus-lite://{tmp}/m2.db?collection=docs", "ivf_flat",
                             {"nlist": 16}, {"nprobe": 1}),
    "duckdb": ("duckdb://{tmp}/d.duckdb?table=docs", "hnsw",
               {"M": 4, "ef_construction": 8}, {"hnsw_ef_search": 1}),
    "redis": ("{redis}?index=docs", "hnsw", {"M": 4, "EF_CONSTRUCTION": 8}, {"EF_RUNTIME": 1}),
    "usearch": ("usearch://{tmp}/u?name=docs", "hnsw",
                {"connectivity": 4, "expansion_add": 8}, {"expansion_search": 1}),
}
DEPTHS = (20, 80, 320, 1280, 5000)


def seeded() -> tuple[list[str], np.ndarray, np.ndarray]:
    """Ids, vectors and queries of the ``rows`` part."""
    rng = np.random.default_rng(1)
    big = rng.standard_normal(32).astype(np.float32)
    x = np.vstack([big + 0.15 * rng.standard_normal((1500, 32)).astype(np.float32),
                   rng.standard_normal((3500, 32)).astype(np.float32)])
    ids = [f"big#{i}" for i in range(1500)] + [f"d{i // 5}#{i % 5}" for i in range(3500)]
    q = (big + 0.1 * rng.standard_normal((20, 32))).astype(np.float32)
    return ids, x, q


@contextlib.contextmanager
def store_url(name: str, tmp: str) -> Iterator[str]:
    """The engine's URL (a Redis server started for it)."""
    template = CASES[name][0]
    if "{redis}" not in template:
        yield template.format(tmp=tmp)
        return
    with start_redis_stack(f"{tmp}/redis-{time.monotonic_ns()}") as server:
        yield template.format(redis=server.url)


def rows_part(name: str, tmp: str) -> None:
    _, kind, build, small = CASES[name]
    ids, x, q = seeded()
    with store_url(name, tmp) as url, connect(url) as store:
        store.load(ids, x, metric="cosine", batch_size=2000)
        store.build_index(kind, **build)
        cells = []
        for depth in DEPTHS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hits = store.search(q, depth, params=small)
            got = [len(row) for row in hits.ids]
            cells.append(f"{depth}→{min(got)}–{max(got)}")
        print(f"rows {name} {small}: " + "  ".join(cells), flush=True)


def docs_part(name: str, tmp: str, k: int) -> None:
    _, kind, build, small = CASES[name]
    if kind == "ivf_pq":  # pyref's 384-d vectors: 16 sub-vectors of 24
        build = {**build, "num_sub_vectors": 16}
    evalset = sb.load_evalset("pyref")
    with store_url(name, tmp) as url:
        url = url.replace("docs", "pyref").replace("table=pq", "table=pyref_pq")
        load_store(url, evalset, "static", chunk="tokens:32:4", index=kind, params=build,
                   quiet=True)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with DbRetriever(url, params=small, quiet=True) as retriever:
                run = retriever.index(evalset.corpus).search(evalset.queries, k=k, level="doc")
                search = retriever.describe()["search"]
    fewest = min(len(docs) for docs in run.to_dict().values())
    print(f"docs {name} {small} k={k}: rounds {search['rounds']}, widened "
          f"{search['widened']}, short {search['short_answers']} of {search['queries']}, "
          f"fewest documents {fewest}", flush=True)
    for w in seen:
        print(f"    warning: {str(w.message)[:160]}…", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default=",".join(CASES))
    parser.add_argument("--part", default="rows,docs")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="sb-depth-")
    for part in args.part.split(","):
        for name in args.engines.split(","):
            if part == "rows":
                rows_part(name, tmp)
            else:
                docs_part(name, tmp, args.k)


if __name__ == "__main__":
    main()
