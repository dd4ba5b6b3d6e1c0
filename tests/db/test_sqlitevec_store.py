"""sqlite-vec adapter against the real extension: exact answers, filters, resume, bad input."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from searchbench.db import connect
from searchbench.errors import ConfigError, DataFormatError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "ann"))
from ann_vectors import brute_force, clustered

pytest.importorskip("sqlite_vec")


def _ids(n: int) -> list[str]:
    return [f"doc{i}#0-120" if i % 2 else f"d-{i}" for i in range(n)]


def _meta(n: int) -> list[dict]:
    return [{"cat": "a" if i % 3 == 0 else "b", "year": 2000 + i % 25} for i in range(n)]


@pytest.fixture(scope="module")
def data():
    return clustered(1200, 25, 16, seed=11)


def test_search_is_the_exact_scan_and_describe_says_so(tmp_path, data):
    base, queries = data
    ids = _ids(len(base))
    with connect(f"sqlite-vec://{tmp_path}/vec.db?table=docs") as store:
        store.load(ids, base, metric="l2", texts=[f"t{i}" for i in range(len(ids))])
        hits = store.search(queries, 10)
        info = store.describe()
    assert hits.index_used is False and "SCAN docs VIRTUAL TABLE" in hits.plan
    assert info["count"] == 1200 and info["metric"] == "l2" and info["dim"] == 16
    assert info["index"]["kind"] is None and info["size_bytes"] > 0


def test_filter_is_the_exact_answer_on_the_matching_rows(tmp_path, data):
    base, queries = data
    ids, meta = _ids(len(base)), _meta(len(base))
    keep = np.array([m["cat"] == "a" and m["year"] >= 2010 for m in meta])
    with connect(f"sqlite-vec://{tmp_path}/vec.db?table=docs") as store:
        store.load(ids, base, metric="cosine", metadata=meta)
        hits = store.search(queries, 5, filter="cat = 'a' AND year >= 2010")
    sub = np.flatnonzero(keep)
    want, _ = brute_force(base[sub], queries, 5, "cosine")
    assert hits.ids == [[ids[sub[j]] for j in row] for row in want]


def test_a_batch_that_fails_leaves_the_earlier_ones(tmp_path, data):
    base, _ = data
    ids, meta = _ids(len(base)), _meta(len(base))
    broken = [dict(m) for m in meta]
    del broken[700]["year"]  # the batch holding row 700 fails; the first two are committed
    url = f"sqlite-vec://{tmp_path}/vec.db?table=docs"
    with connect(url) as store:
        with pytest.raises(DataFormatError, match="lacks 'year'"):
            store.load(ids, base, metric="l2", metadata=broken, batch_size=300)
        assert store.count() == 600
        report = store.load(ids, base, metric="l2", metadata=meta, batch_size=300)
        assert (report.added, report.skipped_existing, report.total) == (600, 600, 1200)


def test_threads_each_get_their_connection(tmp_path, data):
    base, queries = data
    ids = _ids(len(base))
    with connect(f"sqlite-vec://{tmp_path}/vec.db") as store:
        store.load(ids, base, metric="cosine")
        alone = store.search(queries, 5).ids
        got: dict[int, list] = {}

        def work(i: int) -> None:
            got[i] = store.search(queries[i:i + 1], 5).ids[0]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(queries))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [got[i] for i in range(len(queries))] == alone


def test_a_table_made_by_other_software(tmp_path, data):
    from searchbench.db.engines.sqlitevec import sqlite_module

    base, queries = data
    import sqlite_vec

    conn = sqlite_module().connect(str(tmp_path / "own.db"))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.execute("CREATE VIRTUAL TABLE items USING vec0(doc_id text primary key, "
                 "vec float[16])")  # vec0's default metric: l2
    with conn:
        conn.executemany("INSERT INTO items(doc_id, vec) VALUES (?, ?)",
                         [(f"x{i}", base[i].tobytes()) for i in range(len(base))])
    conn.close()
    with connect(f"sqlite-vec://{tmp_path}/own.db?table=items") as store:
        info = store.describe()
        hits = store.search(queries, 3)
    want, _ = brute_force(base, queries, 3, "l2")
    assert info["metric"] == "l2" and info["count"] == len(base)
    assert hits.ids == [[f"x{j}" for j in row] for row in want]


def test_what_sqlite_vec_refuses(tmp_path, data):
    base, queries = data
    ids = _ids(len(base))
    with connect(f"sqlite-vec://{tmp_path}/vec.db?table=docs") as store:
        store.load(ids[:50], base[:50], metric="cosine")
        with pytest.raises(ConfigError, match="unknown search parameter 'ef_search' for "
                                              "sqlite-vec; valid: none"):
            store.search(queries, 3, params={"ef_search": 40})
        with pytest.raises(ConfigError, match="no ANN index"):
            store.build_index("hnsw")
        with pytest.raises(ConfigError, match=r"rejected the query .filter 'color = 1'.*"
                                              r"no such column: color"):
            store.search(queries, 3, filter="color = 1")
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(ConfigError, match="no store at 'table other in"):
        connect(f"sqlite-vec://{tmp_path}/vec.db?table=other").search(queries, 3)
    with pytest.raises(ConfigError, match="is not a plain name"):
        connect(f"sqlite-vec://{tmp_path}/vec.db?table=x;drop")


@pytest.mark.parametrize("index", [[], ["--index", "default"]])
def test_db_load_with_the_default_index_loads_exact_only(tmp_path, index):
    """sqlite-vec has no ANN index kinds: the default `db load` must load and say so."""
    from ._seeded import cli

    url = f"sqlite-vec://{tmp_path}/vec.db?table=docs"
    done = cli("db", "load", "pyref", url, "--model", "static", *index, "-q")
    assert done.returncode == 0, done.stderr
    assert "79 added, 0 already stored, 79 rows" in done.stdout
    assert "no ANN index (sqlite-vec searches exactly)" in done.stdout
    named = cli("db", "load", "pyref", url, "--model", "static", "--index",
                "hnsw", "-q")
    assert named.returncode == 1 and named.stderr.startswith("error: --index 'hnsw'")


def test_run_on_an_exact_only_engine_does_not_warn_about_the_index(tmp_path):
    """The 'ANN index did not answer' warning is for engines that have an index."""
    from ._seeded import cli

    url = f"sqlite-vec://{tmp_path}/vec.db?table=docs"
    loaded = cli("db", "load", "pyref", url, "--model", "static", "-q")
    assert loaded.returncode == 0, loaded.stderr
    out = tmp_path / "db.trec"
    ran = cli("run", "pyref", "--retriever", "db", "--db", url, "-k", "10", "-o", str(out))
    assert ran.returncode == 0, ran.stderr
    assert "did not answer" not in ran.stderr
    assert len(out.read_text().splitlines()) > 0
