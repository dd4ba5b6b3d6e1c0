"""Building a verified evaluation set: pooling, the judging store and web app, LLM judges,
agreement, export and guarded synthetic questions (ARCHITECTURE §12).

The public surface: the shared records (:class:`Judgment`, :class:`Quote`,
:class:`PoolItem`, :func:`read_pool`, :func:`write_pool`), the store
(:class:`JudgmentStore`), a set from files (:func:`init_evalset`, :func:`add_queries`),
pooling (:func:`pool`), agreement (:func:`agreement` and its statistics) and export
(:func:`export`, :func:`adjudicate`).
"""

from __future__ import annotations

from .agreement import (
    AgreementReport,
    Estimate,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    label_matrix,
)
from .export import ExportReport, adjudicate, export, store_judgments
from .folder import add_queries, init_evalset
from .labels import GRADES, Judgment, PoolItem, Quote, llm_annotator, read_pool, write_pool
from .pool import PoolResult, pool
from .store import JudgmentStore

__all__ = [
    "GRADES",
    "AgreementReport",
    "Estimate",
    "ExportReport",
    "Judgment",
    "JudgmentStore",
    "PoolItem",
    "PoolResult",
    "Quote",
    "add_queries",
    "adjudicate",
    "agreement",
    "cohen_kappa",
    "export",
    "fleiss_kappa",
    "init_evalset",
    "krippendorff_alpha",
    "label_matrix",
    "llm_annotator",
    "pool",
    "read_pool",
    "store_judgments",
    "write_pool",
]
