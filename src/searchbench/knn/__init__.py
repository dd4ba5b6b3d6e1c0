"""Exact k-nearest-neighbour search: the kernel below both dense retrieval and ANN recall.

:func:`exact_knn` finds the float64-verified top-(k + extra) of every query (faiss or numpy
engine, bounded memory) and returns a :class:`GroundTruth`; :mod:`._metric` holds the
distances (smaller = closer), the tie policy and the input checks. Imports numpy only
(faiss lazily, when installed).
"""

from __future__ import annotations

from ..vocab import METRICS
from ._metric import (
    TIE_POLICY,
    as_matrix,
    check_finite,
    check_knn_inputs,
    check_metric,
    check_pair,
    exact_distances,
    max_norm,
    normalize_rows,
)
from .exact import FORMAT, GroundTruth, exact_knn, fingerprint

__all__ = [
    "FORMAT",
    "METRICS",
    "TIE_POLICY",
    "GroundTruth",
    "as_matrix",
    "check_finite",
    "check_knn_inputs",
    "check_metric",
    "check_pair",
    "exact_distances",
    "exact_knn",
    "fingerprint",
    "max_norm",
    "normalize_rows",
]
