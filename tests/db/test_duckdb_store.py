"""DuckDB + vss against the real engine (embedded): exactness, recall, resume, validation."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("duckdb_extension_vss")

import searchbench.db as db
from searchbench.errors import (
    BackendError,
    ConfigError,
    DataFormatError,
    MissingDependencyError,
    SearchbenchWarning,
)

from ._seeded import (
    assert_exact,
    categories,
    check_cli_on_pyref,
    corpus,
    dense_reference,
    queries,
    recall,
)

IDS, VECTORS = corpus()
QUERIES = queries(VECTORS)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """3,000 vectors, cosine, HNSW with a small graph (so recall visibly depends on ef)."""
    path = tmp_path_factory.mktemp("duckdb") / "vec.duckdb"
    store = db.connect(f"duckdb://{path}?table=docs")
    store.load(IDS, VECTORS, metric="cosine", metadata=categories(len(IDS)),
               provenance={"model": "seeded-gaussian", "dim": 64})
    store.build_index(M=8, ef_construction=16)
    yield store
    store.close()


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_exact_search_equals_exact_knn(tmp_path: Path, metric: str) -> None:
    with db.connect(f"duckdb://{tmp_path}/e.duckdb?table=t") as store:
        store.load(IDS[:800], VECTORS[:800], metric=metric)
        store.build_index(M=4, ef_construction=8)
        hits = store.exact_search(QUERIES, 10)
    assert hits.index_used is False and "HNSW_INDEX_SCAN" not in hits.plan
    assert_exact(hits, IDS, VECTORS[:800], QUERIES, 10, metric)


def test_recall_rises_with_ef_search_and_index_is_used(built) -> None:
    exact = built.exact_search(QUERIES, 10)
    assert_exact(exact, IDS, VECTORS, QUERIES, 10, "cosine")
    points = [built.search(QUERIES, 10, params={"hnsw_ef_search": ef}) for ef in (10, 40, 400)]
    assert all(h.index_used is True and "HNSW_INDEX_SCAN" in h.plan for h in points)
    assert [h.params["hnsw_ef_search"] for h in points] == [10, 40, 400]
    recalls = [recall(h, exact, 10) for h in points]
    assert recalls[0] < recalls[1] < recalls[2], recalls
    assert recalls[0] < 0.8 and recalls[2] >= 0.95, recalls
    assert len(points[0].latencies_s) == len(QUERIES)


def test_filter_is_applied_after_the_hnsw_search(built) -> None:
    """WHERE runs on the index's top-k: a 2 % filter keeps ~0.2 of 10 rows, whatever ef."""
    where = "meta->>'cat' = 'rare'"
    exact = built.exact_search(QUERIES, 10, filter=where)
    rare = np.flatnonzero([i % 50 == 0 for i in range(len(IDS))])
    assert_exact(exact, IDS, VECTORS, QUERIES, 10, "cosine", rows=rare)
    for ef in (40, 2000):
        with pytest.warns(SearchbenchWarning, match="fewer than 10 results"):
            ann = built.search(QUERIES, 10, params={"hnsw_ef_search": ef}, filter=where)
        assert ann.index_used is True
        assert np.mean([len(r) for r in ann.ids]) < 1  # the trap, reported, not hidden


def test_ids_round_trip_and_describe(built) -> None:
    assert sorted(built.stored_ids()) == sorted(IDS)
    odd = [IDS.index(i) for i in IDS[-6:]]
    hits = built.exact_search(VECTORS[odd], 1)
    assert [h[0] for h in hits.ids] == IDS[-6:]
    info = built.describe()
    assert info["provenance"]["model"] == "seeded-gaussian"
    assert info["provenance"]["index"]["params"] == {"M": 8, "M0": 16, "ef_construction": 16}
    assert (info["dim"], info["metric"], info["count"]) == (64, "cosine", len(IDS))
    assert info["index"]["params"] == {"M": 8, "M0": 16, "ef_construction": 16}
    assert info["engine"].startswith("duckdb 1.")


def test_resume_after_an_interrupted_load_adds_no_duplicates(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path}/r.duckdb?table=docs"
    with db.connect(url) as store:  # the first run died after 1,000 committed rows
        first = store.load(IDS[:1000], VECTORS[:1000], metric="cosine", batch_size=250)
    assert (first.added, first.total) == (1000, 1000)
    with db.connect(url) as store:
        again = store.load(IDS, VECTORS, metric="cosine", batch_size=250)
        assert (again.added, again.skipped_existing, again.total) == (2000, 1000, 3000)
        assert store.load(IDS, VECTORS, metric="cosine").added == 0
        assert sorted(store.stored_ids()) == sorted(IDS)


def test_other_dimension_or_metric_is_refused(tmp_path: Path) -> None:
    with db.connect(f"duckdb://{tmp_path}/m.duckdb?table=docs") as store:
        store.load(IDS[:10], VECTORS[:10], metric="cosine")
        with pytest.raises(ConfigError, match="dim 64 / metric cosine"):
            store.load(IDS[:10], VECTORS[:10, :32], metric="cosine")
        with pytest.raises(ConfigError, match="metric l2"):
            store.load(IDS[:10], VECTORS[:10], metric="l2")
        with pytest.raises(DataFormatError, match="dim 32"):
            store.search(VECTORS[:2, :32], 3)
        assert store.count() == 10


def test_parameters_are_validated(built) -> None:
    with pytest.raises(ConfigError, match="valid: hnsw_ef_search"):
        built.search(QUERIES[:1], 3, params={"ef": 10})
    with pytest.raises(ConfigError, match="valid: M, M0, ef_construction"):
        built.build_index(ef_search=3)
    with pytest.raises(ConfigError, match="expected int"):
        built.search(QUERIES[:1], 3, params={"hnsw_ef_search": "many"})
    with pytest.raises(ConfigError, match="not a plain name"):
        db.connect("duckdb://./x.duckdb?table=docs;drop")


def test_unopenable_database_is_a_backend_error(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="does not exist"):
        db.connect(f"duckdb://{tmp_path}/missing/dir/v.duckdb?table=docs")


@pytest.mark.slow
def test_cli_load_and_run_on_pyref(tmp_path: Path,
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    side = check_cli_on_pyref(f"duckdb://{tmp_path}/pyref.duckdb?table=pyref", tmp_path,
                              dense_reference(tmp_path_factory.getbasetemp()),
                              ["M=8", "ef_construction=32"], "hnsw_ef_search=200",
                              "valid: hnsw_ef_search")
    search = side["retrieval"]["search"]
    assert search["params"] == {"hnsw_ef_search": 200} and search["index_used"] is True
    index = side["retrieval"]["store"]["provenance"]["index"]
    assert index["params"] == {"M": 8, "M0": 16, "ef_construction": 32}


def test_a_missing_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb_extension_vss", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"searchbench\[duckdb\]"):
        db.connect(f"duckdb://{tmp_path}/v.duckdb?table=docs")
