"""Fusion against formulas written out by hand on two small known runs."""

from __future__ import annotations

import re

import pytest

import searchbench as sb
from searchbench.errors import ConfigError
from searchbench.retrieval import fuse, rrf, weighted

A = sb.Run.from_dict({"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d1": 5.0}})
B = sb.Run.from_dict({"q1": {"d3": 0.9, "d4": 0.5, "d1": 0.1}})


def test_rrf_equals_hand_formula():
    got = rrf([A, B], k=60).to_dict()
    # ranks in A: d1=1 d2=2 d3=3; in B: d3=1 d4=2 d1=3
    assert got["q1"]["d1"] == pytest.approx(1 / 61 + 1 / 63)
    assert got["q1"]["d2"] == pytest.approx(1 / 62)
    assert got["q1"]["d3"] == pytest.approx(1 / 63 + 1 / 61)
    assert got["q1"]["d4"] == pytest.approx(1 / 62)
    assert got["q2"] == {"d1": pytest.approx(1 / 61)}
    # d1 and d3 tie exactly, as do d2 and d4: ARCHITECTURE §3 ranks the larger doc id first
    assert list(got["q1"]) == ["d3", "d1", "d4", "d2"]


def test_rrf_k_changes_scores():
    assert rrf([A, B], k=1).to_dict()["q1"]["d2"] == pytest.approx(1 / 3)


def test_rrf_uses_rank_order_with_ties_by_docid():
    tied = sb.Run.from_dict({"q": {"a": 1.0, "b": 1.0}})  # rank: b (1), a (2)
    got = rrf([tied], k=0).to_dict()["q"]
    assert got == {"b": pytest.approx(1.0), "a": pytest.approx(0.5)}


def test_weighted_minmax_by_hand():
    got = weighted([A, B], [0.7, 0.3], norm="minmax").to_dict()["q1"]
    na = {"d1": 1.0, "d2": 0.5, "d3": 0.0}          # (s - 1) / (3 - 1)
    nb = {"d3": 1.0, "d4": 0.5, "d1": 0.0}          # (s - 0.1) / (0.9 - 0.1)
    for d in ("d1", "d2", "d3", "d4"):
        assert got[d] == pytest.approx(0.7 * na.get(d, 0.0) + 0.3 * nb.get(d, 0.0))


def test_weighted_zscore_missing_doc_gets_lowest():
    got = weighted([A, B], [0.5, 0.5], norm="zscore").to_dict()["q1"]
    za = {"d1": 1.5 ** 0.5, "d2": 0.0, "d3": -(1.5 ** 0.5)}   # (s - 2) / sqrt(2/3)
    mb, sb_ = 0.5, (((0.4) ** 2 + 0 + (0.4) ** 2) / 3) ** 0.5
    zb = {d: (s - mb) / sb_ for d, s in {"d3": 0.9, "d4": 0.5, "d1": 0.1}.items()}
    assert got["d2"] == pytest.approx(0.5 * za["d2"] + 0.5 * min(zb.values()))
    assert got["d4"] == pytest.approx(0.5 * min(za.values()) + 0.5 * zb["d4"])
    assert got["d1"] == pytest.approx(0.5 * za["d1"] + 0.5 * zb["d1"], abs=1e-12)


def test_single_score_query_normalises_to_one():
    assert weighted([A], [1.0]).to_dict()["q2"] == {"d1": 1.0}


def test_bad_fusion_inputs():
    with pytest.raises(ConfigError, match="expected one of rrf, weighted"):
        fuse([A, B], "borda")
    with pytest.raises(ConfigError, match="2 weights for 1 runs"):
        weighted([A], [0.5, 0.5])
    with pytest.raises(ConfigError, match="minmax, zscore"):
        weighted([A], [1.0], norm="l2")


def test_run_retriever_replays_and_fuses():
    from searchbench.retrieval import BM25, Hybrid, RunRetriever

    corpus = sb.Corpus.from_dict({"d1": "cats purr", "d2": "dogs bark", "d3": "cats and dogs"})
    queries = sb.Queries.from_dict({"q1": "cats"})
    external = sb.Run.from_dict({"q1": {"d2": 0.9, "d3": 0.5}, "qX": {"d1": 1.0}})
    replay = RunRetriever(external, name="vectordb").index(corpus)
    assert replay.search(queries, k=1).to_dict() == {"q1": {"d2": 0.9}}
    hybrid = Hybrid([BM25(stemmer=None), RunRetriever(external)]).index(corpus)
    got = hybrid.search(queries, k=3).to_dict()["q1"]
    bm25 = BM25(stemmer=None).index(corpus).search(queries, k=3)
    assert got == pytest.approx(rrf([bm25, replay.search(queries, k=3)]).to_dict()["q1"])
    with pytest.raises(ConfigError, match="cannot be chunked"):
        RunRetriever(external).index(corpus, chunker=sb.retrieval.TokenChunker(4))


@pytest.mark.parametrize("weights, needle", [
    ([-0.5, 1.5], "weights[0] is -0.5; expected a finite number >= 0"),
    ([0.0, 0.0], "all zero"),
])
def test_weighted_fusion_refuses_negative_or_all_zero_weights(weights, needle):
    """A negative weight turns a run's ranking upside down; all-zero weights score every
    document alike (a ranking by doc id): both are refused, not silently fused."""
    with pytest.raises(ConfigError, match=re.escape(needle)):
        weighted([A, B], weights)
