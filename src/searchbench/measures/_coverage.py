"""Judged coverage: how much of each run's top k the qrels judge.

``Judged@k`` of a query is the share of its top ``k`` results that have a judgment (any
grade, 0 included): ``|judged ∩ top k| / min(k, retrieved)`` (the measure of that name).
Measures count an unjudged document as non-relevant, so a run whose top ``k`` is mostly
unjudged gets low scores that say more about the judgments than about the run. The *main
cutoff* is the cutoff of the first measure that has one (``nDCG@10`` → 10), else 10.

Two thresholds, on the mean Judged@k of a run over the evaluated queries:

- below :data:`UNJUDGED_WARN_BELOW` (0.1): the run is *almost entirely unjudged*: a
  :class:`~searchbench.errors.SearchbenchWarning` names the likely cause, e.g. a
  chunk-level run (ids ``doc#start-end``) scored against document qrels;
- below :data:`MOSTLY_UNJUDGED_BELOW` (0.5): a comparison *rests on mostly unjudged
  documents*: :func:`~searchbench.comparison.compare` adds a note.

The helpers live with the measures (not in ``comparison``) so that ``searchbench eval``
uses them without importing the statistics.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SearchbenchWarning, UnknownMeasureError, user_stacklevel
from .evaluator import Evaluator
from .spec import parse_measure

if TYPE_CHECKING:
    from .evaluator import EvalResult

__all__ = [
    "MOSTLY_UNJUDGED_BELOW",
    "UNJUDGED_WARN_BELOW",
    "Coverage",
    "CoverageProbe",
    "judged_cutoff",
    "judged_notes",
    "unjudged_cause",
    "warn_unjudged",
    "without_measure",
]

UNJUDGED_WARN_BELOW = 0.1
MOSTLY_UNJUDGED_BELOW = 0.5
DEFAULT_CUTOFF = 10
_CHUNK_ID = re.compile(r".#\d+-\d+\Z")
_SAMPLE = 1000


def judged_cutoff(measures: Sequence[str]) -> int:
    """The main cutoff: that of the first measure with a cutoff, else 10."""
    for name in measures:
        try:
            cutoff = parse_measure(name).cutoff
        except UnknownMeasureError:
            continue
        if cutoff:
            return int(cutoff)
    return DEFAULT_CUTOFF


def _chunk_share(ids: Any) -> float:
    """Share of (up to 1000 sampled) ids shaped like chunk ids ``doc#start-end``."""
    if not len(ids):
        return 0.0
    # every step-th id, converted alone (not millions of qrels ids for a sample of 1000)
    at = np.arange(0, len(ids), max(len(ids) // _SAMPLE, 1))[:_SAMPLE]
    take = getattr(ids, "take", None)  # Arrow ids (compact qrels, streamed runs)
    sample = [str(i) for i in take(at).to_pylist()] if take is not None and \
        not isinstance(ids, np.ndarray) else np.asarray(ids)[at].astype(str).tolist()
    return sum(bool(_CHUNK_ID.search(i)) for i in sample) / len(sample)


def unjudged_cause(run_doc_ids: Any, qrels_doc_ids: Any) -> str:
    """The likely reason a run's results are not in the qrels, as advice to the user."""
    in_run, in_qrels = _chunk_share(run_doc_ids), _chunk_share(qrels_doc_ids)
    if in_run > 0.5 and in_qrels < 0.5:
        return ("the run's ids look like chunk ids (doc#start-end) but the qrels judge "
                "whole documents: score a chunk-level run against chunk qrels (searchbench "
                "evalset chunk-qrels EVALSET --chunk SAME_CHUNKER -o chunk-qrels.tsv) or make "
                "the run with --level doc")
    if in_qrels > 0.5 and in_run < 0.5:
        return ("the qrels judge chunk ids (doc#start-end) but the run ranks whole "
                "documents: evaluate it against the document qrels, or make the run with "
                "--level chunk and the same chunker")
    if in_qrels > 0.5 and in_run > 0.5:
        return ("run and qrels both hold chunk ids (doc#start-end) but different ones: "
                "make the chunk qrels with the run's chunker and token unit (searchbench "
                "evalset chunk-qrels EVALSET --chunk SAME_CHUNKER [--model SAME_MODEL])")
    return ("check that the run was made for these qrels (document ids must match exactly, "
            "e.g. no prefixes, same collection)")


def warn_unjudged(name: str, judged: float, k: int, run: Any, qrels: Any) -> None:
    """One :class:`SearchbenchWarning` when the mean Judged@k of ``run`` (named ``name``)
    is below :data:`UNJUDGED_WARN_BELOW`; the ids of ``run`` and ``qrels`` are only read
    then, to name the likely cause."""
    if not judged < UNJUDGED_WARN_BELOW:
        return
    sample = getattr(run, "doc_vocab_sample", None)  # a Run: no string per doc built
    run_doc_ids = sample(_SAMPLE) if sample is not None else getattr(run, "doc_vocab", ())
    qrels_doc_ids = getattr(qrels, "doc_vocab", ())
    warnings.warn(
        f"run {name!r}: only {judged:.1%} of its top {k} results are judged in the qrels "
        f"(mean Judged@{k} < {UNJUDGED_WARN_BELOW:g}); unjudged documents count as "
        f"non-relevant, so its scores are meaningless; likely cause: "
        f"{unjudged_cause(run_doc_ids, qrels_doc_ids)}",
        SearchbenchWarning, stacklevel=user_stacklevel())


@dataclass(frozen=True)
class Coverage:
    """The mean Judged@``k`` of one evaluated run (see the module docstring)."""

    k: int
    mean: float

    @property
    def low(self) -> bool:
        """Mostly unjudged: below :data:`MOSTLY_UNJUDGED_BELOW` (scores are lower bounds)."""
        return not self.mean >= MOSTLY_UNJUDGED_BELOW

    def flag(self) -> str:
        """``""``, or the words that go beside a score resting on mostly unjudged results,
        e.g. ``"Judged@10 0.00: mostly unjudged, a lower bound"``."""
        if not self.low:
            return ""
        return f"Judged@{self.k} {self.mean:.2f}: mostly unjudged, a lower bound"

    def to_dict(self) -> dict[str, Any]:
        """``{"k", "mean", "low"}`` (stored with experiment cells and run sidecars)."""
        return {"k": self.k, "mean": self.mean, "low": self.low}


class CoverageProbe:
    """The one "add a Judged@k probe, evaluate, warn" step of every command that prints or
    stores scores (``eval``, ``compare``, ``run``, ``experiment``).

    ``measures`` are the ones asked for; :attr:`all_measures` adds ``Judged@k`` at their
    main cutoff; :meth:`finish` takes the result of evaluating those, warns when the run
    is almost entirely unjudged (:func:`warn_unjudged`), and returns the result as asked
    (the probe removed unless it was asked for) with its :class:`Coverage`."""

    def __init__(self, measures: Sequence[str]) -> None:
        self.wanted = list(measures)
        self.k = judged_cutoff(self.wanted)
        self.name = f"Judged@{self.k}"

    @property
    def all_measures(self) -> list[str]:
        """The measures to evaluate: those asked for, and the probe."""
        return self.wanted if self.name in self.wanted else [*self.wanted, self.name]

    def finish(self, result: EvalResult, run: Any, qrels: Any,
               name: str | None = None) -> tuple[EvalResult, Coverage]:
        """``(result without the probe unless asked, coverage)``; warns when unjudged."""
        coverage = Coverage(self.k, float(result.mean[self.name]))
        warn_unjudged(name or result.run_name, coverage.mean, self.k, run, qrels)
        if self.name not in self.wanted:
            result = without_measure(result, self.name)
        return result, coverage

    def evaluate(self, qrels: Any, run: Any, name: str | None = None,
                 **options: Any) -> tuple[EvalResult, Coverage]:
        """Evaluate ``run`` on ``qrels`` (``options`` go to the
        :class:`~searchbench.measures.Evaluator`), then :meth:`finish`."""
        evaluator = Evaluator(qrels, self.all_measures, **options)
        return self.finish(evaluator.evaluate(run), run, evaluator.qrels, name)


def judged_notes(judged: Mapping[str, float], k: int) -> list[str]:
    """One note naming the systems with mean Judged@k < :data:`MOSTLY_UNJUDGED_BELOW`."""
    low = {s: v for s, v in judged.items() if v < MOSTLY_UNJUDGED_BELOW}
    if not low:
        return []
    shown = ", ".join(f"{s} {v:.0%}" for s, v in low.items())
    return [f"the comparison rests on mostly unjudged documents: Judged@{k} below "
            f"{MOSTLY_UNJUDGED_BELOW:.0%} for {shown}; unjudged results count as "
            "non-relevant, so these scores are lower bounds and differences may come from "
            "what was judged rather than from retrieval"]


def without_measure(result: EvalResult, name: str) -> EvalResult:
    """A copy of the evaluation ``result`` without measure ``name`` (a coverage probe)."""
    return replace(result, measures=[m for m in result.measures if m != name],
                   scores={m: v for m, v in result.scores.items() if m != name},
                   mean={m: v for m, v in result.mean.items() if m != name}, _per_query=None)
