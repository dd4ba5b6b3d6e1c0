"""Vectorised measure kernels over all queries at once, each registered as a family
(ARCHITECTURE §4).

Every kernel takes a :class:`Judged` view — one row per retrieved entry the qrels judge,
grouped by query and in rank order — and returns one float per qrels query. Segment sums use
``np.bincount``; nothing loops over queries in Python.

Each kernel is declared a measure family with :func:`~.registry.register` (names, aliases,
trec_eval names, parameters); its docstring is the formula the docs print. Adding a measure
is one decorated kernel here plus its test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .registry import GAIN, family, register

if TYPE_CHECKING:
    from .spec import Measure

__all__ = ["Judged", "compute"]


@dataclass(frozen=True)
class Judged:
    """Retrieved entries found in the qrels of their query, with their judgments.

    Entries the qrels don't hold add nothing to any measure, so only found ones are
    here: ``query`` (int32, qrels query index, non-decreasing), ``rank`` (0-based rank in
    the full run), ``grade`` (int16), ``judged`` (grade ≥ 0; negative is unjudged),
    ``qrels_grades`` (qrels grades sorted by query, then grade descending),
    ``qrels_query`` (query index of each), ``qrels_rank`` (position in that ideal order),
    ``n_queries`` and ``n_ret`` (documents retrieved per qrels query, all of them).
    """

    query: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    judged: np.ndarray
    qrels_grades: np.ndarray
    qrels_query: np.ndarray
    qrels_rank: np.ndarray
    n_queries: int
    n_ret: np.ndarray

    def per_query(self, weights: np.ndarray, query: np.ndarray | None = None) -> np.ndarray:
        """Sum of ``weights`` per query (segment sum)."""
        q = self.query if query is None else query
        return np.bincount(q, weights=weights, minlength=self.n_queries).astype(np.float64)

    def relevant(self, rel: int) -> np.ndarray:
        return self.judged & (self.grade >= rel)

    def num_rel(self, rel: int) -> np.ndarray:
        return self.per_query(self.qrels_grades >= rel, self.qrels_query)

    def num_ret(self) -> np.ndarray:
        return self.n_ret

    def within(self, cutoff: int | None) -> np.ndarray:
        return np.ones(len(self.rank), dtype=bool) if cutoff is None else self.rank < cutoff


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0."""
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _rel_before(j: Judged, mask: np.ndarray) -> np.ndarray:
    """Per entry: count of ``mask`` entries of the same query at or before it."""
    cum = np.cumsum(mask, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, j.query[1:] != j.query[:-1]]) if len(j.query) else \
        np.zeros(0, dtype=np.int64)
    seg = np.repeat(starts, np.diff(np.r_[starts, len(j.query)]))
    base = cum[seg] - mask[seg]
    return cum - base


def _k(m: Measure) -> int:
    """The cutoff of a family that requires one (a checked Measure always has it)."""
    if m.cutoff is None:
        raise ValueError(f"{m.family} needs a cutoff")
    return m.cutoff


def _gain(grades: np.ndarray, kind: str) -> np.ndarray:
    g = np.maximum(grades.astype(np.float64), 0.0)
    return np.exp2(g) - 1.0 if kind == "exp" else g


# -- the measure families, in the order of the docs' reference ---------------------------
@register("P", "relevant in top k / k", cutoff="required", aliases=("precision",),
          trec_eval_cut="P")
def precision(j: Judged, m: Measure) -> np.ndarray:
    """P@k = |relevant ∩ top k| / k.

    The denominator is k even when fewer than k documents were retrieved (trec_eval P_k).
    """
    return j.per_query(j.relevant(m.rel) & j.within(m.cutoff)) / _k(m)


@register("R", "relevant in top k / all relevant", cutoff="required", aliases=("recall",),
          trec_eval_cut="recall")
def recall(j: Judged, m: Measure) -> np.ndarray:
    """R@k = |relevant ∩ top k| / |relevant| (0 if no relevant)."""
    return _ratio(j.per_query(j.relevant(m.rel) & j.within(m.cutoff)), j.num_rel(m.rel))


@register("RR", "1 / rank of the first relevant within k", aliases=("mrr",),
          trec_eval="recip_rank")
def reciprocal_rank(j: Judged, m: Measure) -> np.ndarray:
    """RR@k = 1 / rank of the first relevant within k (0 if none); Voorhees, TREC-8 QA.

    trec_eval has no cutoff form (``recip_rank`` is ``RR``); ``RR@10`` is MS MARCO's MRR@10.
    """
    hit = np.flatnonzero(j.relevant(m.rel) & j.within(m.cutoff))
    first_q, first = np.unique(j.query[hit], return_index=True)
    out = np.zeros(j.n_queries)
    out[first_q] = 1.0 / (j.rank[hit[first]] + 1)
    return out


@register("AP", "sum of P@rank over relevant within k / all relevant", aliases=("map",),
          trec_eval="map", trec_eval_cut="map_cut")
def average_precision(j: Judged, m: Measure) -> np.ndarray:
    """AP@k = Σ_{relevant d in top k} P@rank(d) / |relevant| (trec_eval map, map_cut).

    The denominator counts every relevant document of the qrels, retrieved or not.
    """
    rel = j.relevant(m.rel)
    prec = _rel_before(j, rel) / (j.rank + 1.0)
    return _ratio(j.per_query(np.where(rel & j.within(m.cutoff), prec, 0.0)), j.num_rel(m.rel))


@register("nDCG", "DCG / ideal DCG, gain = grade, discount log2(rank+1)", params=(GAIN,),
          trec_eval="ndcg", trec_eval_cut="ndcg_cut",
          ignored={"rel": "nDCG uses the grades as gains and ignores rel, as trec_eval"})
def ndcg(j: Judged, m: Measure) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k, DCG = Σ_{r ≤ k} gain(r) / log2(r + 1) (Järvelin & Kekäläinen).

    gain = grade (linear) or 2^grade − 1 (exp); negative or unjudged → 0. The ideal
    ranking sorts all positive grades of the qrels; ``rel`` is ignored, as in trec_eval.
    """
    gains = np.where(j.judged, _gain(j.grade, m.gain), 0.0)
    dcg = j.per_query(np.where(j.within(m.cutoff), gains / np.log2(j.rank + 2.0), 0.0))
    ideal_mask = j.qrels_grades > 0
    if m.cutoff is not None:
        ideal_mask &= j.qrels_rank < m.cutoff
    ideal_gain = np.where(ideal_mask, _gain(j.qrels_grades, m.gain), 0.0)
    idcg = j.per_query(ideal_gain / np.log2(j.qrels_rank + 2.0), j.qrels_query)
    return _ratio(dcg, idcg)


@register("Rprec", "relevant in top R / R, R = all relevant", cutoff="none",
          trec_eval="Rprec")
def r_precision(j: Judged, m: Measure) -> np.ndarray:
    """Rprec = |relevant ∩ top R| / R with R = |relevant| (0 if R = 0)."""
    num_rel = j.num_rel(m.rel)
    in_top_r = j.rank < num_rel[j.query] if len(j.query) else np.zeros(0, dtype=bool)
    return _ratio(j.per_query(j.relevant(m.rel) & in_top_r), num_rel)


@register("Success", "1 if any relevant in top k", cutoff="required",
          aliases=("hit_rate", "hits"), trec_eval_cut="success")
def success(j: Judged, m: Measure) -> np.ndarray:
    """Success@k = 1 if |relevant ∩ top k| > 0, else 0 (trec_eval success_k)."""
    return (j.per_query(j.relevant(m.rel) & j.within(m.cutoff)) > 0).astype(np.float64)


@register("Bpref", "trec_eval's bpref", cutoff="none", trec_eval="bpref")
def bpref(j: Judged, m: Measure) -> np.ndarray:
    """bpref = (1/R) Σ_{relevant r} (1 − min(n_r, R) / min(R, N)) (Buckley & Voorhees 2004).

    n_r = judged non-relevant retrieved above r; N = judged non-relevant in the qrels;
    a relevant doc with no non-relevant above it scores 1 (trec_eval's m_bpref.c).
    """
    rel = j.relevant(m.rel)
    nonrel = j.judged & (j.grade < m.rel)
    num_rel = j.num_rel(m.rel)
    num_nonrel = j.per_query((j.qrels_grades >= 0) & (j.qrels_grades < m.rel), j.qrels_query)
    above = _rel_before(j, nonrel) - nonrel
    q = j.query
    denom = np.minimum(num_rel, num_nonrel)[q]
    frac = np.zeros(len(q))
    np.divide(np.minimum(above, num_rel[q]), denom, out=frac, where=denom > 0)
    term = np.where(above > 0, 1.0 - frac, 1.0)
    return _ratio(j.per_query(np.where(rel, term, 0.0)), num_rel)


@register("Judged", "judged docs in top k / min(k, retrieved)", cutoff="required", params=(),
          no_trec_eval="trec_eval has no judged-fraction measure; Judged@k is ir_measures'")
def judged_at(j: Judged, m: Measure) -> np.ndarray:
    """Judged@k = |judged ∩ top k| / min(k, retrieved) (0 if nothing retrieved).

    A document is judged when the qrels give it a grade ≥ 0, relevant or not.
    """
    return _ratio(j.per_query(j.judged & j.within(m.cutoff)),
                  np.minimum(j.num_ret(), _k(m)))


@register("NumRet", "retrieved documents (summed)", cutoff="none", params=(),
          trec_eval="num_ret", is_count=True)
def num_ret(j: Judged, m: Measure) -> np.ndarray:
    """NumRet = |retrieved| (after ``depth``); ``all`` = Σ over queries."""
    return j.num_ret()


@register("NumRel", "relevant documents in the qrels (summed)", cutoff="none",
          trec_eval="num_rel", is_count=True)
def num_rel(j: Judged, m: Measure) -> np.ndarray:
    """NumRel = |{d in the qrels of the query : grade(d) ≥ rel}|; ``all`` = Σ over queries.

    ``all`` is always the sum of the per-query values. trec_eval ``-c`` instead recounts
    its ``all`` line from the raw qrels with grade > 0 and ignores ``-l``, so with
    ``rel`` ≥ 2 and ``missing="zero"`` its ``num_rel all`` can be larger than ours
    (m_num_rel.c, ``te_calc_avg_num_rel``); the per-query values agree.
    """
    return j.num_rel(m.rel)


@register("NumRelRet", "relevant documents retrieved (summed)", cutoff="none",
          trec_eval="num_rel_ret", is_count=True)
def num_rel_ret(j: Judged, m: Measure) -> np.ndarray:
    """NumRelRet = |relevant ∩ retrieved|; ``all`` = Σ over queries."""
    return j.per_query(j.relevant(m.rel))


@register("NumQ", "evaluated queries (summed)", cutoff="none", params=(), trec_eval="num_q",
          is_count=True)
def num_q(j: Judged, m: Measure) -> np.ndarray:
    """NumQ = 1 per evaluated query; ``all`` = Σ = the number of queries averaged over."""
    return np.ones(j.n_queries)


def compute(j: Judged, m: Measure) -> np.ndarray:
    """Per-query values of measure ``m`` (one per qrels query), by its family's kernel."""
    return family(m.family).kernel(j, m)
