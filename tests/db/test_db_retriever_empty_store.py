"""A store that holds nothing (a typo in the URL, or never loaded) is refused with a message
that says so, before any model is asked for (review-db)."""

from __future__ import annotations

import pytest

from searchbench.errors import ConfigError

pytest.importorskip("duckdb_extension_vss")


@pytest.mark.parametrize("model", [None, "static"])
def test_an_empty_or_missing_store_says_it_holds_no_rows(tmp_path, model):
    from searchbench.retrieval.stores import DbRetriever

    url = f"duckdb://{tmp_path}/typo.duckdb?table=docs"
    with pytest.raises(ConfigError, match=r"holds no rows.*searchbench db load"):
        DbRetriever(url, model=model)
