"""usearch adapter against the real library: ids, distances, recall, resume, bad input."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from searchbench.db import IdMap, connect
from searchbench.errors import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "ann"))
from ann_vectors import brute_force, clustered

if importlib.util.find_spec("usearch") is None:  # not imported here: see the adapter
    pytest.skip("could not import 'usearch'", allow_module_level=True)


def _ids(n: int) -> list[str]:
    """Plain ids and chunk ids ``doc#start-end`` mixed."""
    return [f"doc{i}#0-120" if i % 2 else f"d-{i}" for i in range(n)]


@pytest.fixture(scope="module")
def data():
    return clustered(1500, 30, 16, seed=7)


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_exact_search_equals_brute_force(tmp_path, data, metric):
    base, queries = data
    ids = _ids(len(base))
    with connect(f"usearch://{tmp_path}/idx?name=docs") as store:
        report = store.load(ids, base, metric=metric, batch_size=400)
        assert (report.added, report.skipped_existing, report.total) == (1500, 0, 1500)
        store.build_index(dtype="f32")  # bf16 (the default) rounds the stored vectors
        hits = store.exact_search(queries, 10)
    want_ids, want_d = brute_force(base, queries, 10, metric)
    assert hits.ids == [[ids[j] for j in row] for row in want_ids]
    np.testing.assert_allclose(np.vstack(hits.distances), want_d, rtol=1e-5, atol=1e-5)
    assert hits.index_used is False


def test_ids_and_answers_survive_a_new_connection(tmp_path, data):
    base, queries = data
    ids = _ids(len(base))
    url = f"usearch://{tmp_path}/idx?name=docs"
    with connect(url) as store:
        store.load(ids, base, metric="cosine", provenance={"model": "minilm"})
        assert store.build_index() > 0
        first = store.search(queries, 5, params={"expansion_search": 32})
    with connect(url) as again:
        assert again.stored_ids() == ids
        second = again.search(queries, 5, params={"expansion_search": "32"})
        info = again.describe()
    assert second.ids == first.ids and second.index_used is True
    assert info["provenance"] == {"model": "minilm"} and info["count"] == 1500
    assert info["index"]["rows_indexed"] == 1500 and info["index"]["size_bytes"] > 0
    assert info["index"]["params"]["dtype"] == "bf16"


def test_recall_rises_with_expansion_search(tmp_path):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((3000, 32)).astype(np.float32)
    queries = rng.standard_normal((100, 32)).astype(np.float32)
    truth, _ = brute_force(base, queries, 10, "cosine")
    ids = [str(i) for i in range(len(base))]
    with connect(f"usearch://{tmp_path}/idx") as store:
        store.load(ids, base, metric="cosine")
        store.build_index(connectivity=8, expansion_add=32, dtype="f32")
        recalls = []
        for ef in (1, 4, 16, 64, 256):
            hits = store.search(queries, 10, params={"expansion_search": ef})
            found = np.array([[int(i) for i in row] for row in hits.ids])
            recalls.append(np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth,
                                                                           strict=True)]))
    assert all(b >= a - 0.01 for a, b in itertools.pairwise(recalls)), recalls
    assert recalls[0] < 0.8 and recalls[-1] > recalls[0] + 0.15, recalls


def test_interrupted_load_resumes_without_duplicates(tmp_path, data, monkeypatch):
    base, queries = data
    ids = _ids(len(base))
    url = f"usearch://{tmp_path}/idx?name=docs"
    saves = {"n": 0}
    real_save = IdMap.save

    def crash_on_third(self):
        saves["n"] += 1
        if saves["n"] == 3:
            raise KeyboardInterrupt  # the process dies after writing batch 3's rows
        real_save(self)

    monkeypatch.setattr(IdMap, "save", crash_on_third)
    with pytest.raises(KeyboardInterrupt), connect(url) as store:
        store.load(ids, base, metric="cosine", batch_size=200)
    monkeypatch.setattr(IdMap, "save", real_save)
    with connect(url) as store:
        with pytest.raises(ConfigError, match="the index covers 0 of 400 rows; build it"):
            store.search(queries, 3)
        report = store.load(ids, base, metric="cosine", batch_size=200)
        assert (report.added, report.skipped_existing) == (1100, 400)
        assert store.stored_ids() == ids and store.count() == 1500
        store.build_index(dtype="f32")
        hits = store.exact_search(queries, 10)
        again = store.load(ids, base, metric="cosine")
        assert (again.added, again.skipped_existing) == (0, 1500)
        assert store.exact_search(queries, 10).ids == hits.ids  # the index still covers all
    want, _ = brute_force(base, queries, 10, "cosine")
    assert hits.ids == [[ids[j] for j in row] for row in want]


def test_bad_input_names_what_is_valid(tmp_path, data):
    base, queries = data
    ids = _ids(len(base))
    with connect(f"usearch://{tmp_path}/idx") as store:
        store.load(ids[:100], base[:100], metric="cosine")
        store.build_index()
        with pytest.raises(ConfigError, match="holds dimension 16, the rows given have "
                                              "dimension 8"):
            store.load(ids[:100], base[:100, :8], metric="cosine")
        with pytest.raises(ConfigError, match="holds metric cosine, the rows given have "
                                              "metric l2"):
            store.load(ids[:100], base[:100], metric="l2")
        with pytest.raises(ConfigError, match=r"unknown search parameter 'ef'.*valid: "
                                              "expansion_search"):
            store.search(queries, 3, params={"ef": 10})
        with pytest.raises(ConfigError, match="valid: connectivity, dtype, expansion_add"):
            store.build_index(M=16)
        with pytest.raises(ConfigError, match="expected one of f32, f16, bf16, i8"):
            store.build_index(dtype="f8")
        with pytest.raises(ConfigError, match="no filters"):
            store.search(queries, 3, filter="year > 2000")
        with pytest.raises(ConfigError, match="query vectors have 8 dimensions"):
            store.search(queries[:, :8], 3)
    missing = connect(f"usearch://{tmp_path}/missing?name=docs")
    assert (missing.count(), missing.stored_ids(), missing.describe()["dim"]) == (0, [], None)
    with pytest.raises(ConfigError, match=r"no usearch collection 'docs' in .*missing"):
        missing.search(queries, 3)
    assert not (tmp_path / "missing").exists()
    with pytest.raises(ConfigError, match="unknown option 'table'; valid: name"):
        connect(f"usearch://{tmp_path}/idx?table=docs")
    with pytest.raises(ConfigError, match="invalid usearch collection name"):
        connect(f"usearch://{tmp_path}/idx?name=../x")
