"""distributed layer (ARCHITECTURE §13): Ray for what outgrows one process.

Evaluation of runs partitioned by query (:func:`evaluate_runs`); :func:`evaluate_files`,
the one call behind ``searchbench eval`` that evaluates run files in memory, streamed or
on Ray (only this last needs Ray); exact k-NN ground truth
with the corpus sharded over workers (:func:`sharded_knn`) and corpus embedding as a Ray
Data pipeline (:func:`embed_corpus`). Every result equals the single-process one exactly.
Needs the extra ``ray`` (``pip install 'searchbench[ray]'``); ``ray`` itself is imported
only when a function here runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names loaded on first use (_LAZY), for type checkers
    from ._cluster import CONNECT_TIMEOUT, ray_cluster
    from ._evaluate import RayEvaluated, RunSample, evaluate_runs
    from ._knn import sharded_knn
    from .embed import embed_corpus, embed_texts_local

_LAZY = {
    "CONNECT_TIMEOUT": "._cluster", "ray_cluster": "._cluster",
    "RayEvaluated": "._evaluate", "RunSample": "._evaluate", "evaluate_runs": "._evaluate",
    "sharded_knn": "._knn",
    "embed_corpus": ".embed", "embed_texts_local": ".embed",
    "EvaluatedFiles": "._files", "evaluate_files": "._files",
}

__all__ = [
    "CONNECT_TIMEOUT",
    "RayEvaluated",
    "RunSample",
    "embed_corpus",
    "embed_texts_local",
    "evaluate_runs",
    "ray_cluster",
    "sharded_knn",
]


def __getattr__(name: str) -> Any:
    """Modules load on first use (they import the measures and knn layers)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'searchbench.distributed' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
