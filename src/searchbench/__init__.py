"""searchbench: does your search bring back the right documents?

Public API (the curated surface; everything else is private or reached through a
sub-package such as ``searchbench.retrieval``).
"""

from __future__ import annotations

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

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "ConfigError",
    "Corpus",
    "DataFormatError",
    "Document",
    "MissingDependencyError",
    "Qrels",
    "Queries",
    "Query",
    "Run",
    "SearchbenchError",
    "UnknownMeasureError",
]
