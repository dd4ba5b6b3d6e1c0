"""Concurrent ``search`` calls (what ``ann sweep --concurrency N`` does: N threads, one query
per call) against every engine, real and embedded or started on 127.0.0.1 / a Unix socket:
each thread's answers must equal the sequential ones."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import searchbench.db as db

from .store_checks import corpus, pgvector_server, redis_server

DATA = corpus(n=2000, dim=32, queries=24)
# a narrow and a wide search setting per engine (answers differ on these Gaussian vectors)
SETTINGS: dict[str, tuple[str, int, int]] = {
    "duckdb": ("hnsw_ef_search", 10, 200), "usearch": ("expansion_search", 10, 200),
    "lancedb": ("ef", 10, 200), "chroma": ("ef_search", 10, 200),
    "qdrant-edge": ("hnsw_ef", 10, 200), "milvus-lite": ("ef", 10, 200),
    "pgvector": ("hnsw.ef_search", 10, 200), "redis": ("EF_RUNTIME", 10, 200),
}
EMBEDDED = {
    "duckdb": ("duckdb_extension_vss", "duckdb://{folder}/vec.duckdb?table=docs"),
    "sqlite-vec": ("sqlite_vec", "sqlite-vec://{folder}/vec.db?table=docs"),
    "usearch": ("usearch", "usearch://{folder}/usearch?name=docs"),
    "lancedb": ("lancedb", "lancedb://{folder}/lance?table=docs"),
    "chroma": ("chromadb", "chroma://{folder}/chroma?collection=docs"),
    "qdrant-edge": ("qdrant_edge", "qdrant-edge://{folder}/qdrant?shard=docs"),
    "milvus-lite": ("milvus_lite", "milvus-lite://{folder}/milvus.db?collection=docs"),
}
BUILD: dict[str, dict[str, int]] = {  # a weak graph, searched even on small data
    "qdrant-edge": {"m": 4, "ef_construct": 8, "full_scan_threshold": 10}}


@contextlib.contextmanager
def _store_url(engine: str, folder: Path) -> Iterator[str]:
    if engine == "pgvector":
        with pgvector_server() as url:
            yield url
    elif engine == "redis":
        with redis_server(folder) as url:
            yield url
    else:
        module, template = EMBEDDED[engine]
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed")
        yield template.format(folder=folder)


@pytest.mark.parametrize("engine", [*EMBEDDED, "pgvector", "redis"])
def test_concurrent_searches_equal_sequential_ones(engine: str, tmp_path: Path) -> None:
    """Four threads, one query per call, alternating a narrow and a wide search setting
    (the engine's default alone where it has none): each answer equals the sequential
    answer at the same setting."""
    with _store_url(engine, tmp_path) as url, db.connect(url) as store:
        store.load(DATA.ids, DATA.vectors, metric="cosine")
        if store.index_kinds:
            store.build_index(**BUILD.get(engine, {}))
        q, n = DATA.queries, len(DATA.queries)
        name, *values = SETTINGS.get(engine, ("", 0))
        grid = [{name: v} if name else {} for v in values]
        # rounds over the queries; within a round the settings alternate, across rounds each
        # query meets each setting
        calls = [(c % n, grid[(c + c // n) % len(grid)]) for c in range(3 * n)]

        def search(call: tuple[int, dict[str, int]]) -> Any:
            i, params = call
            return store.search(q[i:i + 1], 10, params=params)

        sequential = {(i, str(p)): search((i, p)) for i, p in calls}
        if len(grid) > 1:  # the two settings must give different answers somewhere
            assert any(sequential[(i, str(grid[0]))].ids != sequential[(i, str(grid[1]))].ids
                       for i in range(n))
        with ThreadPoolExecutor(max_workers=4) as pool:
            concurrent = list(pool.map(search, calls))
        for (i, p), got in zip(calls, concurrent, strict=True):
            want = sequential[(i, str(p))]
            assert got.ids == want.ids, (i, p)
            np.testing.assert_allclose(got.distances[0], want.distances[0], rtol=1e-6)
