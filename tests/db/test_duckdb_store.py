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


def test_the_index_answers_and_the_exact_scan_does_not(built) -> None:
    exact = built.exact_search(QUERIES, 10)
    assert exact.index_used is False and "HNSW_INDEX_SCAN" not in exact.plan
    points = [built.search(QUERIES, 10, params={"hnsw_ef_search": ef}) for ef in (10, 400)]
    assert all(h.index_used is True and "HNSW_INDEX_SCAN" in h.plan for h in points)
    assert [h.params["hnsw_ef_search"] for h in points] == [10, 400]
    assert recall(points[0], exact, 10) < recall(points[1], exact, 10)
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
