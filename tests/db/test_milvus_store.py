"""pymilvus against Milvus Lite 3.x (a real local service speaking Milvus's gRPC API).

Milvus Lite 3.x is a FAISS-based rewrite, not the Milvus engine: these tests check the
adapter's client path (schema, string ids, FLAT exact field, index parameters, distances,
filters, resume, index coverage), not Milvus's own index implementation.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

import searchbench.db as db
from searchbench.db.servers import free_port
from searchbench.errors import BackendError, ConfigError, DataFormatError, MissingDependencyError

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
def lite(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One Milvus Lite file for the module (its local service starts once); each test uses
    its own collection in it."""
    return f"milvus-lite://{tmp_path_factory.mktemp('milvus') / 'milvus.db'}"


@pytest.fixture(scope="module")
def built(lite: str):
    """3,000 vectors, cosine, 2 % metadata category; HNSW with a small graph."""
    store = db.connect(f"{lite}?collection=docs")
    store.load(IDS, VECTORS, metric="cosine", metadata=categories(len(IDS)),
               texts=[f"text of {i}" for i in IDS], provenance={"model": "seeded-gaussian"})
    assert store.search(QUERIES[:2], 3).index_used is False  # FLAT until an index is built
    store.build_index("hnsw", M=8, efConstruction=32)
    yield store
    store.close()


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_exact_search_equals_exact_knn(lite: str, metric: str) -> None:
    with db.connect(f"{lite}?collection=exact_{metric}") as store:
        store.load(IDS[:600], VECTORS[:600], metric=metric)
        hits = store.exact_search(QUERIES, 10)
    assert hits.index_used is False
    assert_exact(hits, IDS, VECTORS[:600], QUERIES, 10, metric)


def test_recall_rises_with_ef_and_the_index_is_used(built) -> None:
    exact = built.exact_search(QUERIES, 10)
    assert_exact(exact, IDS, VECTORS, QUERIES, 10, "cosine")
    points = [built.search(QUERIES, 10, params={"ef": ef}) for ef in (10, 40, 400)]
    assert all(h.index_used is True for h in points), points[0].plan
    recalls = [recall(h, exact, 10) for h in points]
    assert recalls[0] < recalls[1] < recalls[2], recalls
    assert recalls[0] < 0.9 and recalls[2] >= 0.95, recalls


def test_ivf_flat_recall_rises_with_nprobe(lite: str) -> None:
    with db.connect(f"{lite}?collection=ivf") as store:
        store.load(IDS, VECTORS, metric="l2")
        store.build_index("ivf_flat", nlist=64)
        exact = store.exact_search(QUERIES, 10)
        points = [store.search(QUERIES, 10, params={"nprobe": n}) for n in (1, 8, 64)]
        with pytest.raises(ConfigError, match="valid: nprobe"):
            store.search(QUERIES[:1], 3, params={"ef": 10})
        assert store.describe()["index"]["type"] == "IVF_FLAT"
    recalls = [recall(h, exact, 10) for h in points]
    # nprobe = nlist visits every cluster: exact. Milvus Lite built 128 clusters for
    # nlist=64 (0.998 here) until the adapter sent build parameters in the form it reads
    assert recalls[0] < recalls[1] < recalls[2] == 1.0, recalls


def test_filters_pass_through(built) -> None:
    rare = np.flatnonzero([i % 50 == 0 for i in range(len(IDS))])
    expr = 'meta["cat"] == "rare"'
    q = QUERIES[:8]  # Milvus Lite evaluates JSON filters in Python: slow
    assert_exact(built.exact_search(q, 10, filter=expr), IDS, VECTORS, q, 10, "cosine",
                 rows=rare)
    hits = built.search(q, 10, params={"ef": 40}, filter=expr)
    assert all(set(row) <= {IDS[i] for i in rare} for row in hits.ids)


def test_ids_round_trip_and_describe(built) -> None:
    assert sorted(built.stored_ids()) == sorted(IDS)
    odd = [IDS.index(i) for i in IDS[-6:]]
    assert [h[0] for h in built.exact_search(VECTORS[odd], 1).ids] == IDS[-6:]
    info = built.describe()
    assert "not the Milvus server" in info["engine"] and "FAISS" in info["engine"]
    assert info["provenance"]["model"] == "seeded-gaussian"
    assert info["provenance"]["index"]["params"] == {"M": 8, "efConstruction": 32}
    assert (info["dim"], info["metric"], info["count"]) == (64, "cosine", len(IDS))
    assert info["index"]["params"] == {"M": 8, "efConstruction": 32}
    assert info["index_state"]["index_type"] == "HNSW"


def test_rows_written_behind_the_adapters_back_are_reported_unindexed(lite: str) -> None:
    """Rows the index has not covered are brute-forced: index_used must say False."""
    with db.connect(f"{lite}?collection=cover") as store:
        store.load(IDS[:1000], VECTORS[:1000], metric="ip")
        store.build_index("hnsw", M=8, efConstruction=32)
        assert store.search(QUERIES[:2], 5).index_used is True
        store.load(IDS[:1500], VECTORS[:1500], metric="ip")  # the adapter re-covers
        assert store.search(QUERIES[:2], 5).index_used is True
        row = {"id": "outsider", "vector": VECTORS[0], "vector_exact": VECTORS[0], "text": "",
               "meta": {}}
        store.client.insert("cover", [row])  # not through searchbench
        hits = store.search(QUERIES[:2], 5)
        assert hits.index_used is False and "rows=1501" in hits.plan


def test_resume_after_an_interrupted_load_adds_no_duplicates(lite: str) -> None:
    """Milvus keeps duplicate primary keys: the adapter must skip the stored ones."""
    url = f"{lite}?collection=resume"
    with db.connect(url) as store:  # the first run died after 1,000 rows
        store.load(IDS[:1000], VECTORS[:1000], metric="l2", batch_size=400)
    with db.connect(url) as store:
        again = store.load(IDS, VECTORS, metric="l2", batch_size=400)
        assert (again.added, again.skipped_existing, again.total) == (2000, 1000, 3000)
        assert store.load(IDS, VECTORS, metric="l2").added == 0
        assert store.count() == 3000
        assert sorted(store.stored_ids()) == sorted(IDS)


def test_other_dimension_metric_and_long_ids_are_refused(lite: str) -> None:
    with db.connect(f"{lite}?collection=layout&id_max_length=16") as store:
        store.load(IDS[:10], VECTORS[:10], metric="cosine")
        with pytest.raises(ConfigError, match="dim 64 / metric cosine"):
            store.load(IDS[:10], VECTORS[:10, :32], metric="cosine")
        with pytest.raises(ConfigError, match="metric l2"):
            store.load(IDS[:10], VECTORS[:10], metric="l2")
        with pytest.raises(DataFormatError, match="id_max_length=16"):
            store.load(["x" * 17], VECTORS[:1], metric="cosine")
        assert store.count() == 10


def test_parameters_are_validated(built) -> None:
    with pytest.raises(ConfigError, match="valid: ef, nprobe"):
        built.search(QUERIES[:1], 3, params={"EF_RUNTIME": 10})
    with pytest.raises(ConfigError, match=r"valid: ef$"):
        built.search(QUERIES[:1], 3, params={"nprobe": 10})
    with pytest.raises(ConfigError, match="valid: M, efConstruction, nlist"):
        built.build_index("hnsw", ef=3)
    with pytest.raises(ConfigError, match="expected one of hnsw, ivf_flat"):
        built.build_index("diskann")
    with pytest.raises(ConfigError, match=r"ending in '\.db'"):
        db.connect("milvus-lite://./milvus?collection=docs")


def test_unreachable_server_names_the_url_never_the_password() -> None:
    port = free_port()
    with pytest.raises(BackendError) as caught:
        db.connect(f"milvus://root:pa55word@127.0.0.1:{port}?collection=docs")
    assert f"milvus://root:***@127.0.0.1:{port}?collection=docs" in str(caught.value)
    assert "pa55word" not in str(caught.value)


@pytest.mark.slow
def test_cli_load_and_run_on_pyref(tmp_path, tmp_path_factory) -> None:
    side = check_cli_on_pyref(f"milvus-lite://{tmp_path}/pyref.db?collection=pyref", tmp_path,
                              dense_reference(tmp_path_factory.getbasetemp()),
                              ["M=8", "efConstruction=32"], "ef=200", "valid: ef, nprobe")
    search = side["retrieval"]["search"]
    assert search["params"] == {"ef": 200} and search["index_used"] is True
    assert "not the Milvus server" in side["retrieval"]["store"]["engine"]
    index = side["retrieval"]["store"]["provenance"]["index"]
    assert index["params"] == {"M": 8, "efConstruction": 32}


def test_a_missing_extra_names_it(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymilvus", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"searchbench\[milvus\]"):
        db.connect(f"milvus-lite://{tmp_path}/m.db?collection=docs")
