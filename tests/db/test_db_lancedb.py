"""LanceDB embedded, real tables in tmp_path."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from .store_checks import (
    Corpus,
    assert_exact,
    check_cli_on_pyref,
    check_provenance_merges,
    corpus,
    recall,
)

pytest.importorskip("lancedb")

import searchbench.db as db
from searchbench.errors import (
    ConfigError,
    DataFormatError,
    MissingDependencyError,
    SearchbenchWarning,
)
from searchbench.knn import exact_knn


@pytest.fixture(scope="module")
def data() -> Corpus:
    return corpus()


@pytest.fixture(scope="module")
def table(tmp_path_factory, data):
    """One cosine table, loaded with text and metadata columns."""
    root = tmp_path_factory.mktemp("lance")
    store = db.connect(f"lancedb://{root}?table=docs")
    store.load(data.ids, data.vectors, metric="cosine", metadata=data.metadata,
               texts=data.texts, provenance={"model": "seeded-gaussian"})
    yield store
    store.close()


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_exact_search_equals_exact_knn(tmp_path, data, metric):
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        store.load(data.ids, data.vectors, metric=metric, batch_size=700)
        hits = store.exact_search(data.queries, 10)
        assert hits.index_used is False and "KNNVectorDistance" in hits.plan
        assert_exact(hits, data, 10, metric)
        assert sorted(store.stored_ids()) == sorted(data.ids)


def test_hnsw_recall_rises_with_ef(table, data):
    unbuilt = table.search(data.queries, 10)
    assert unbuilt.index_used is False and recall(unbuilt, data, 10, "cosine") == 1.0
    table.build_index("ivf_hnsw_sq", num_partitions=1, m=4, ef_construction=8)
    got = []
    for ef in (10, 40, 160):
        hits = table.search(data.queries, 10, params={"ef": ef})
        assert hits.index_used is True and "ANNSubIndex" in hits.plan
        got.append(recall(hits, data, 10, "cosine"))
    assert got[0] < got[1] < got[2] and got[0] < 0.6 and got[2] > 0.6, got


def test_pq_needs_refine_and_refined_distances_are_exact(table, data):
    table.build_index("ivf_pq", num_partitions=8, num_sub_vectors=4)
    coarse = table.search(data.queries, 10, params={"nprobes": 8})
    refined = table.search(data.queries, 10, params={"nprobes": 8, "refine_factor": 10})
    assert coarse.index_used and refined.index_used
    assert "estimates" in coarse.plan and "estimates" not in refined.plan
    assert recall(coarse, data, 10, "cosine") < 0.6 < recall(refined, data, 10, "cosine")
    pos = {doc: i for i, doc in enumerate(data.ids)}
    for i, row in enumerate(refined.ids):  # 1 − cos of the returned rows, from first principles
        x = data.vectors[[pos[d] for d in row]].astype(np.float64)
        q = data.queries[i].astype(np.float64)
        want = 1 - x @ q / np.linalg.norm(x, axis=1) / np.linalg.norm(q)
        np.testing.assert_allclose(refined.distances[i], want, atol=1e-5)


def test_sql_filter_and_rows_added_after_the_build(tmp_path, data):
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        store.load(data.ids[:1500], data.vectors[:1500], metric="l2",
                   metadata=data.metadata[:1500])
        store.build_index("ivf_hnsw_sq", num_partitions=1, m=4, ef_construction=16)
        store.load(data.ids, data.vectors, metric="l2", metadata=data.metadata)
        hits = store.search(data.queries, 10)
        assert hits.index_used is True and "500 rows added after the build" in hits.plan
        only = store.exact_search(data.queries, 5, filter="cat = 3 AND lang = 'en'")
        mask = np.array([m["cat"] == 3 and m["lang"] == "en" for m in data.metadata])
        assert recall(only, data, 5, "l2", mask) == 1.0
        with pytest.raises(ConfigError, match="LanceDB table"):
            store.search(data.queries, 5, filter="cat ===")


def test_index_of_another_metric_is_not_used_and_says_so(tmp_path, data):
    lancedb = pytest.importorskip("lancedb")
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        store.load(data.ids, data.vectors, metric="cosine")
    from lancedb.index import IvfHnswSq

    lancedb.connect(str(tmp_path)).open_table("t").create_index(
        "vector", config=IvfHnswSq(distance_type="l2", num_partitions=1, m=4, ef_construction=16))
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        hits = store.search(data.queries, 10, params={"ef": 10})
        assert hits.index_used is False and "ANNSubIndex" not in hits.plan
        assert_exact(hits, data, 10, "cosine")


def test_resume_after_interrupted_load_adds_no_duplicates(tmp_path, data):
    url = f"lancedb://{tmp_path}?table=t"
    with db.connect(url) as store:
        store.load(data.ids[:900], data.vectors[:900], metric="ip", texts=data.texts[:900],
                   batch_size=300)
    with db.connect(url) as store:
        again = store.load(data.ids, data.vectors, metric="ip", texts=data.texts)
        assert (again.added, again.skipped_existing, again.total) == (1100, 900, 2000)
        assert sorted(store.stored_ids()) == sorted(data.ids)
        truth = exact_knn(data.vectors, data.queries, 5, "ip")
        hits = store.exact_search(data.queries, 5)
        assert hits.ids[0] == [data.ids[j] for j in truth.ids[0, :5]]


def test_other_dimension_or_metric_is_refused(tmp_path, data):
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        store.load(data.ids[:10], data.vectors[:10], metric="cosine")
        with pytest.raises(ConfigError, match=r"metric cosine.*metric l2"):
            store.load(data.ids[:10], data.vectors[:10], metric="l2")
        with pytest.raises(ConfigError, match=r"dim 32.*dim 8"):
            store.load(data.ids[:10], data.vectors[:10, :8], metric="cosine")
        with pytest.raises(DataFormatError, match="dim 8"):
            store.search(data.queries[:, :8], 3)


def test_parameters_are_validated(table):
    q = np.ones((1, 32), np.float32)
    with pytest.raises(ConfigError, match="valid: ef, fast_search, maximum_nprobes, nprobes, "
                                          "refine_factor"):
        table.search(q, 3, params={"ef_search": 10})
    with pytest.raises(ConfigError, match="expected int"):
        table.search(q, 3, params={"nprobes": "all"})
    with pytest.raises(ConfigError, match="does not apply to ivf_pq"):
        table.build_index("ivf_pq", m=8)
    with pytest.raises(ConfigError, match="expected one of ivf_hnsw_sq, ivf_pq"):
        table.build_index("hnsw")


def test_describe_holds_provenance(table):
    info = table.describe()
    assert info["provenance"]["model"] == "seeded-gaussian"
    assert (info["dim"], info["metric"], info["count"]) == (32, "cosine", 2000)
    json.dumps(info)


def test_bad_url_and_missing_table(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="valid: table"):
        db.connect(f"lancedb://{tmp_path}?collection=x")
    with pytest.raises(ConfigError, match="no store at"):
        db.connect(f"lancedb://{tmp_path}?table=none", must_exist=True)
    monkeypatch.setitem(sys.modules, "lancedb", None)
    with pytest.raises(MissingDependencyError, match=r"searchbench\[lancedb\]"):
        db.connect(f"lancedb://{tmp_path}?table=t")


def test_provenance_merges_across_loads(tmp_path, data):
    check_provenance_merges(f"lancedb://{tmp_path}?table=p", data)


def test_cli_load_and_run_on_pyref(tmp_path, capsys):
    """The IVF_HNSW_SQ index answers (plan: ANNSubIndex); ef below k is raised to k."""
    url = f"lancedb://{tmp_path}/l?table=pyref"
    side = check_cli_on_pyref(capsys, url, ["num_partitions=1"], ["ef=4"], tmp_path, exact=False)
    search = side["retrieval"]["search"]
    assert search["index_used"] is True and "ANNSubIndex" in search["plan"]
    assert search["params"]["ef"] >= 10 and "ef raised to k" in search["plan"]


def test_pq_on_too_few_rows_warns_and_searches_flat(tmp_path, data):
    """LanceDB builds an IVF_PQ index over 0 of 100 rows without an error (measured)."""
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        store.load(data.ids[:100], data.vectors[:100], metric="l2")
        with pytest.warns(SearchbenchWarning, match="over 0 of 100 rows"):
            store.build_index("ivf_pq", num_partitions=1, num_sub_vectors=4)
        assert store.describe()["index"]["indexed_rows"] == 0
        hits = store.search(data.queries, 5, params={"nprobes": 1})
        assert hits.index_used is False


TEXTS = ["quick brown fox leaps", "lazy dog sleeps", "quick fox", "nothing here at all",
         "brown dog barks", "fox"]


def test_full_text_search_finds_exactly_the_documents_with_the_term(tmp_path):
    rng = np.random.default_rng(5)
    ids = [f"t{i}#0-9" for i in range(len(TEXTS))]
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        store.load(ids, rng.normal(size=(6, 8)), metric="l2", texts=TEXTS)
        store.build_text_index(stem=False, remove_stop_words=False)
        hits = store.text_search(["fox"], 6)
        assert set(hits.ids[0]) == {ids[i] for i, t in enumerate(TEXTS) if "fox" in t.split()}
        # one term, same idf: BM25 ranks the shortest document first (b > 0)
        assert hits.ids[0][0] == "t5#0-9" and np.all(np.diff(hits.distances[0]) >= 0)
        assert store.describe()["provenance"]["text_index"]["params"]["stem"] is False
        with pytest.raises(ConfigError, match="full-text index option"):
            store.build_text_index(stemming=True)


def test_hybrid_search_is_rrf_of_vector_and_text_rankings(tmp_path):
    """Fused score of a row = Σ 1/(60 + rank) over the exact vector top-k and the BM25
    top-k (ranks from 1), computed here from the two separate rankings."""
    rng = np.random.default_rng(6)
    x, q = rng.normal(size=(6, 8)), rng.normal(size=(1, 8))
    ids = [f"h{i}" for i in range(len(TEXTS))]
    with db.connect(f"lancedb://{tmp_path}?table=t") as store:
        store.load(ids, x, metric="l2", texts=TEXTS)
        store.build_text_index()
        k = 3
        vector = exact_knn(x, q, k, "l2").ids[0, :k]
        text = store.text_search(["quick fox"], k).ids[0]
        want: dict[str, float] = {}
        for ranking in ([ids[j] for j in vector], text):
            for rank, doc in enumerate(ranking, start=1):
                want[doc] = want.get(doc, 0.0) + 1 / (60 + rank)
        hits = store.hybrid_search(["quick fox"], q, k)
        best = sorted(want.items(), key=lambda kv: -kv[1])[:k]
        np.testing.assert_allclose(-hits.distances[0], [v for _, v in best], rtol=1e-6)
        assert set(hits.ids[0]) == {d for d, _ in best}
