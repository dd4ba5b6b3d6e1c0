"""What the runner needs beyond single runs: chunk-level judgments, fusion, context size.

- :func:`chunk_qrels` — chunk judgments by overlap with evidence spans (DESIGN §4): a chunk
  of a judged document gets the highest grade of the evidence quotes of that query it
  overlaps, 0 otherwise; a (query, document) pair without evidence passes its grade on to
  every chunk of the document.
- :func:`fuse` — reciprocal rank fusion, or a weighted sum of min-max / z-score normalised
  scores, of runs over the same ids.
- :func:`context_tokens` — words in the top ``K`` units returned, per query.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from ..data.evalset import EvalSet
from ..data.qrels import Qrels
from ..data.run import Run
from ..retrieval.chunking import Chunk

__all__ = ["chunk_qrels", "context_tokens", "fuse", "run_columns"]


def run_columns(run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(query_ids, doc_ids, scores, ranks)`` per entry, ranks 1-based in run order."""
    qids = run.query_ids[run.query_codes()]
    dids = run.doc_vocab[run.doc_codes]
    return qids, dids, np.asarray(run.scores, dtype=np.float64), run.ranks() + 1


def chunk_qrels(es: EvalSet, chunks: Iterable[Chunk]) -> Qrels:
    """Judgments of ``chunks`` for every judged query of ``es`` (see the module docstring)."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    spans: dict[tuple[str, str], list[tuple[int, int, int]]] = defaultdict(list)
    for e in es.evidence:
        spans[(e.query_id, e.doc_id)].append((e.start, e.end, e.grade))
    q_out: list[str] = []
    d_out: list[str] = []
    g_out: list[int] = []
    qrels = es.qrels
    qids = qrels.query_ids[qrels.query_codes()].tolist()
    dids = qrels.doc_vocab[qrels.doc_codes].tolist()
    for q, d, g in zip(qids, dids, qrels.grades.tolist(), strict=True):
        found = spans.get((q, d))
        for c in by_doc.get(d, []):
            grade = g if found is None or g <= 0 else _overlap_grade(c, found)
            q_out.append(q)
            d_out.append(c.id)
            g_out.append(grade)
    return Qrels.from_columns(q_out, d_out, np.asarray(g_out, dtype=np.int64),
                              source=f"{es.name} (chunk level)")


def _overlap_grade(chunk: Chunk, spans: list[tuple[int, int, int]]) -> int:
    grades = [g for a, b, g in spans if a < chunk.end and chunk.start < b]
    return max(grades, default=0)


def fuse(runs: Sequence[Run], method: str = "rrf", *, k: int = 100, rrf_k: int = 60,
         weights: Sequence[float] | None = None, normalization: str = "minmax",
         name: str = "hybrid") -> Run:
    """Fuse ``runs`` (same id space) into one run of the top ``k`` per query.

    RRF: ``score(d) = Σ_r w_r / (rrf_k + rank_r(d))`` (Cormack et al. 2009); weighted:
    ``Σ_r w_r · norm_r(score_r(d))`` with per-query min-max or z-score normalisation; a doc
    missing from a run contributes 0 for it. Weights default to 1.
    """
    w = list(weights) if weights is not None else [1.0] * len(runs)
    total: dict[tuple[str, str], float] = defaultdict(float)
    for run, weight in zip(runs, w, strict=True):
        qids, dids, scores, ranks = run_columns(run)
        if method == "rrf":
            part = weight / (rrf_k + ranks.astype(np.float64))
        else:
            part = weight * _normalise(qids, scores, normalization)
        for q, d, v in zip(qids.tolist(), dids.tolist(), part.tolist(), strict=True):
            total[(q, d)] += v
    if not total:
        return Run.from_columns([], [], np.empty(0), name=name)
    keys = list(total)
    fused = Run.from_columns([q for q, _ in keys], [d for _, d in keys],
                             np.fromiter(total.values(), dtype=np.float64, count=len(keys)),
                             name=name)
    return fused.truncate(k)


def _normalise(qids: np.ndarray, scores: np.ndarray, how: str) -> np.ndarray:
    out = np.zeros_like(scores)
    _, inverse = np.unique(qids, return_inverse=True)
    for g in range(inverse.max() + 1 if len(inverse) else 0):
        sel = inverse == g
        s = scores[sel]
        if how == "zscore":
            sd = s.std()
            out[sel] = (s - s.mean()) / sd if sd > 0 else 0.0
        else:
            span = s.max() - s.min()
            out[sel] = (s - s.min()) / span if span > 0 else 1.0
    return out


def context_tokens(run: Run, lengths: dict[str, int], cutoffs: Sequence[int],
                   query_ids: Sequence[str]) -> dict[int, np.ndarray]:
    """``{K: words in the top K results of each query}`` aligned with ``query_ids``."""
    qids, dids, _, ranks = run_columns(run)
    words = np.fromiter((lengths.get(d, 0) for d in dids.tolist()), dtype=np.float64,
                        count=len(dids))
    index = {q: i for i, q in enumerate(query_ids)}
    rows = np.fromiter((index.get(q, -1) for q in qids.tolist()), dtype=np.int64,
                       count=len(qids))
    out: dict[int, np.ndarray] = {}
    for k in cutoffs:
        keep = (ranks <= k) & (rows >= 0)
        out[k] = np.bincount(rows[keep], weights=words[keep], minlength=len(query_ids))
    return out
