"""searchbench: does your search bring back the right documents?

Public API (the curated surface; everything else is private or reached through a
sub-package such as ``searchbench.retrieval``).
"""

from __future__ import annotations

import typing as _typing

from .errors import (
    BackendError,
    ConfigError,
    DataFormatError,
    MissingDependencyError,
    SearchbenchError,
    SearchbenchWarning,
    UnknownMeasureError,
)

if _typing.TYPE_CHECKING:
    from .collections import check_evalset, load_evalset
    from .comparison import Comparison, compare
    from .data import Corpus, Document, EvalSet, Qrels, Queries, Query, Run
    from .judging import pool
    from .measures import (
        EvalResult,
        Evaluator,
        Measure,
        evaluate,
        evaluate_stream,
        parse_measure,
        parse_measures,
    )

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
    "evaluate_stream",
    "load_evalset",
    "parse_measure",
    "parse_measures",
    "pool",
]

_LAZY_SUBPACKAGES = frozenset({"ann", "data", "db", "experiment", "judging", "measures",
                               "retrieval", "stats"})
# Public names whose modules load on first use, so `import searchbench` stays fast (the
# command line imports this package first: `searchbench --help` needs none of numpy, pyarrow).
_LAZY_NAMES = {
    "Corpus": ".data",
    "Document": ".data",
    "EvalResult": ".measures",
    "Evaluator": ".measures",
    "Measure": ".measures",
    "Queries": ".data",
    "Query": ".data",
    "Qrels": ".data",
    "Run": ".data",
    "evaluate": ".measures",
    "evaluate_stream": ".measures",
    "parse_measure": ".measures",
    "parse_measures": ".measures",
    "Comparison": ".comparison",
    "EvalSet": ".data",
    "check_evalset": ".collections",
    "compare": ".comparison",
    "load_evalset": ".collections",
    "pool": ".judging",
}




def __getattr__(name: str) -> _typing.Any:
    """Sub-packages and the public names above load on first use (PEP 562; written out
    here rather than through ``_util.lazy``, which would load the plumbing package)."""
    import importlib  # lazy: the importlib package adds 3 modules to `import searchbench`

    if name in _LAZY_SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(_LAZY_NAMES[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | _LAZY_SUBPACKAGES)
