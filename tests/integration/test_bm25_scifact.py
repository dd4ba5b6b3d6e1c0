"""Golden: BM25 (Lucene, k1=0.9, b=0.4, English stop words + Snowball, title + text) on
BEIR SciFact gives nDCG@10 = 0.676, the value published in the bm25s BEIR table
(https://github.com/xhluca/bm25s, "Comparison" table, SciFact column)."""

from __future__ import annotations

import pytest

import searchbench as sb

from ._scifact import load_scifact

pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")

PUBLISHED_NDCG10 = 0.676


@pytest.mark.data
def test_bm25_scifact_matches_published(shared_data):
    es = load_scifact(shared_data)
    retriever = sb.retrieval.BM25()
    run = retriever.index(es.corpus).search(es.queries, k=100)
    got = sb.evaluate(es.qrels, run, ["nDCG@10"]).mean["nDCG@10"]
    assert got == pytest.approx(PUBLISHED_NDCG10, abs=0.005)
    assert run.metadata["k1"] == 0.9 and run.metadata["b"] == 0.4
    assert run.metadata["method"] == "lucene" and run.metadata["level"] == "doc"


@pytest.mark.data
def test_bm25_scifact_untuned_defaults_differ(shared_data):
    """The test can fail: bm25s' own defaults (k1=1.5, b=0.75, no stemming) score lower."""
    es = load_scifact(shared_data)
    run = sb.retrieval.BM25(k1=1.5, b=0.75, stemmer=None).index(es.corpus).search(es.queries)
    got = sb.evaluate(es.qrels, run, ["nDCG@10"]).mean["nDCG@10"]
    assert abs(got - PUBLISHED_NDCG10) > 0.005
