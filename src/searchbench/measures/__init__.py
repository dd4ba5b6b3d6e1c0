"""Measures: the registry of families, the grammar (spec), vectorised kernels, and the
Evaluator (ARCHITECTURE §4).

``families()`` lists every measure family (:class:`Family`: kernel, names, trec_eval names,
parameters, formula); the docs' measures reference is generated from it.
"""

from typing import TYPE_CHECKING

from .._util.lazy import lazy_exports
from ..errors import SearchbenchWarning
from ._coverage import (
    MOSTLY_UNJUDGED_BELOW,
    UNJUDGED_WARN_BELOW,
    Coverage,
    CoverageProbe,
    judged_cutoff,
    judged_notes,
    unjudged_cause,
    warn_unjudged,
    without_measure,
)
from ._scored import (
    ScoredQueries,
    apply_unanswerable,
    no_answer_ids,
    no_relevant_ids,
    scored_queries,
)
from ._scoring import Scored, Scorer
from .evaluator import (
    Combiner,
    EvalResult,
    Evaluator,
    NoSharedQueriesError,
    PartialResult,
    evaluate,
)
from .registry import Family, Param, families
from .spec import FAMILIES, Measure, parse_measure, parse_measures, trec_name, valid_names

if TYPE_CHECKING:  # loaded on first use: ``eval`` without --stream does not read by groups
    from .stream import StreamedRun, evaluate_stream, stream_run

__getattr__, __dir__ = lazy_exports(__name__, {
    "StreamedRun": ".stream", "evaluate_stream": ".stream", "stream_run": ".stream"})

__all__ = [
    "FAMILIES",
    "MOSTLY_UNJUDGED_BELOW",
    "UNJUDGED_WARN_BELOW",
    "Combiner",
    "Coverage",
    "CoverageProbe",
    "EvalResult",
    "Evaluator",
    "Family",
    "Measure",
    "NoSharedQueriesError",
    "Param",
    "PartialResult",
    "Scored",
    "ScoredQueries",
    "Scorer",
    "SearchbenchWarning",
    "StreamedRun",
    "apply_unanswerable",
    "evaluate",
    "evaluate_stream",
    "families",
    "judged_cutoff",
    "judged_notes",
    "no_answer_ids",
    "no_relevant_ids",
    "parse_measure",
    "parse_measures",
    "scored_queries",
    "stream_run",
    "trec_name",
    "unjudged_cause",
    "valid_names",
    "warn_unjudged",
    "without_measure",
]
