"""ANN recall against exact search (ARCHITECTURE §1, §8).

``knn_recall`` measures agreement with exact search, not relevance (that is ``R@k``).
Exact search itself lives in :mod:`searchbench.knn` (below retrieval and ann); its
``exact_knn`` and ``GroundTruth`` are re-exported here.
faiss, hnswlib, h5py, matplotlib and jinja2 are imported only by the functions that use
them (``pip install 'searchbench[ann,report]'``).
"""

from __future__ import annotations

from ..knn import GroundTruth, exact_knn
from .db_sweep import described, parse_db_param, run_db_sweep, search_grid, store_vectors
from .embed import EmbeddedSet, embed_evalset
from .formats import read_ann_benchmarks, read_bigann_groundtruth, read_bin, read_vectors, write_bin
from .indexes import INDEXES, index_spec, make_index
from .recall import KnnRecall, knn_recall, one_recall_at
from .relevance import RelevanceContext, cheapest_lossless
from .report import render_html, render_markdown
from .sweep import SweepResult, parse_param, run_sweep

__all__ = [
    "INDEXES",
    "EmbeddedSet",
    "GroundTruth",
    "KnnRecall",
    "RelevanceContext",
    "SweepResult",
    "cheapest_lossless",
    "described",
    "embed_evalset",
    "exact_knn",
    "index_spec",
    "knn_recall",
    "make_index",
    "one_recall_at",
    "parse_db_param",
    "parse_param",
    "read_ann_benchmarks",
    "read_bigann_groundtruth",
    "read_bin",
    "read_vectors",
    "render_html",
    "render_markdown",
    "run_db_sweep",
    "run_sweep",
    "search_grid",
    "store_vectors",
    "write_bin",
]
