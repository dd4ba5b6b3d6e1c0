"""Relevance cost of an approximate index: what it loses in nDCG@10 and R@100.

The ANN run and the exact run of the same embeddings are evaluated on the judged queries
with the measures engine; per query Δ = ANN − exact, and a paired test from
``searchbench.stats`` (randomisation by default) gives p and a 95 % interval of the mean Δ.
A setting "loses no significant relevance" when, for every measure, mean Δ ≥ 0 or
p ≥ α (uncorrected: the conservative direction for this claim). Not significant is not
"no loss": read the interval too.

Run scores are ``−rank``, so each run keeps the order its search returned (exact: by
distance, then id).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.qrels import Qrels
from ..data.run import Run
from ..knn import GroundTruth

__all__ = ["RelevanceContext", "cheapest_lossless"]


@dataclass
class RelevanceContext:
    """Doc ids of the corpus rows, query ids of the query rows, and their judgments."""

    doc_ids: Sequence[str]
    query_ids: Sequence[str]
    qrels: Qrels
    measures: tuple[str, ...] = ("nDCG@10", "R@100")
    test: str = "randomization"
    alpha: float = 0.05
    seed: int = 0
    prepare: Callable[[Run], Run] | None = None  # e.g. EvalSet.prepare_run (ArguAna)
    _evaluator: Any = field(default=None, repr=False)
    _exact: Any = field(default=None, repr=False)

    @property
    def depth(self) -> int:
        """Results per query the measures need (the largest cutoff)."""
        from ..measures import parse_measures

        cuts = [m.cutoff or 1000 for m in parse_measures(list(self.measures))]
        return max(cuts)

    def describe(self) -> dict[str, Any]:
        return {"measures": list(self.measures), "test": self.test, "alpha": self.alpha,
                "seed": self.seed, "queries": len(self.query_ids),
                "rule": "no significant loss: for every measure, mean Δ ≥ 0 or p ≥ alpha "
                        "(uncorrected)"}

    def run(self, ids: np.ndarray, name: str) -> Run:
        """A :class:`Run` from result ids in rank order (−1 = none); score = −rank."""
        docs = np.asarray(self.doc_ids, dtype=object)
        qs = np.repeat(np.asarray(self.query_ids, dtype=object), ids.shape[1])
        rank = np.broadcast_to(np.arange(ids.shape[1], dtype=np.float64), ids.shape).ravel()
        flat = ids.ravel()
        keep = flat >= 0
        return Run.from_columns(qs[keep].tolist(), docs[flat[keep]].tolist(), -rank[keep],
                                name=name, keep="first")

    def _scores(self, run: Run) -> dict[str, np.ndarray]:
        from ..measures import Evaluator

        if self._evaluator is None:
            self._evaluator = Evaluator(self.qrels, list(self.measures))
        if self.prepare is not None:
            run = self.prepare(run)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = self._evaluator.evaluate(run)
        return {m: np.asarray(res.scores[m], dtype=np.float64) for m in res.measures}

    def cost(self, exact: GroundTruth, found: np.ndarray | dict[int, np.ndarray]
             ) -> dict[str, Any]:
        """Per measure: exact and ANN means, mean Δ, p, interval, and the verdict.

        ``found``: result ids, or ``{K: ids}`` for searches of several depths; a measure
        with cutoff c is read from the shallowest search with K ≥ c (else the deepest).
        """
        from ..measures import parse_measures
        from ..stats import paired_test

        k = self.depth
        if self._exact is None:
            self._exact = self._scores(self.run(exact.ids[:, :k], "exact"))
        runs = found if isinstance(found, dict) else {found.shape[1]: found}
        scored = {d: self._scores(self.run(ids[:, :k], "ann")) for d, ids in runs.items()}
        out: dict[str, Any] = {}
        for mm in parse_measures(list(self.measures)):
            m = str(mm)
            depth = min((d for d in scored if d >= (mm.cutoff or k)), default=max(scored))
            diff = scored[depth][m] - self._exact[m]
            res = paired_test(diff, self.test, seed=self.seed)
            p = float(np.asarray(res.p_values).ravel()[0])
            out[m] = {"exact": float(self._exact[m].mean()),
                      "ann": float(scored[depth][m].mean()), "K": depth,
                      "delta": float(diff.mean()), "p": p,
                      "ci": [float(np.ravel(res.ci_low)[0]), float(np.ravel(res.ci_high)[0])],
                      "significant_loss": bool(diff.mean() < 0 and p < self.alpha)}
        out["no_significant_loss"] = not any(v["significant_loss"] for v in out.values()
                                             if isinstance(v, dict))
        return out


def cheapest_lossless(points: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fastest point (highest batch QPS) whose relevance loss is not significant."""
    ok = [p for p in points if p.get("relevance", {}).get("no_significant_loss")]
    return max(ok, key=lambda p: p["qps_batch"]) if ok else None
