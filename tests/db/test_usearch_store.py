"""usearch adapter against the real library: what only usearch does (its index files, the
build it needs before a search, bf16 by default, no filters). The shared behaviour (ids,
exact = brute force, recall, resume, bad input) is tests/db/test_engine_contract.py."""

from __future__ import annotations

import importlib.util

import pytest

from searchbench.db import IdMap, connect
from searchbench.errors import ConfigError

from .store_checks import corpus

if importlib.util.find_spec("usearch") is None:  # not imported here: see the adapter
    pytest.skip("could not import 'usearch'", allow_module_level=True)

DATA = corpus(n=600, dim=16, queries=10, seed=7)


def test_ids_and_answers_survive_a_new_connection(tmp_path):
    url = f"usearch://{tmp_path}/idx?name=docs"
    with connect(url) as store:
        store.load(DATA.ids, DATA.vectors, metric="cosine", provenance={"model": "minilm"})
        assert store.build_index() > 0
        first = store.search(DATA.queries, 5, params={"expansion_search": 32})
    with connect(url) as again:
        assert again.stored_ids() == DATA.ids  # load order
        second = again.search(DATA.queries, 5, params={"expansion_search": "32"})
        info = again.describe()
    assert second.ids == first.ids and second.index_used is True
    assert info["provenance"]["model"] == "minilm" and info["count"] == 600
    assert info["index"]["rows_indexed"] == 600 and info["index"]["size_bytes"] > 0
    assert info["index"]["params"]["dtype"] == "bf16"  # usearch's default rounds vectors
    assert info["provenance"]["index"]["params"]["dtype"] == "bf16"


def test_a_search_needs_the_index_to_cover_every_row(tmp_path, monkeypatch):
    """A load killed after two batches: the rows are there, the index is not; a search says
    to build it, and a build after the resumed load covers everything."""
    url = f"usearch://{tmp_path}/idx?name=docs"
    saves = {"n": 0}
    real_save = IdMap.save

    def crash_on_third(self):
        saves["n"] += 1
        if saves["n"] == 3:
            raise KeyboardInterrupt  # dies after writing batch 3's rows, before its map
        real_save(self)

    monkeypatch.setattr(IdMap, "save", crash_on_third)
    with pytest.raises(KeyboardInterrupt), connect(url) as store:
        store.load(DATA.ids, DATA.vectors, metric="cosine", batch_size=100)
    monkeypatch.setattr(IdMap, "save", real_save)
    with connect(url) as store:
        with pytest.raises(ConfigError, match="the index covers 0 of 200 rows; build it"):
            store.search(DATA.queries, 3)
        report = store.load(DATA.ids, DATA.vectors, metric="cosine", batch_size=100)
        assert (report.added, report.skipped_existing) == (400, 200)  # the orphan rewritten
        store.build_index(dtype="f32")
        assert store.stored_ids() == DATA.ids
        hits = store.exact_search(DATA.queries, 10)
        again = store.load(DATA.ids, DATA.vectors, metric="cosine")
        assert (again.added, again.skipped_existing) == (0, 600)
        assert store.exact_search(DATA.queries, 10).ids == hits.ids  # the index covers all
    assert len(list((tmp_path / "idx" / "docs.rows").glob("*.npy"))) == 6


def test_what_usearch_refuses(tmp_path):
    with connect(f"usearch://{tmp_path}/idx") as store:
        store.load(DATA.ids[:100], DATA.vectors[:100], metric="cosine")
        store.build_index()
        with pytest.raises(ConfigError, match="valid: connectivity, dtype, expansion_add"):
            store.build_index(M=16)
        with pytest.raises(ConfigError, match="expected one of f32, f16, bf16, i8"):
            store.build_index(dtype="f8")
        with pytest.raises(ConfigError, match="usearch index kind 'ivf'; expected one of hnsw"):
            store.build_index("ivf")
        with pytest.raises(ConfigError, match="no filters"):
            store.search(DATA.queries, 3, filter="year > 2000")
    with pytest.raises(ConfigError, match="unknown option 'table'; valid: name"):
        connect(f"usearch://{tmp_path}/idx?table=docs")
    with pytest.raises(ConfigError, match="invalid usearch collection name"):
        connect(f"usearch://{tmp_path}/idx?name=../x")
    missing = connect(f"usearch://{tmp_path}/missing?name=docs")
    with pytest.raises(ConfigError, match="no store at"):
        missing.search(DATA.queries, 3)
    assert not (tmp_path / "missing").exists()


def test_index_kind_is_read_as_the_engines_docs_spell_it(tmp_path):
    """``HNSW`` (Milvus', LanceDB's docs) is the kind ``hnsw``; an unknown kind is refused."""
    with connect(f"usearch://{tmp_path}/idx?name=docs") as store:
        store.load(DATA.ids, DATA.vectors, metric="cosine")
        store.build_index("HNSW")
        assert store.describe()["provenance"]["index"]["kind"] == "hnsw"
        with pytest.raises(ConfigError, match="index kind 'flat'; expected one of hnsw"):
            store.build_index("flat")
