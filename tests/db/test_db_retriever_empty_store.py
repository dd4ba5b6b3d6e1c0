"""A store that holds nothing (never loaded) or does not exist (a typo in the URL) is refused
with a message that says so, before any model is asked for; reading never creates a store
(review-db)."""

from __future__ import annotations

import importlib.util

import pytest

from searchbench.cli.main import main
from searchbench.db import LOCAL_ENGINES, connect
from searchbench.errors import ConfigError

# scheme -> (module that must be importable, URL options naming the collection)
_LOCAL = {
    "duckdb": ("duckdb_extension_vss", "table=docs"),
    "lancedb": ("lancedb", "table=docs"),
    "chroma": ("chromadb", "collection=docs"),
    "milvus-lite": ("milvus_lite", "collection=docs"),
    "qdrant-edge": ("qdrant_edge", "shard=docs"),
    "usearch": ("usearch", "name=docs"),
    "sqlite-vec": ("sqlite_vec", "table=docs"),
}


def test_every_local_engine_is_covered_here():
    assert set(_LOCAL) == set(LOCAL_ENGINES)


@pytest.mark.parametrize("model", [None, "static"])
def test_a_missing_table_in_an_existing_file_is_no_store(tmp_path, model):
    pytest.importorskip("duckdb_extension_vss")
    from searchbench.retrieval.stores import DbRetriever

    url = f"duckdb://{tmp_path}/empty.duckdb?table=docs"
    connect(url).close()  # the file exists, the table does not
    with pytest.raises(ConfigError, match=r"no store at 'table docs in .*searchbench db load"):
        DbRetriever(url, model=model)


@pytest.mark.parametrize("scheme", sorted(_LOCAL))
def test_reading_a_missing_local_store_fails_and_creates_nothing(tmp_path, capsys, scheme):
    module, option = _LOCAL[scheme]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    from searchbench.retrieval.stores import DbRetriever

    typo = tmp_path / "typo"
    url = f"{scheme}://{typo}?{option}"
    with pytest.raises(ConfigError, match=r"no store at .*searchbench db load"):
        DbRetriever(url)
    assert main(["db", "describe", url]) == 1
    got = capsys.readouterr()
    assert got.out == "" and got.err.count("error:") == 1 and "no store at" in got.err
    assert "Traceback" not in got.err
    assert list(tmp_path.iterdir()) == []  # nothing was created
