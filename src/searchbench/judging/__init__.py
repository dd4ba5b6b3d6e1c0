"""Building a verified evaluation set: pooling, the judging store and web app, LLM judges,
agreement, export and guarded synthetic questions (ARCHITECTURE §12).

The public surface: the shared records (:class:`Judgment`, :class:`Quote`,
:class:`PoolItem`, :func:`read_pool`, :func:`write_pool`), the store
(:class:`JudgmentStore`), a set from files (:func:`init_evalset`, :func:`add_queries`),
pooling (:func:`pool`), agreement (:func:`agreement` and its statistics) and export
(:func:`export`, :func:`adjudicate`). The LLM judge (:class:`LlmJudge`, :func:`judge_pool`) and
synthetic questions (:func:`generate_questions`) load on first use (they import the retrieval
layer's HTTP client); the web app is :mod:`searchbench.judging.web`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_exports
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
from .folder import add_queries, init_evalset, parse_size
from .labels import GRADES, Judgment, PoolItem, Quote, llm_annotator, read_pool, write_pool
from .pool import PoolResult, check_runs, pool
from .store import JudgmentStore

if TYPE_CHECKING:  # the names loaded on first use (_LAZY), for type checkers
    from .llm import ChatClient, LlmCache, LlmJudge, generator_warning, judge_pool, load_prompt
    from .synth import append_to_evalset, generate_questions, write_questions

_LAZY = {
    "ChatClient": ".llm", "LlmCache": ".llm", "LlmJudge": ".llm", "generator_warning": ".llm",
    "judge_pool": ".llm", "load_prompt": ".llm",
    "append_to_evalset": ".synth", "generate_questions": ".synth", "write_questions": ".synth",
}

__all__ = [
    "GRADES",
    "AgreementReport",
    "ChatClient",
    "Estimate",
    "ExportReport",
    "Judgment",
    "JudgmentStore",
    "LlmCache",
    "LlmJudge",
    "PoolItem",
    "PoolResult",
    "Quote",
    "add_queries",
    "adjudicate",
    "agreement",
    "append_to_evalset",
    "check_runs",
    "cohen_kappa",
    "export",
    "fleiss_kappa",
    "generate_questions",
    "generator_warning",
    "init_evalset",
    "judge_pool",
    "krippendorff_alpha",
    "label_matrix",
    "llm_annotator",
    "load_prompt",
    "parse_size",
    "pool",
    "read_pool",
    "store_judgments",
    "write_pool",
    "write_questions",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
