"""Measures: the grammar (spec), vectorised kernels, and the Evaluator (ARCHITECTURE §4)."""

from .evaluator import EvalResult, Evaluator, SearchbenchWarning, evaluate
from .spec import FAMILIES, Measure, parse_measure, parse_measures, valid_names

__all__ = [
    "FAMILIES",
    "EvalResult",
    "Evaluator",
    "Measure",
    "SearchbenchWarning",
    "evaluate",
    "parse_measure",
    "parse_measures",
    "valid_names",
]
