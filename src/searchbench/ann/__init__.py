"""ANN recall against exact search (ARCHITECTURE §1, §8).

``knn_recall`` measures agreement with exact search, not relevance (that is ``R@k``).
Exact search itself lives in :mod:`searchbench.knn` (below retrieval and ann); its
``exact_knn`` and ``GroundTruth`` are re-exported here.
faiss, hnswlib, h5py, matplotlib and jinja2 are imported only by the functions that use
them (``pip install 'searchbench[ann,report]'``).
"""

from __future__ import annotations

from ..knn import GroundTruth, exact_knn
from .embed import EmbeddedSet, embed_evalset
from .formats import read_ann_benchmarks, read_bigann_groundtruth, read_bin, read_vectors, write_bin
from .indexes import INDEXES, make_index
from .recall import KnnRecall, knn_recall, one_recall_at
from .relevance import RelevanceContext, cheapest_lossless
from .sweep import SweepResult, parse_param, run_sweep

__all__ = [
    "INDEXES",
    "EmbeddedSet",
    "GroundTruth",
    "KnnRecall",
    "RelevanceContext",
    "SweepResult",
    "cheapest_lossless",
    "embed_evalset",
    "exact_knn",
    "knn_recall",
    "make_index",
    "one_recall_at",
    "parse_param",
    "read_ann_benchmarks",
    "read_bigann_groundtruth",
    "read_bin",
    "read_vectors",
    "run_sweep",
    "write_bin",
]
