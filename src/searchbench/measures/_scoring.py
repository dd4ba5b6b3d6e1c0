"""The one scoring step: evaluate with a Judged@k probe, leave out the queries marked
``no_answer``, warn when a run is almost entirely unjudged, count the scored queries.

Every place that prints or stores scores goes through :class:`Scorer`: ``searchbench
eval`` (in memory, streamed or on Ray: :func:`searchbench.distributed.evaluate_files`),
:func:`~searchbench.comparison.compare`, the retrieval pipeline (``run``, ``experiment``)
and the relevance cost of the ANN sweeps (:mod:`searchbench.ann.relevance`)::

    scorer = Scorer(qrels, ["nDCG@10", "R@100"])
    scored = scorer.score(run)      # result, coverage (mean Judged@10), scored queries
    scored.result.mean["nDCG@10"], scored.coverage.flag()

A caller that evaluates elsewhere (streamed, on Ray) or needs every raw result first
(``compare`` keeps the queries all runs answer) calls :meth:`Scorer.evaluate` /
:meth:`Scorer.finish` separately: the evaluator to use is :attr:`Scorer.evaluator`.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..vocab import canonical_unanswerable
from ._coverage import Coverage, CoverageProbe
from ._scored import ScoredQueries, apply_unanswerable, scored_queries
from .evaluator import EvalResult, Evaluator

__all__ = ["Scored", "Scorer"]


@dataclass
class Scored:
    """One run through the scoring step: its result as asked (no probe unless asked),
    mean Judged@k, and which queries were scored (:class:`ScoredQueries`)."""

    result: EvalResult
    coverage: Coverage
    scored: ScoredQueries


class Scorer:
    """Evaluate runs on ``qrels`` with ``measures`` through the one coverage step.

    ``missing`` and ``depth`` go to the :class:`Evaluator`; ``no_answer`` are the ids of
    queries marked ``no_answer``, left out under ``unanswerable="skip"`` and scored under
    ``"zero"``; ``missing_warnings=False`` silences the evaluator's own warnings (queries
    without results), never the unjudged-run warning."""

    def __init__(self, qrels: Any, measures: Sequence[str], *, missing: str = "zero",
                 depth: int | None = None, no_answer: Collection[str] = (),
                 unanswerable: str = "skip", missing_warnings: bool = True) -> None:
        self.probe = CoverageProbe(measures)
        self.evaluator = Evaluator(qrels, self.probe.all_measures, missing=missing,
                                   depth=depth)
        self.no_answer = list(no_answer)
        self.unanswerable = canonical_unanswerable(unanswerable)
        self.missing_warnings = missing_warnings

    @property
    def qrels(self) -> Any:
        """The judgments as the evaluator holds them."""
        return self.evaluator.qrels

    @property
    def wanted(self) -> list[str]:
        """The measures asked for (without the probe unless asked)."""
        return self.probe.wanted

    def evaluate(self, run: Any) -> EvalResult:
        """The raw result of ``run``: every query, the probe included."""
        with warnings.catch_warnings():
            if not self.missing_warnings:
                warnings.simplefilter("ignore")
            return self.evaluator.evaluate(run)

    def finish(self, raw: EvalResult, run: Any, name: str | None = None) -> Scored:
        """``raw`` (from :meth:`evaluate`, or streamed / Ray results of
        :attr:`evaluator`) with the marked queries applied, the probe taken out and its
        coverage; warns when ``run`` (named ``name``) is almost entirely unjudged."""
        kept = raw.query_ids
        result = apply_unanswerable(raw, self.no_answer, self.unanswerable)
        result, coverage = self.probe.finish(result, run, self.qrels, name)
        return Scored(result, coverage, self.scored_queries(result.query_ids, kept))

    def score(self, run: Any, name: str | None = None) -> Scored:
        """:meth:`evaluate` then :meth:`finish`."""
        return self.finish(self.evaluate(run), run, name)

    def scored_queries(self, query_ids: Iterable[Any], kept: Iterable[Any] | None = None
                       ) -> ScoredQueries:
        """The :class:`ScoredQueries` of ``query_ids`` (scored; ``kept``: before the
        marks were applied)."""
        return scored_queries(self.qrels, query_ids, self.wanted, self.no_answer,
                              self.unanswerable, kept=kept)
