"""searchbench: does your search bring back the right documents?

Public API (the curated surface; everything else is private or reached through a
sub-package such as ``searchbench.retrieval``).
"""

from __future__ import annotations

from .collections.check import check_evalset
from .collections.registry import load_evalset
from .data.evalset import EvalSet
from .data.qrels import Qrels
from .data.run import Run
from .data.texts import Corpus, Document, Queries, Query
from .errors import (
    BackendError,
    ConfigError,
    DataFormatError,
    MissingDependencyError,
    SearchbenchError,
    UnknownMeasureError,
)
from .measures import (
    EvalResult,
    Evaluator,
    Measure,
    SearchbenchWarning,
    evaluate,
    parse_measure,
    parse_measures,
)
from .stats import Comparison, compare

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "Comparison",
    "ConfigError",
    "Corpus",
    "DataFormatError",
    "Document",
    "EvalResult",
    "EvalSet",
    "Evaluator",
    "Measure",
    "MissingDependencyError",
    "Qrels",
    "Queries",
    "Query",
    "Run",
    "SearchbenchError",
    "SearchbenchWarning",
    "UnknownMeasureError",
    "check_evalset",
    "compare",
    "evaluate",
    "load_evalset",
    "parse_measure",
    "parse_measures",
]

_LAZY_SUBPACKAGES = frozenset({"ann", "experiment", "retrieval"})


def __getattr__(name: str):
    """Sub-packages with heavy optional dependencies load on first use (``sb.retrieval``)."""
    if name in _LAZY_SUBPACKAGES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'searchbench' has no attribute {name!r}")
