"""Measures: the registry of families, the grammar (spec), vectorised kernels, and the
Evaluator (ARCHITECTURE §4).

``families()`` lists every measure family (:class:`Family`: kernel, names, trec_eval names,
parameters, formula); the docs' measures reference is generated from it.
"""

from ..errors import SearchbenchWarning
from .evaluator import EvalResult, Evaluator, NoSharedQueriesError, evaluate
from .registry import Family, Param, families
from .spec import FAMILIES, Measure, parse_measure, parse_measures, trec_name, valid_names

__all__ = [
    "FAMILIES",
    "EvalResult",
    "Evaluator",
    "Family",
    "Measure",
    "NoSharedQueriesError",
    "Param",
    "SearchbenchWarning",
    "evaluate",
    "families",
    "parse_measure",
    "parse_measures",
    "trec_name",
    "valid_names",
]
