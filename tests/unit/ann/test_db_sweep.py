"""``run_db_sweep`` through real engines (usearch, sqlite-vec): both recalls, filters,
the silent-exactness flag, the report, bad input."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from searchbench.ann.db_sweep import parse_db_param, run_db_sweep, search_grid
from searchbench.ann.relevance import RelevanceContext
from searchbench.ann.report import render_html, render_markdown
from searchbench.data.qrels import Qrels
from searchbench.db import connect
from searchbench.errors import ConfigError, SearchbenchWarning

from .ann_vectors import brute_force, clustered

if importlib.util.find_spec("usearch") is None:  # not imported here: see the adapter
    pytest.skip("could not import 'usearch'", allow_module_level=True)
pytest.importorskip("sqlite_vec")

FAST = {"repeats": 1, "warmup": 2, "max_single": 20, "concurrency": 2}


@pytest.fixture(scope="module")
def data():
    base, queries = clustered(1500, 40, 24, seed=5)
    ids = [f"doc{i}#0-{100 + i}" for i in range(len(base))]
    return base, queries, ids


def _overlap(found: list[list[str]], truth: list[list[str]], k: int) -> float:
    """First principles: mean |F ∩ G| / k over queries."""
    return float(np.mean([len(set(f[:k]) & set(t[:k])) / k
                          for f, t in zip(found, truth, strict=True)]))


@pytest.fixture()
def usearch_store(tmp_path, data):
    base, _, ids = data
    store = connect(f"usearch://{tmp_path}/u?name=docs")
    store.load(ids, base, metric="cosine")  # usearch's default dtype: bf16
    store.build_index(connectivity=8, expansion_add=16)
    yield store
    store.close()


def test_both_recalls_match_first_principles(usearch_store, data):
    base, queries, ids = data
    result = run_db_sweep(usearch_store, queries, ids, {"expansion_search": [1, 64]},
                          base=base, k=10, **FAST)
    truth_ours = [[ids[j] for j in row] for row in brute_force(base, queries, 10, "cosine")[0]]
    truth_engine = usearch_store.exact_search(queries, 10).ids
    for pt in result.points:
        found = usearch_store.search(queries, 10, params=pt["search"]).ids
        db = pt["db"]
        assert db["knn_recall_vs_engine_exact"]["by_id"]["mean"] == pytest.approx(
            _overlap(found, truth_engine, 10))
        assert db["knn_recall_vs_searchbench_exact"]["by_id"]["mean"] == pytest.approx(
            _overlap(found, truth_ours, 10))
        assert pt["knn_recall"] == db["knn_recall_vs_searchbench_exact"]
        assert db["index_used"] is True and "expansion_search=" in db["plan"]
        assert pt["qps_batch"] > 0 and db["qps_concurrent"] > 0
        assert set(pt["latency_ms"]) == set(db["latency_concurrent_ms"]) == {"p50", "p95",
                                                                            "p99"}
    low, high = (p["db"]["knn_recall_vs_engine_exact"]["by_id"]["mean"] for p in result.points)
    assert low < high
    assert result.meta["db"]["describe"]["index"]["params"]["dtype"] == "bf16"
    assert result.points[0]["build_wall_s"] == usearch_store.describe()["index"][
        "build_seconds"]


def test_sqlite_vec_is_exact_by_design_and_flagged_when_declared_approximate(tmp_path,
                                                                              data):
    base, queries, ids = data
    # one relevant document per query, every other one judged non-relevant (a run almost
    # entirely unjudged would warn: measures.scoring)
    qrels = Qrels.from_dict({f"q{i}": {d: int(d == ids[i * 7]) for d in ids}
                             for i in range(len(queries))})
    ctx = RelevanceContext(ids, [f"q{i}" for i in range(len(queries))], qrels)
    with connect(f"sqlite-vec://{tmp_path}/vec.db?table=docs") as store:
        store.load(ids, base, metric="cosine")
        plain = run_db_sweep(store, queries, ids, base=base, relevance=ctx, **FAST)
        with pytest.warns(SearchbenchWarning, match="silent exactness: 1 of 1 sqlite-vec"):
            declared = run_db_sweep(store, queries, ids, base=base,
                                    expect_approximate=True, **FAST)
    pt = plain.points[0]
    assert pt["exactness"]["flag"] is False and "exact by design" in pt["exactness"]["note"]
    assert pt["knn_recall"]["by_id"]["mean"] == 1.0  # an exact scan finds the exact top 10
    for m in ("nDCG@10", "R@100"):  # the same ranking as exact search: no cost at all
        assert pt["relevance"][m]["delta"] == 0.0
    flag = declared.points[0]["exactness"]
    assert flag["flag"] is True
    assert flag["reasons"] == ["the engine reports that its index was not used",
                               "knn_recall against the engine's exact search is 1.0 on all "
                               "40 queries"]
    assert "SCAN docs VIRTUAL TABLE" in flag["plan"]
    md = render_markdown(declared)
    assert "**Silent exactness**" in md and "SCAN docs VIRTUAL TABLE" in md
    html = render_html(declared)
    assert "<h2>Silent exactness</h2>" in html and "FLAGGED" in html


def test_hnsw_searching_every_node_is_flagged(tmp_path, data):
    """ef ≥ the collection's size makes HNSW visit every node: an exact answer with the
    index 'used' — the case only the recall of exactly 1.0 reveals."""
    base, queries, ids = data
    with connect(f"usearch://{tmp_path}/small") as store:
        store.load(ids[:40], base[:40], metric="l2")
        store.build_index(dtype="f32")
        with pytest.warns(SearchbenchWarning, match="silent exactness"):
            result = run_db_sweep(store, queries, ids[:40], {"expansion_search": ["100"]},
                                  base=base[:40], **FAST)
    ex = result.points[0]["exactness"]
    assert ex["flag"] and ex["index_used"] is True
    assert ex["reasons"] == ["knn_recall against the engine's exact search is 1.0 on all "
                             "40 queries"]
    assert ex["index_state"]["rows_indexed"] == 40


def test_recall_under_a_filter_is_against_the_filtered_exact_search(tmp_path, data):
    base, queries, ids = data
    meta = [{"part": i % 4} for i in range(len(ids))]
    with connect(f"sqlite-vec://{tmp_path}/vec.db") as store:
        store.load(ids, base, metric="l2", metadata=meta)
        result = run_db_sweep(store, queries, ids, base=base, filter="part = 1",
                              **{**FAST, "concurrency": 1})  # one client: calling thread
        hits = store.search(queries, 10, filter="part = 1").ids
    sub = np.arange(1, len(ids), 4)
    want = [[ids[sub[j]] for j in row] for row in brute_force(base[sub], queries, 10, "l2")[0]]
    assert hits == want  # the filtered exact answer, from first principles
    pt = result.points[0]
    assert pt["db"]["knn_recall_vs_searchbench_exact"] is None
    assert pt["knn_recall"]["by_id"]["mean"] == 1.0 and pt["db"]["filter"] == "part = 1"
    assert pt["db"]["concurrency"] == 1 and pt["db"]["concurrent_queries"] == 20
    assert result.meta["ground_truth"]["knn_recall"] == ("the engine's exact search under "
                                                         "the filter")


def test_bad_input(usearch_store, data):
    base, queries, ids = data
    assert parse_db_param("expansion_search=10, 20") == ("expansion_search", ["10", "20"])
    with pytest.raises(ConfigError, match="expected NAME=V1,V2"):
        parse_db_param("expansion_search")
    with pytest.raises(ConfigError, match="valid: expansion_search"):
        search_grid(usearch_store, {"ef": ["10"]})
    with pytest.raises(ConfigError, match="connectivity is a build parameter"):
        search_grid(usearch_store, {"connectivity": ["8"]})
    with pytest.raises(ConfigError, match="expected int, found 'ten'"):
        search_grid(usearch_store, {"expansion_search": ["ten"]})
    with pytest.raises(ConfigError, match=r"10 of its 1500 documents are not stored .e\.g\. "
                                          r"'x0', .* and 10 stored ids are not in it .e\.g\. "
                                          r"'doc0#0-100'"):
        run_db_sweep(usearch_store, queries, ids[10:] + [f"x{i}" for i in range(10)],
                     base=base, **FAST)
    with pytest.raises(ConfigError, match="no filters"):
        run_db_sweep(usearch_store, queries, ids, base=base, filter="a = 1", **FAST)


def test_an_engine_without_exact_search_is_swept_against_searchbench_exact(tmp_path, data):
    """Chroma has no exact mode: recall is against searchbench's exact search (first
    principles here), the engine-exact column is None, and the vectors are required."""
    pytest.importorskip("chromadb")
    base, queries, ids = data
    with connect(f"chroma://{tmp_path}/chroma?collection=docs") as store:
        store.load(ids, base, metric="cosine")
        store.build_index(max_neighbors=4, ef_construction=8)  # weak graph: recall below 1
        result = run_db_sweep(store, queries, ids, {"ef_search": [10]}, base=base, k=10,
                              **FAST)
        truth = [[ids[j] for j in row] for row in brute_force(base, queries, 10, "cosine")[0]]
        found = store.search(queries, 10, params={"ef_search": 10}).ids
        (pt,) = result.points
        assert pt["db"]["knn_recall_vs_engine_exact"] is None
        assert pt["knn_recall"]["by_id"]["mean"] == pytest.approx(_overlap(found, truth, 10))
        assert "no exact search" in render_markdown(result)
        with pytest.raises(ConfigError, match="has no exact search"):
            run_db_sweep(store, queries, ids, {}, k=10, **FAST)
