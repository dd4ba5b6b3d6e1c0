"""Relevance cost of an approximate index: what it loses in nDCG@10 and R@100.

The ANN run and the exact run of the same embeddings are evaluated on the judged queries
with the measures engine; per query Δ = ANN − exact, and a paired test from
``searchbench.stats`` gives p and a 95 % interval of the mean Δ. The default test is
Student's paired t test, whose interval ``Δ̄ ± t·s/√n`` is the same procedure: p < α
exactly when the interval excludes 0. (``test="bootstrap"`` pairs the bootstrap p with its
percentile interval; randomisation and Wilcoxon come with the t interval.)

Verdict per measure, using the test and the interval together, so they never contradict:

- ``loss``: Δ̄ < 0, p < α and the interval lies below 0;
- ``possible loss``: Δ̄ < 0 and only one of the two says so (possible only when the
  interval is not the test's own, e.g. randomisation with the t interval);
- ``no significant loss``: otherwise. Not significant is not "no loss": read the interval.

A setting "loses no significant relevance" when no measure has ``loss`` or ``possible
loss``. Separately, ``lost_queries`` lists the queries it loses entirely: the measure is
0 with the ANN run where the exact run scored above 0 (e.g. R@100 = 0 where exact search
found relevant documents); such a setting is flagged and never recommended while another
setting keeps every query (:func:`cheapest_lossless`).

Run scores are ``−rank``, so each run keeps the order its search returned (exact: by
distance, then id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data import Qrels, Run
from ..knn import GroundTruth
from ..measures import Scorer, parse_measures

__all__ = ["VERDICTS", "RelevanceContext", "cheapest_lossless", "noise_ties", "qps_range",
           "verdict"]

VERDICTS = ("loss", "possible loss", "no significant loss")
INTERVALS = {"t": "Student t (the t test's own interval)",
             "bootstrap": "bootstrap percentile (the same resamples as the test)",
             "randomization": "Student t", "wilcoxon": "Student t"}


def verdict(delta: float, p: float, ci_high: float, alpha: float) -> str:
    """``loss`` when the test (p < α) and the interval (upper end < 0) both show a loss,
    ``possible loss`` when only one does, else ``no significant loss`` (see module doc)."""
    if not delta < 0:
        return "no significant loss"
    shown = int(p < alpha) + int(ci_high < 0)
    return VERDICTS[2 - shown]


@dataclass
class RelevanceContext:
    """Doc ids of the corpus rows, query ids of the query rows, and their judgments."""

    doc_ids: Sequence[str]
    query_ids: Sequence[str]
    qrels: Qrels
    measures: tuple[str, ...] = ("nDCG@10", "R@100")
    test: str = "t"
    alpha: float = 0.05
    seed: int = 0
    prepare: Callable[[Run], Run] | None = None  # e.g. EvalSet.prepare_run (ArguAna)
    _scorer: Any = field(default=None, repr=False)
    _exact: Any = field(default=None, repr=False)
    _scored_ids: list[str] = field(default_factory=list, repr=False)

    @property
    def depth(self) -> int:
        """Results per query the measures need (the largest cutoff)."""
        cuts = [m.cutoff or 1000 for m in parse_measures(list(self.measures))]
        return max(cuts)

    def describe(self) -> dict[str, Any]:
        from ..stats import test_name  # lazy: loads stats on first use

        return {"measures": list(self.measures), "test": self.test, "alpha": self.alpha,
                "seed": self.seed, "queries": len(self.query_ids),
                "interval": INTERVALS[test_name(self.test)],
                "rule": "loss: mean Δ < 0 with p < alpha and the 95 % interval below 0; "
                        "possible loss: only one of the two; a query is lost when the "
                        "measure is 0 where exact search scored above 0 (uncorrected)"}

    def run(self, ids: np.ndarray, name: str) -> Run:
        """A :class:`Run` from result ids in rank order (−1 = none); score = −rank."""
        docs = np.asarray(self.doc_ids, dtype=object)
        qs = np.repeat(np.asarray(self.query_ids, dtype=object), ids.shape[1])
        rank = np.broadcast_to(np.arange(ids.shape[1], dtype=np.float64), ids.shape).ravel()
        flat = ids.ravel()
        keep = flat >= 0
        return Run.from_columns(qs[keep].tolist(), docs[flat[keep]].tolist(), -rank[keep],
                                name=name, keep="first")

    def _scores(self, run: Run, name: str) -> tuple[dict[str, np.ndarray], Any]:
        """Per-query scores of ``run`` prepared as the set asks, through the one scoring
        step (:class:`~searchbench.measures.Scorer`: warns when it is almost entirely
        unjudged), and its coverage (mean Judged@k)."""
        if self._scorer is None:  # queries without results count 0, silently, as before
            self._scorer = Scorer(self.qrels, list(self.measures), unanswerable="zero",
                                  missing_warnings=False)
        if self.prepare is not None:
            run = self.prepare(run)
        done = self._scorer.score(run, name)
        res = done.result
        self._scored_ids = res.query_ids.astype(str).tolist()  # same for every run (qrels)
        return ({m: np.asarray(res.scores[m], dtype=np.float64) for m in res.measures},
                done.coverage)

    def cost(self, exact: GroundTruth, found: np.ndarray | dict[int, np.ndarray]
             ) -> dict[str, Any]:
        """Per measure: exact and ANN means, mean Δ, p, interval, and the verdict.

        ``found``: result ids, or ``{K: ids}`` for searches of several depths; a measure
        with cutoff c is read from the shallowest search with K ≥ c (else the deepest).
        """
        k = self.depth
        if self._exact is None:
            self._exact = self._scores(self.run(exact.ids[:, :k], "exact"), "exact search")
        runs = found if isinstance(found, dict) else {found.shape[1]: found}
        both = {d: self._scores(self.run(ids[:, :k], "ann"), f"ANN search (K={d})")
                for d, ids in runs.items()}
        scored = {d: s for d, (s, _) in both.items()}
        exact_scores, exact_cov = self._exact
        out: dict[str, Any] = {}
        for mm in parse_measures(list(self.measures)):
            m = str(mm)
            depth = min((d for d in scored if d >= (mm.cutoff or k)), default=max(scored))
            out[m] = self._measure_cost(exact_scores[m], scored[depth][m], depth)
        per_measure = [v for v in out.values() if isinstance(v, dict)]
        lost = sorted({q for v in per_measure for q in v["lost_queries"]})
        out["no_significant_loss"] = not any(v["significant_loss"] for v in per_measure)
        out["lost_queries"] = lost
        shallow = both[min(both)][1]  # Judged@k of the timed search (its K is the smallest)
        out.update(judged_k=exact_cov.k, judged_exact=exact_cov.mean, judged_ann=shallow.mean)
        return out

    def _measure_cost(self, exact: np.ndarray, ann: np.ndarray, depth: int) -> dict[str, Any]:
        """Means, Δ, p, interval, verdict and lost queries of one measure."""
        from ..stats import paired_test  # lazy: loads stats on first use

        diff = ann - exact
        res = paired_test(diff, self.test, seed=self.seed)
        p = float(np.asarray(res.p_values).ravel()[0])
        low, high = float(np.ravel(res.ci_low)[0]), float(np.ravel(res.ci_high)[0])
        said = verdict(float(diff.mean()), p, high, self.alpha)
        lost = np.flatnonzero((exact > 0) & (ann == 0))
        return {"exact": float(exact.mean()), "ann": float(ann.mean()), "K": depth,
                "delta": float(diff.mean()), "p": p, "ci": [low, high], "verdict": said,
                "significant_loss": said != "no significant loss",
                "lost_queries": [self._scored_ids[i] for i in lost]}


def qps_range(point: dict[str, Any]) -> tuple[float, float]:
    """``(low, best)`` batch QPS of a point: the best run and the slowest of the fastest
    runs the timing kept (``qps_batch_low``; sweeps written before it: ``qps_batch_min``)."""
    best = float(point["qps_batch"])
    return float(point.get("qps_batch_low", point.get("qps_batch_min", best))), best


def _knn_recall(point: dict[str, Any]) -> float:
    return float(point.get("knn_recall", {}).get("by_id", {}).get("mean", 0.0))


def _eligible(points: list[dict[str, Any]], allow_lost: bool) -> list[dict[str, Any]]:
    return [p for p in points if p.get("relevance", {}).get("no_significant_loss")
            and (allow_lost or not p["relevance"].get("lost_queries"))]


def noise_ties(points: list[dict[str, Any]], allow_lost: bool = False
               ) -> list[dict[str, Any]]:
    """The eligible points (no significant or possible loss; no lost query unless
    ``allow_lost``) whose QPS range overlaps the fastest one's: timing cannot tell them
    apart. Fastest first."""
    ok = _eligible(points, allow_lost)
    if not ok:
        return []
    top_low = qps_range(max(ok, key=lambda p: p["qps_batch"]))[0]
    tied = [p for p in ok if qps_range(p)[1] >= top_low]
    return sorted(tied, key=lambda p: -p["qps_batch"])


def cheapest_lossless(points: list[dict[str, Any]], allow_lost: bool = False
                      ) -> dict[str, Any] | None:
    """The fastest setting without a significant (or possible) relevance loss that loses
    no query entirely (unless ``allow_lost``). Settings whose batch QPS ranges overlap the
    fastest one's are ties within the timing noise; among them the one with the highest
    knn_recall wins (then QPS), so the choice never rests on a difference inside the noise."""
    tied = noise_ties(points, allow_lost)
    return max(tied, key=lambda p: (_knn_recall(p), p["qps_batch"])) if tied else None
