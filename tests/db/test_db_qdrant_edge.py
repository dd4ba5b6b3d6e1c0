"""Qdrant's engine in process (qdrant-edge-py), real shards in tmp_path."""

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

pytest.importorskip("qdrant_edge")

import searchbench.db as db
from searchbench.errors import (
    ConfigError,
    DataFormatError,
    MissingDependencyError,
)

WEAK = {"m": 4, "ef_construct": 8, "full_scan_threshold": 10}  # a graph that misses neighbours


@pytest.fixture(scope="module")
def data() -> Corpus:
    return corpus()


@pytest.fixture(scope="module")
def built(tmp_path_factory, data):
    """One cosine shard, loaded and indexed with a weak graph."""
    root = tmp_path_factory.mktemp("qdrant")
    store = db.connect(f"qdrant-edge://{root}?shard=docs")
    store.load(data.ids, data.vectors, metric="cosine", metadata=data.metadata,
               texts=data.texts, provenance={"model": "seeded-gaussian"})
    unbuilt = store.search(data.queries, 10, params={"hnsw_ef": 10})
    store.build_index(**WEAK)
    yield store, unbuilt
    store.close()


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_exact_search_equals_exact_knn(tmp_path, data, metric):
    with db.connect(f"qdrant-edge://{tmp_path}?shard=s") as store:
        store.load(data.ids, data.vectors, metric=metric, batch_size=700)
        hits = store.exact_search(data.queries, 10)
        assert hits.index_used is False
        assert_exact(hits, data, 10, metric)
        assert sorted(store.stored_ids()) == sorted(data.ids)


def test_unbuilt_shard_is_brute_force_and_says_so(built, data):
    _, unbuilt = built
    assert unbuilt.index_used is False and "no HNSW graph" in unbuilt.plan
    assert recall(unbuilt, data, 10, "cosine") == 1.0


def test_recall_rises_with_hnsw_ef(built, data):
    store, _ = built
    got = []
    for ef in (10, 40, 160):
        hits = store.search(data.queries, 10, params={"hnsw_ef": str(ef)})
        assert hits.index_used is True and hits.params == {"hnsw_ef": ef}
        got.append(recall(hits, data, 10, "cosine"))
    assert got[0] < got[1] < got[2] and got[0] < 0.6 and got[2] > 0.6, got


def test_selective_filter_goes_exact_and_is_reported(built, data):
    store, _ = built
    cond = '{"must": [{"key": "cat", "match": {"value": 3}}]}'  # 40 of 2000 points
    hits = store.search(data.queries, 10, params={"hnsw_ef": 10}, filter=cond)
    assert hits.index_used is False and "matches 40 points" in hits.plan
    mask = np.array([m["cat"] == 3 for m in data.metadata])
    assert recall(hits, data, 10, "cosine", mask) == 1.0
    wide = store.search(data.queries, 10, params={"hnsw_ef": 10},
                        filter='{"must": [{"key": "lang", "match": {"value": "en"}}]}')
    pos = {doc: i for i, doc in enumerate(data.ids)}
    assert wide.index_used is True
    assert all(pos[doc] % 2 == 1 for row in wide.ids for doc in row)  # only "en" rows


def test_default_threshold_scans_small_collections_exactly(tmp_path, data):
    with db.connect(f"qdrant-edge://{tmp_path}?shard=s") as store:
        store.load(data.ids, data.vectors, metric="l2")
        store.build_index(m=4, ef_construct=8)  # full_scan_threshold 10000 KB = 80,000 vectors
        hits = store.search(data.queries, 10, params={"hnsw_ef": 10})
        assert hits.index_used is False and "full_scan_threshold" in hits.plan
        assert recall(hits, data, 10, "l2") == 1.0


def test_resume_after_interrupted_load_adds_no_duplicates(tmp_path, data):
    url = f"qdrant-edge://{tmp_path}?shard=s"
    with db.connect(url) as store:
        first = store.load(data.ids[:700], data.vectors[:700], metric="ip", batch_size=300)
        assert (first.added, first.total) == (700, 700)
    # the state a crash leaves: ids saved in the map whose points were never written
    ahead = db.IdMap(tmp_path / "s.ids.json")
    ahead.assign(data.ids[700:900])
    ahead.save()
    with db.connect(url) as store:
        again = store.load(data.ids, data.vectors, metric="ip", batch_size=500)
        assert (again.added, again.skipped_existing, again.total) == (1300, 700, 2000)
        assert sorted(store.stored_ids()) == sorted(data.ids)
        assert_exact(store.exact_search(data.queries, 5), data, 5, "ip")


def test_other_dimension_or_metric_is_refused(tmp_path, data):
    with db.connect(f"qdrant-edge://{tmp_path}?shard=s") as store:
        store.load(data.ids[:10], data.vectors[:10], metric="cosine")
        with pytest.raises(ConfigError, match=r"metric cosine.*metric l2"):
            store.load(data.ids[:10], data.vectors[:10], metric="l2")
        with pytest.raises(ConfigError, match=r"dim 32.*dim 8"):
            store.load(data.ids[:10], data.vectors[:10, :8], metric="cosine")
        with pytest.raises(DataFormatError, match="dim 8"):
            store.search(data.queries[:, :8], 3)


def test_parameters_are_validated(built):
    store, _ = built
    with pytest.raises(ConfigError, match="valid: acorn, hnsw_ef, indexed_only"):
        store.search(np.zeros((1, 32), np.float32), 3, params={"ef_search": 10})
    with pytest.raises(ConfigError, match="expected int"):
        store.search(np.zeros((1, 32), np.float32), 3, params={"hnsw_ef": "many"})
    with pytest.raises(ConfigError, match="valid: ef_construct, full_scan_threshold"):
        store.build_index(ef_construction=10)
    with pytest.raises(ConfigError, match="Qdrant filter"):
        store.search(np.ones((1, 32), np.float32), 3, filter="cat = 3")


def test_describe_holds_provenance_and_index_state(built):
    store, _ = built
    info = store.describe()
    assert info["provenance"]["model"] == "seeded-gaussian"
    assert (info["dim"], info["metric"], info["count"], info["indexed_vectors"]) == (
        32, "cosine", 2000, 2000)
    assert info["index"]["params"]["m"] == 4
    json.dumps(info)


def test_foreign_shard_and_bad_url_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="valid: shard"):
        db.connect(f"qdrant-edge://{tmp_path}?collection=x")
    with pytest.raises(ConfigError, match="no store at"):
        db.connect(f"qdrant-edge://{tmp_path}?shard=none", must_exist=True)
    (tmp_path / "alien").mkdir()
    (tmp_path / "alien" / "edge_config.json").write_text("{}")
    with pytest.raises(ConfigError, match="not made by searchbench"):
        db.connect(f"qdrant-edge://{tmp_path}?shard=alien").count()


def test_missing_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_edge", None)
    with pytest.raises(MissingDependencyError, match=r"searchbench\[qdrant-edge\]"):
        db.connect(f"qdrant-edge://{tmp_path}?shard=s")


def test_rows_added_after_the_build_are_reported(tmp_path, data):
    with db.connect(f"qdrant-edge://{tmp_path}?shard=s") as store:
        store.load(data.ids[:1500], data.vectors[:1500], metric="cosine")
        store.build_index(**WEAK)
        store.load(data.ids, data.vectors, metric="cosine")
        hits = store.search(data.queries, 10, params={"hnsw_ef": 10})
        assert hits.index_used is True and "500 rows added after the build" in hits.plan
        assert store.describe()["indexed_vectors"] == 1500
        store.build_index(**WEAK)
        assert "added after" not in store.search(data.queries, 10).plan


def test_provenance_merges_across_loads(tmp_path, data):
    check_provenance_merges(f"qdrant-edge://{tmp_path}?shard=p", data)


def test_cli_load_and_run_on_pyref(tmp_path, capsys):
    """79 pyref documents are below Qdrant's default full_scan_threshold: the HNSW build is
    bypassed, the run equals exact dense retrieval and the sidecar says the index was not
    used."""
    url = f"qdrant-edge://{tmp_path}/q?shard=pyref"
    side = check_cli_on_pyref(capsys, url, ["m=8"], ["hnsw_ef=16"], tmp_path, exact=True)
    search = side["retrieval"]["search"]
    assert search["index_used"] is False and "full_scan_threshold" in search["plan"]
    assert side["retrieval"]["store"]["provenance"]["index"]["params"]["m"] == 8


def test_stores_of_one_process_share_the_shard_and_another_process_is_refused(tmp_path,
                                                                           data):
    """Qdrant locks a shard's WAL: stores of one process share the open shard (a build by
    one is seen by the other); another process gets one clear error."""
    import subprocess

    url = f"qdrant-edge://{tmp_path}?shard=s"
    with db.connect(url) as first:
        first.load(data.ids[:300], data.vectors[:300], metric="l2")
        with db.connect(url) as second:
            assert second.count() == 300
            first.build_index(**WEAK)
            assert second.search(data.queries, 5).index_used is True
        assert first.count() == 300  # still open after the other store closed
        code = ("import sys, searchbench.db as db\n"
                f"try: db.connect({url!r}).count()\n"
                "except Exception as exc: print(type(exc).__name__, exc); sys.exit(1)")
        other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=120)
        assert other.returncode == 1
        assert other.stdout.startswith("BackendError") and "another process" in other.stdout
    with db.connect(url) as third:  # closed by everyone: opens again
        assert third.count() == 300
