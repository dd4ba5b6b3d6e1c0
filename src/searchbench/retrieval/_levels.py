"""Chunk-level judgments, doc-level aggregation and context size (ARCHITECTURE §5.3).

- :func:`chunk_qrels`: a chunk is judged by overlap with the resolved evidence spans of
  its (query, document): grade = the highest grade of a span it overlaps, 0 if none.
  A (query, document) pair without evidence passes its grade to every chunk, unless the
  query has evidence for other documents (*partial evidence*): then a relevant document
  without quotes is left unjudged at chunk level (see :func:`chunk_qrels`).
- :func:`doc_run`: a chunk run turned into a doc run, a document ranking at its best chunk.
- :func:`context_tokens` / :func:`budget_run`: tokens returned in the top K (averaged
  over every query asked, empty ones included), and the longest prefix of each ranking
  that fits a token budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..data import Qrels, Run
from ..errors import ConfigError
from .chunking import Chunk, parse_chunk_id

__all__ = ["budget_run", "chunk_qrels", "context_tokens", "doc_run", "overlaps"]


def overlaps(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    """Whether half-open spans ``[a_start, a_end)`` and ``[b_start, b_end)`` share a char."""
    return a_start < b_end and b_start < a_end


def chunk_qrels(chunks: Sequence[Chunk], qrels: Qrels, evidence: Iterable[Any] = ()) -> Qrels:
    """Judgments for the chunks of every judged document.

    - A (query, doc) pair with evidence: each chunk gets the highest grade of the evidence
      spans it overlaps, or ``min(doc grade, 0)`` if it overlaps none.
    - A pair without evidence in a query without any evidence: every chunk inherits the
      document's grade (the judge said the document answers, not where).
    - *Partial evidence*, a relevant pair (grade > 0) without evidence in a query that has
      evidence for other documents: the pair is left unjudged at chunk level. Inheriting
      the grade would give that document as many relevant chunks as it has chunks (126
      against the quoted answer's 1 in one real set), so recall would be dominated by the
      unquoted documents and capped far below 1 for a perfect system; leaving them unjudged
      keeps R the number of located answers, and Judged@k shows when a system retrieves
      their chunks. ``evalset check`` warns about such queries. Non-relevant pairs
      (grade ≤ 0) always pass their grade to every chunk.
    """
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    spans: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    for ev in evidence:
        if ev.start < 0:
            raise ConfigError(f"evidence for query {ev.query_id!r}, doc {ev.doc_id!r} has no "
                              "resolved span; load the evaluation set with its loader")
        spans.setdefault((ev.query_id, ev.doc_id), []).append((ev.start, ev.end, ev.grade))
    with_evidence = {qid for qid, _ in spans}
    qs: list[str] = []
    ds: list[str] = []
    gs: list[int] = []
    for qid, docs in qrels.to_dict().items():
        for did, grade in docs.items():
            pair_spans = spans.get((qid, did))
            if pair_spans is None and grade > 0 and qid in with_evidence:
                continue  # partial evidence: unjudged at chunk level
            for c in by_doc.get(did, ()):
                qs.append(qid)
                ds.append(c.id)
                gs.append(_chunk_grade(c, grade, pair_spans))
    return Qrels.from_columns(qs, ds, np.asarray(gs, dtype=np.int64), source="chunk-qrels")


def _chunk_grade(chunk: Chunk, doc_grade: int, spans: list[tuple[int, int, int]] | None) -> int:
    if spans is None:
        return doc_grade
    hit = [g for a, b, g in spans if overlaps(chunk.start, chunk.end, a, b)]
    return max(hit) if hit else min(doc_grade, 0)


def doc_run(run: Run, name: str | None = None) -> Run:
    """Chunk run -> doc run: each document scores as its best chunk (ids ``doc#a-b``)."""
    q = run.query_ids[run.query_codes()].astype(str)
    docs = np.asarray([parse_chunk_id(c)[0] for c in run.doc_vocab.astype(str).tolist()],
                      dtype=object)[run.doc_codes]
    best: dict[tuple[str, str], float] = {}
    for qid, did, s in zip(q.tolist(), docs.tolist(), run.scores.tolist(), strict=True):
        key = (qid, did)
        if key not in best or s > best[key]:
            best[key] = s
    out = Run.from_columns([k[0] for k in best], [k[1] for k in best], list(best.values()),
                           name=name or run.name)
    out.metadata.update(run.metadata, level="doc")
    return out


def context_tokens(run: Run, token_counts: Mapping[str, int], k: int,
                   query_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Tokens in the top ``k`` results per query: mean, median, max over queries.

    ``query_ids``: every query that was asked. A query with no result in ``run`` (none
    retrieved, or none within a token budget) then counts as 0 tokens and 0 results, so
    the mean is over all queries, not only those that got something. Also returned:
    ``queries`` (how many the statistics are over), ``empty`` (how many got nothing) and
    ``results`` (mean results in the top ``k`` per query).
    """
    per_q = dict(zip(run.query_ids.astype(str).tolist(), _cumulative(run, token_counts),
                     strict=True))
    asked = list(per_q) if query_ids is None else list(dict.fromkeys(query_ids))
    cums = [per_q.get(q, np.empty(0)) for q in asked]
    totals = np.asarray([float(c[min(k, len(c)) - 1]) if len(c) else 0.0 for c in cums])
    results = np.asarray([min(k, len(c)) for c in cums], dtype=np.float64)
    out: dict[str, Any] = {"k": k, "queries": len(asked),
                           "empty": int(np.sum(results == 0)),
                           "results": float(results.mean()) if len(asked) else 0.0}
    if not len(asked):
        return {**out, "mean": 0.0, "median": 0.0, "max": 0.0}
    return {**out, "mean": float(totals.mean()), "median": float(np.median(totals)),
            "max": float(totals.max())}


def budget_run(run: Run, token_counts: Mapping[str, int], budget: int) -> Run:
    """Each query's longest ranking prefix whose tokens add up to at most ``budget``."""
    if budget <= 0:
        raise ConfigError(f"token budget {budget}: expected a positive number of tokens")
    q = run.query_ids[run.query_codes()].astype(str)
    d = run.doc_vocab[run.doc_codes].astype(str)
    cum = np.concatenate([c for c in _cumulative(run, token_counts)] or [np.empty(0)])
    keep = cum <= budget
    out = Run.from_columns(q[keep].tolist(), d[keep].tolist(), run.scores[keep],
                           name=f"{run.name}@{budget}tok")
    out.metadata.update(run.metadata, token_budget=budget)
    return out


def _cumulative(run: Run, token_counts: Mapping[str, int]) -> list[np.ndarray]:
    ids = run.doc_vocab.astype(str).tolist()
    used = set(np.unique(run.doc_codes).tolist())
    missing = [i for j, i in enumerate(ids) if j in used and i not in token_counts]
    if missing:
        raise ConfigError(f"no token count for {len(missing)} retrieved ids (e.g. "
                          f"{missing[0]!r}); expected counts for every id in the run")
    counts = np.asarray([token_counts.get(i, 0) for i in ids], dtype=np.int64)[run.doc_codes]
    return [np.cumsum(counts[a:b]) for a, b in zip(run.offsets[:-1], run.offsets[1:],
                                                   strict=True)]


def token_counts(ids: Sequence[str], texts: Sequence[str],
                 count: Callable[[str], int]) -> dict[str, int]:
    """``{id: count(text)}``, e.g. ``count = lambda t: len(encoder.token_offsets(t))``."""
    return {i: count(t) for i, t in zip(ids, texts, strict=True)}
