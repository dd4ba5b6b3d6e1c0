"""collections layer (see ARCHITECTURE §1): named evaluation sets and their checks.

:func:`load_evalset` resolves a spec (``beir:scifact``, ``cranfield``, a folder) to an
:class:`~searchbench.data.EvalSet`, downloading pinned BEIR zips when allowed;
:func:`check_evalset` reports errors and pitfalls of a set; :mod:`.classic` reads the
classic test collections (Cranfield, CACM, CISI, MED, Vaswani, TREC).
"""

from __future__ import annotations

from .check import CheckReport, Finding, check_evalset, detectable_difference, evalset_stats
from .classic import (
    CLASSIC,
    load_cacm,
    load_cisi,
    load_cranfield,
    load_med,
    load_trec,
    load_vaswani,
)
from .download import BEIR_MD5, beir_folder, cache_root
from .registry import PYREF_DIR, list_datasets, load_evalset, parse_spec

__all__ = [
    "BEIR_MD5",
    "CLASSIC",
    "PYREF_DIR",
    "CheckReport",
    "Finding",
    "beir_folder",
    "cache_root",
    "check_evalset",
    "detectable_difference",
    "evalset_stats",
    "list_datasets",
    "load_cacm",
    "load_cisi",
    "load_cranfield",
    "load_evalset",
    "load_med",
    "load_trec",
    "load_vaswani",
    "parse_spec",
]
