"""data layer (see ARCHITECTURE §1): qrels, runs, texts and evaluation sets, and their files.

The public surface is this ``__init__``: the data model (:class:`Qrels`, :class:`Run`,
:class:`Corpus`, :class:`Queries`, :class:`EvalSet`), the readers and writers of every file
format, and the id helpers the measures engine joins with (:func:`lookup`,
:func:`as_arrow_strings`, :class:`IdIndex`, :func:`from_numpy`, :func:`utf8_column`,
:class:`JudgedEntries`). Modules with a leading
underscore (``_text``, ``_files``, ``_columns``, ``_strings``, ``_arrow``) are private to
this package. Every name loads on first use: ``import searchbench.data`` loads neither numpy
nor pyarrow, so :class:`RunsReadAhead` can start scanning run files with the compiled
reader while the caller imports them (pyarrow loads only with the id helpers, readers and
writers: the compiled TREC reader needs none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_exports

if TYPE_CHECKING:  # the names loaded on first use (_LAZY), for type checkers
    from ._ahead import RunsReadAhead
    from .beir import read_beir, write_beir
    from .columnar import (
        ARROW_STREAM_MAGIC,
        check_run_file,
        columnar_format,
        detect_kind,
        unreadable,
        write_columnar_qrels,
        write_columnar_run,
    )
    from .evalset import (
        EvalSet,
        Evidence,
        drop_identical_ids,
        grade_counts,
        read_native,
        source_paths,
        write_native,
    )
    from .jsonl import (
        QUERY_SOURCES,
        iter_jsonl,
        read_corpus_jsonl,
        read_queries_jsonl,
        write_corpus_jsonl,
        write_jsonl,
        write_queries_jsonl,
    )
    from .qrels import Qrels
    from .readers import read_qrels, read_run, run_from_table
    from .run import Run
    from .smart import SmartRecord, iter_smart, read_smart_docs, read_smart_queries, write_smart
    from .stream import BATCH_ENTRIES, compact_qrels, iter_run_batches, release_free_memory
    from .texts import EMPTY, Corpus, Document, Issue, Issues, Queries, Query, build_texts
    from .trec import write_qrels, write_run
    from .trec_text import (
        iter_trec_docs,
        read_trec_docs,
        read_trec_topics,
        write_trec_docs,
        write_trec_topics,
    )

_LAZY = {
    "Qrels": ".qrels", "Run": ".run", "RunsReadAhead": "._ahead",
    "read_qrels": ".readers", "read_run": ".readers", "run_from_table": ".readers",
    "EMPTY": ".texts", "Corpus": ".texts", "Document": ".texts", "Issue": ".texts",
    "Issues": ".texts", "Queries": ".texts", "Query": ".texts", "build_texts": ".texts",
    "from_numpy": "._arrow", "IdIndex": "._strings", "as_arrow_strings": ".ids",
    "intern": ".ids", "lookup": ".ids", "lookup_sorted": ".ids", "utf8_column": ".ids",
    "JudgedEntries": "._entries", "reader_path": "._native",
    "ARROW_STREAM_MAGIC": ".columnar", "check_run_file": ".columnar",
    "columnar_format": ".columnar", "detect_kind": ".columnar",
    "unreadable": ".columnar", "write_columnar_qrels": ".columnar",
    "write_columnar_run": ".columnar",
    "BATCH_ENTRIES": ".stream", "compact_qrels": ".stream", "iter_run_batches": ".stream",
    "release_free_memory": ".stream",
    "QUERY_SOURCES": ".jsonl", "grade_counts": ".evalset",
    "read_beir": ".beir", "write_beir": ".beir",
    "EvalSet": ".evalset", "Evidence": ".evalset", "drop_identical_ids": ".evalset",
    "read_native": ".evalset", "write_native": ".evalset", "source_paths": ".evalset",
    "iter_jsonl": ".jsonl", "read_corpus_jsonl": ".jsonl", "read_queries_jsonl": ".jsonl",
    "write_corpus_jsonl": ".jsonl", "write_jsonl": ".jsonl", "write_queries_jsonl": ".jsonl",
    "SmartRecord": ".smart", "iter_smart": ".smart", "read_smart_docs": ".smart",
    "read_smart_queries": ".smart", "write_smart": ".smart",
    "write_qrels": ".trec", "write_run": ".trec",
    "iter_trec_docs": ".trec_text", "read_trec_docs": ".trec_text",
    "read_trec_topics": ".trec_text", "write_trec_docs": ".trec_text",
    "write_trec_topics": ".trec_text",
}

__all__ = [
    "ARROW_STREAM_MAGIC",
    "BATCH_ENTRIES",
    "EMPTY",
    "QUERY_SOURCES",
    "Corpus",
    "Document",
    "EvalSet",
    "Evidence",
    "IdIndex",
    "Issue",
    "Issues",
    "JudgedEntries",
    "Qrels",
    "Queries",
    "Query",
    "Run",
    "RunsReadAhead",
    "SmartRecord",
    "as_arrow_strings",
    "build_texts",
    "check_run_file",
    "columnar_format",
    "compact_qrels",
    "detect_kind",
    "drop_identical_ids",
    "from_numpy",
    "grade_counts",
    "intern",
    "iter_jsonl",
    "iter_run_batches",
    "iter_smart",
    "iter_trec_docs",
    "lookup",
    "lookup_sorted",
    "read_beir",
    "read_corpus_jsonl",
    "read_native",
    "read_qrels",
    "read_queries_jsonl",
    "read_run",
    "read_smart_docs",
    "read_smart_queries",
    "read_trec_docs",
    "read_trec_topics",
    "reader_path",
    "release_free_memory",
    "run_from_table",
    "source_paths",
    "unreadable",
    "utf8_column",
    "write_beir",
    "write_columnar_qrels",
    "write_columnar_run",
    "write_corpus_jsonl",
    "write_jsonl",
    "write_native",
    "write_qrels",
    "write_queries_jsonl",
    "write_run",
    "write_smart",
    "write_trec_docs",
    "write_trec_topics",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
