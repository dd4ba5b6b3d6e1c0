"""data layer (see ARCHITECTURE §1): qrels, runs, texts and evaluation sets, and their files.

The public surface is this ``__init__``: the data model (:class:`Qrels`, :class:`Run`,
:class:`Corpus`, :class:`Queries`, :class:`EvalSet`), the readers and writers of every file
format, and the id helpers the measures engine joins with (:func:`lookup`,
:func:`as_arrow_strings`, :class:`IdIndex`, :func:`from_numpy`). Modules with a leading
underscore (``_text``, ``_files``, ``_columns``, ``_strings``, ``_arrow``) are private to
this package. The model loads with ``import searchbench.data``; the id helpers, readers and writers
load on first use (pyarrow only with them: the compiled TREC reader needs none).
"""

from __future__ import annotations

import importlib
from typing import Any

from .qrels import Qrels
from .run import Run
from .texts import EMPTY, Corpus, Document, Issue, Issues, Queries, Query, build_texts

_LAZY = {
    "from_numpy": "._arrow", "IdIndex": "._strings", "as_arrow_strings": ".ids",
    "intern": ".ids", "lookup": ".ids", "lookup_sorted": ".ids", "reader_path": "._native",
    "read_beir": ".beir", "write_beir": ".beir",
    "EvalSet": ".evalset", "Evidence": ".evalset", "drop_identical_ids": ".evalset",
    "read_native": ".evalset", "write_native": ".evalset", "source_paths": ".evalset",
    "iter_jsonl": ".jsonl", "read_corpus_jsonl": ".jsonl", "read_queries_jsonl": ".jsonl",
    "write_corpus_jsonl": ".jsonl", "write_jsonl": ".jsonl", "write_queries_jsonl": ".jsonl",
    "SmartRecord": ".smart", "iter_smart": ".smart", "read_smart_docs": ".smart",
    "read_smart_queries": ".smart", "write_smart": ".smart",
    "read_qrels": ".trec", "read_run": ".trec", "write_qrels": ".trec", "write_run": ".trec",
    "iter_trec_docs": ".trec_text", "read_trec_docs": ".trec_text",
    "read_trec_topics": ".trec_text", "write_trec_docs": ".trec_text",
    "write_trec_topics": ".trec_text",
}

__all__ = [
    "EMPTY",
    "Corpus",
    "Document",
    "Issue",
    "Issues",
    "Qrels",
    "Queries",
    "Query",
    "Run",
    "build_texts",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    """Readers, writers and evaluation sets load on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'searchbench.data' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
