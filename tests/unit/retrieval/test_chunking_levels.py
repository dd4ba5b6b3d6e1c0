"""Chunkers keep exact offsets; chunk->doc aggregation; span overlap on hand-made docs."""

from __future__ import annotations

import numpy as np
import pytest

import searchbench as sb
from searchbench.data.evalset import Evidence
from searchbench.errors import ConfigError, SearchbenchWarning
from searchbench.retrieval import (
    BM25,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
    budget_run,
    chunk_qrels,
    context_tokens,
    doc_run,
    parse_chunker,
)
from searchbench.retrieval.chunking import Chunk

TEXT = "One two three four five six seven eight nine ten."


def test_token_windows_with_overlap_keep_offsets():
    chunks = TokenChunker(4, overlap=1).split("d", TEXT)
    assert [c.text for c in chunks] == ["One two three four", "four five six seven",
                                        "seven eight nine ten."]
    for c in chunks:
        assert TEXT[c.start:c.end] == c.text and c.doc_id == "d"
    assert chunks[0].id == "d#0-18"


def test_sentence_groups_and_recursive_limit():
    text = "Alpha beta. Gamma delta! Epsilon zeta? Eta theta.\n\nIota kappa lambda mu."
    groups = SentenceChunker(2).split("d", text)
    assert [c.text for c in groups] == ["Alpha beta. Gamma delta!", "Epsilon zeta? Eta theta.",
                                        "Iota kappa lambda mu."]
    rec = RecursiveChunker(max_tokens=4).split("d", text)
    assert all(len(c.text.split()) <= 4 for c in rec)
    assert all(text[c.start:c.end] == c.text for c in rec)
    assert rec[0].text == "Alpha beta. Gamma delta!"  # merged up to the limit


def test_parse_chunker_specs():
    assert parse_chunker("tokens:256:32") == TokenChunker(256, 32)
    assert parse_chunker("sentences:5") == SentenceChunker(5)
    assert parse_chunker("recursive:128") == RecursiveChunker(128)
    assert parse_chunker(None) is None
    for bad in ("tokens", "tokens:x", "words:3", "tokens:4:4"):
        with pytest.raises(ConfigError):
            parse_chunker(bad)


def _hand_corpus() -> sb.Corpus:
    return sb.Corpus.from_dict({
        "a": "cats purr softly. dogs bark loudly. birds sing early.",
        "b": "the cat sat. cats purr and purr. cats sleep.",
        "c": "",
    })


def test_doc_level_ranks_a_document_at_its_best_chunk():
    queries = sb.Queries.from_dict({"q": "cats purr"})
    with pytest.warns(SearchbenchWarning, match="1 of 3 documents are empty"):
        bm = BM25(stemmer=None, stopwords=None).index(_hand_corpus(), chunker=SentenceChunker(1))
    chunk_run = bm.search(queries, k=10, level="chunk")
    doc_level = bm.search(queries, k=10, level="doc")
    best = {}
    for cid, s in chunk_run.ranking("q"):
        d = cid.split("#")[0]
        best[d] = max(best.get(d, -np.inf), s)
    assert doc_level.to_dict()["q"] == pytest.approx(best)
    assert doc_run(chunk_run).to_dict() == doc_level.to_dict()
    assert doc_level.metadata["skipped_empty_docs"] == 1  # "c" is empty: skipped, counted


def test_chunk_qrels_by_overlap_with_evidence_spans():
    corpus = _hand_corpus()
    text = corpus["b"].text
    start = text.index("cats purr and purr")
    ev = [Evidence("q", "b", 2, "cats purr and purr", start, start + 18)]
    qrels = sb.Qrels.from_dict({"q": {"a": 1, "b": 2}})
    chunks = SentenceChunker(1).split("a", corpus["a"].text) + SentenceChunker(1).split("b", text)
    got = chunk_qrels(chunks, qrels, ev).to_dict()["q"]
    by_text = {c.text: got.get(c.id) for c in chunks}
    assert by_text["cats purr and purr."] == 2      # overlaps the quote
    assert by_text["the cat sat."] == 0             # same doc, outside the quote
    assert by_text["cats sleep."] == 0
    assert by_text["cats purr softly."] is None     # relevant doc without evidence in a query
    # with evidence (partial evidence): unjudged at chunk level
    alone = chunk_qrels(chunks, sb.Qrels.from_dict({"r": {"a": 1}}), ev).to_dict()["r"]
    assert alone == {c.id: 1 for c in chunks if c.doc_id == "a"}  # no evidence: inherits


def test_overlap_is_half_open():
    c = Chunk("d", 10, 20, "x" * 10)
    ev = [Evidence("q", "d", 1, "y", 20, 25), Evidence("q", "d", 3, "z", 19, 21)]
    qrels = sb.Qrels.from_dict({"q": {"d": 1}})
    assert chunk_qrels([c], qrels, ev[:1]).to_dict()["q"][c.id] == 0
    assert chunk_qrels([c], qrels, ev).to_dict()["q"][c.id] == 3


def test_context_tokens_and_budget():
    run = sb.Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    counts = {"a": 100, "b": 250, "c": 50}
    assert context_tokens(run, counts, 2)["mean"] == 350
    cut = budget_run(run, counts, 300)
    assert [d for d, _ in cut.ranking("q")] == ["a"]   # a+b = 350 > 300
    assert len(budget_run(run, counts, 400).ranking("q")) == 3


def test_partial_evidence_leaves_unquoted_relevant_documents_unjudged():
    corpus = sb.Corpus.from_dict({"a": "one two three four five six", "b": "x y z w v u",
                                  "c": "p q r s t o"})
    chunks = [c for d in corpus for c in TokenChunker(2).split(d.id, d.text)]
    qrels = sb.Qrels.from_dict({"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"b": 1}})
    ev = [Evidence("q1", "a", 2, "three", 8, 13)]
    got = chunk_qrels(chunks, qrels, ev).to_dict()
    # q1 quotes a: a's chunks graded by overlap; b (relevant, unquoted) left unjudged;
    # c (judged non-relevant) passes 0 to each chunk. q2 has no evidence: b inherits.
    assert got["q1"] == {"a#0-7": 0, "a#8-18": 2, "a#19-27": 0,
                         "c#0-3": 0, "c#4-7": 0, "c#8-11": 0}
    assert got["q2"] == {"b#0-3": 1, "b#4-7": 1, "b#8-11": 1}
def test_budget_summary_averages_over_every_query_asked():
    """Queries left with nothing (none retrieved, or nothing fits the budget) count as
    0 results and 0 tokens; how many there are is reported."""
    run = sb.Run.from_dict({"q1": {"a": 3.0, "b": 2.0}, "q2": {"c": 1.0}, "q3": {"a": 1.0}})
    counts = {"a": 100, "b": 250, "c": 400}
    asked = ["q1", "q2", "q3", "q4"]  # q4 retrieved nothing at all
    cut = budget_run(run, counts, 300)  # q1: a (100); q2: c (400) does not fit; q3: a
    assert cut.n_queries == 2  # the run itself forgets q2 and q4
    within = context_tokens(cut, counts, 10, asked)
    assert within["queries"] == 4 and within["empty"] == 2
    assert within["results"] == pytest.approx((1 + 0 + 1 + 0) / 4)
    assert within["mean"] == pytest.approx((100 + 0 + 100 + 0) / 4)
    assert within["median"] == pytest.approx(50.0) and within["max"] == 100
    full = context_tokens(run, counts, 10, asked)
    assert (full["empty"], full["results"]) == (1, pytest.approx(4 / 4))
    assert full["mean"] == pytest.approx((350 + 400 + 100 + 0) / 4)
    # without the queries asked: the run's own queries (the previous behaviour)
    assert context_tokens(cut, counts, 10)["mean"] == pytest.approx(100)
