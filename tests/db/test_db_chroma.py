"""Chroma embedded (PersistentClient), real collections in tmp_path."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from .store_checks import Corpus, check_cli_on_pyref, check_provenance_merges, corpus, recall

pytest.importorskip("chromadb")

import searchbench.db as db
from searchbench.errors import ConfigError, DataFormatError, MissingDependencyError


@pytest.fixture(scope="module")
def data() -> Corpus:
    return corpus()


@pytest.fixture(scope="module")
def weak(tmp_path_factory, data):
    """One cosine collection rebuilt with a weak graph (M=4, ef_construction=8)."""
    root = tmp_path_factory.mktemp("chroma")
    store = db.connect(f"chroma://{root}?collection=docs")
    store.load(data.ids, data.vectors, metric="cosine", metadata=data.metadata,
               texts=data.texts, provenance={"model": "seeded-gaussian"})
    store.build_index(max_neighbors=4, ef_construction=8)
    yield store, root
    store.close()


def _first_principles(data: Corpus, hits, metric: str) -> None:
    pos = {doc: i for i, doc in enumerate(data.ids)}
    for i, row in enumerate(hits.ids):
        x = data.vectors[[pos[d] for d in row]].astype(np.float64)
        q = data.queries[i].astype(np.float64)
        want = {"cosine": 1 - x @ q / np.linalg.norm(x, axis=1) / np.linalg.norm(q),
                "ip": -(x @ q), "l2": ((x - q) ** 2).sum(axis=1)}[metric]
        np.testing.assert_allclose(hits.distances[i], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_distances_follow_the_knn_convention(tmp_path, data, metric):
    with db.connect(f"chroma://{tmp_path}?collection=c-{metric}") as store:
        store.load(data.ids[:600], data.vectors[:600], metric=metric, batch_size=250)
        hits = store.search(data.queries, 10, params={"ef_search": 600})
        assert hits.index_used is True and hits.params["ef_search"] == 600
        _first_principles(data, hits, metric)
        assert sorted(store.stored_ids()) == sorted(data.ids[:600])


def test_recall_rises_with_ef_search_applied_by_reopening(weak, data):
    store, root = weak
    got = []
    for ef in (10, 40, 160):
        hits = store.search(data.queries, 10, params={"ef_search": ef})
        assert f"ef_search={ef}" in hits.plan and "reopening" in hits.plan
        got.append(recall(hits, data, 10, "cosine"))
    assert got[0] < got[1] < got[2] and got[0] < 0.6 and got[2] > 0.6, got
    again = store.search(data.queries, 10)  # the saved value stays in force
    assert again.params["ef_search"] == 160 and "reopening" not in again.plan
    with db.connect(f"chroma://{root}?collection=docs") as other:
        assert other.describe()["hnsw"]["ef_search"] == 160


def test_rebuild_keeps_rows_texts_metadata_and_provenance(weak, data):
    store, _ = weak
    info = store.describe()
    assert info["hnsw"]["max_neighbors"] == 4 and info["hnsw"]["ef_construction"] == 8
    assert info["provenance"]["model"] == "seeded-gaussian" and info["count"] == 2000
    assert sorted(store.stored_ids()) == sorted(data.ids)
    hits = store.search(data.queries, 5, filter='{"$and": [{"cat": 3}, {"lang": "en"}]}')
    pos = {doc: i for i, doc in enumerate(data.ids)}
    assert all(pos[d] % 50 == 3 and pos[d] % 2 == 1 for row in hits.ids for d in row)
    assert store.build_index(max_neighbors=4) == 0.0  # nothing to rebuild
    json.dumps(info)


def test_no_exact_mode(weak, data):
    store, _ = weak
    assert store.has_exact is False
    with pytest.raises(ConfigError, match="no exact search"):
        store.exact_search(data.queries, 10)


def test_resume_after_interrupted_load_adds_no_duplicates(tmp_path, data):
    url = f"chroma://{tmp_path}?collection=part"
    with db.connect(url) as store:
        store.load(data.ids[:300], data.vectors[:300], metric="l2")
    with db.connect(url) as store:
        again = store.load(data.ids[:800], data.vectors[:800], metric="l2", batch_size=200)
        assert (again.added, again.skipped_existing, again.total) == (500, 300, 800)
        assert sorted(store.stored_ids()) == sorted(data.ids[:800])


def test_other_dimension_or_metric_is_refused(tmp_path, data):
    with db.connect(f"chroma://{tmp_path}?collection=few") as store:
        store.load(data.ids[:10], data.vectors[:10], metric="cosine")
        with pytest.raises(ConfigError, match=r"metric cosine.*metric ip"):
            store.load(data.ids[:10], data.vectors[:10], metric="ip")
        with pytest.raises(ConfigError, match=r"dim 32.*dim 8"):
            store.load(data.ids[:10], data.vectors[:10, :8], metric="cosine")
        with pytest.raises(DataFormatError, match="dim 8"):
            store.search(data.queries[:, :8], 3)


def test_parameters_and_filters_are_validated(weak):
    store, _ = weak
    q = np.ones((1, 32), np.float32)
    with pytest.raises(ConfigError, match="valid: ef_search"):
        store.search(q, 3, params={"ef": 10})
    with pytest.raises(ConfigError, match="valid: ef_construction, max_neighbors"):
        store.build_index(M=8)
    with pytest.raises(ConfigError, match="Chroma filter is not JSON"):
        store.search(q, 3, filter="cat = 3")


def test_bad_url_and_missing_collection(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="valid: collection"):
        db.connect(f"chroma://{tmp_path}?table=x")
    with pytest.raises(ConfigError, match="no store at"):
        db.connect(f"chroma://{tmp_path}?collection=none", must_exist=True)
    monkeypatch.setitem(sys.modules, "chromadb", None)
    with pytest.raises(MissingDependencyError, match=r"searchbench\[chroma\]"):
        db.connect(f"chroma://{tmp_path}?collection=docs")


def test_the_trap_modify_alone_leaves_the_loaded_index_unchanged(weak, data):
    """Why the adapter reopens its client: Chroma saves a new ef_search but an index loaded
    in the process keeps searching with the old one (if Chroma fixes this, this test fails
    and the reopening can go)."""
    store, root = weak
    store.search(data.queries, 10, params={"ef_search": 10})
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(root),
                                       settings=Settings(anonymized_telemetry=False))
    collection = client.get_collection("docs", embedding_function=None)
    before = collection.query(query_embeddings=data.queries, n_results=10, include=[])["ids"]
    with pytest.warns(DeprecationWarning):  # Chroma's own "legacy embedding function" note
        collection.modify(configuration={"hnsw": {"ef_search": 500}})
    after = collection.query(query_embeddings=data.queries, n_results=10, include=[])["ids"]
    assert after == before  # saved, not applied
    assert store.search(data.queries, 10).params["ef_search"] == 10  # what the loaded index uses
    reopened = store.search(data.queries, 10, params={"ef_search": 500})
    assert reopened.ids != before


def test_provenance_merges_across_loads(tmp_path, data):
    check_provenance_merges(f"chroma://{tmp_path}?collection=prov", data)


def test_cli_load_and_run_on_pyref(tmp_path, capsys):
    """ef_search above the 79 rows walks the whole graph: the run equals exact dense
    retrieval."""
    url = f"chroma://{tmp_path}/c?collection=pyref"
    side = check_cli_on_pyref(capsys, url, [], ["ef_search=200"], tmp_path, exact=True)
    search = side["retrieval"]["search"]
    assert search["index_used"] is True and search["params"]["ef_search"] == 200
