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

from typing import TYPE_CHECKING

from .._util.lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
