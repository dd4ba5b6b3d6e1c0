"""JSON Lines readers and writers for corpora, queries and evidence (DESIGN §4).

Files are streamed one line at a time: a 1 GB ``corpus.jsonl`` is held in memory once,
as :class:`~searchbench.data.texts.Document` objects, never also as raw text. ``.gz`` is
transparent; a UTF-8 BOM, CRLF and blank lines are accepted. Ids may be given as ``id`` or
``_id`` (BEIR's spelling); numeric ids become strings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from types import MappingProxyType
from typing import Any

from ..errors import DataFormatError
from ._files import PathOrFile, atomic_write, describe, open_text
from .texts import EMPTY, Corpus, Document, Issues, Queries, Query, build_texts

__all__ = [
    "iter_jsonl",
    "read_corpus_jsonl",
    "read_queries_jsonl",
    "write_corpus_jsonl",
    "write_jsonl",
    "write_queries_jsonl",
]

QUERY_SOURCES = ("human", "logs", "curated", "synthetic")
_DOC_KEYS = {"id", "_id", "title", "text", "metadata"}
_QUERY_KEYS = {"id", "_id", "text", "source", "generator", "verified", "metadata"}


def iter_jsonl(source: PathOrFile) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("path:line", object)`` for every non-blank line; each must be a JSON object."""
    name = describe(source)
    with open_text(source) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{name}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(
                    f"{where}: invalid JSON ({exc.msg} at column {exc.colno}): "
                    f"{line.strip()[:60]!r}; expected one JSON object per line"
                ) from None
            if not isinstance(obj, dict):
                raise DataFormatError(
                    f"{where}: found a JSON {type(obj).__name__}, expected an object "
                    '{"id": ..., "text": ...}'
                )
            yield where, obj


def _get_id(obj: dict[str, Any], where: str) -> str:
    value = obj.get("id", obj.get("_id"))
    if value is None or isinstance(value, bool) or not isinstance(value, str | int):
        raise DataFormatError(f'{where}: id is {value!r}; expected a string "id" (or "_id")')
    if isinstance(value, str) and (not value or len(value.split()) != 1 or value != value.strip()):
        raise DataFormatError(f"{where}: id {value!r} is empty or contains whitespace; expected "
                              "a non-empty id without spaces (qrels and runs split on them)")
    return str(value)


def _get_str(obj: dict[str, Any], key: str, where: str, default: str = "") -> str:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise DataFormatError(f"{where}: {key!r} is a {type(value).__name__}; expected a string")
    return value


def _metadata(obj: dict[str, Any], known: set[str], where: str) -> dict[str, Any]:
    meta = obj.get("metadata") or EMPTY
    if not isinstance(meta, dict | MappingProxyType):
        raise DataFormatError(f"{where}: 'metadata' is a {type(meta).__name__}; expected an object")
    if len(obj) > len(known) or any(k not in known for k in obj):
        extra = {k: v for k, v in obj.items() if k not in known}
        return {**meta, **extra} if extra else meta
    return meta


def _documents(source: PathOrFile) -> Iterator[tuple[str, Document]]:
    for where, obj in iter_jsonl(source):
        doc = Document(_get_id(obj, where), _get_str(obj, "text", where),
                       _get_str(obj, "title", where), _metadata(obj, _DOC_KEYS, where))
        yield where, doc


def read_corpus_jsonl(source: PathOrFile, *, issues: Issues | None = None) -> Corpus:
    """Read ``{"id", "title", "text", "metadata"}`` lines (BEIR ``_id`` accepted).

    Unknown keys go into ``metadata``. A duplicate id raises :class:`DataFormatError`
    naming both lines, unless ``issues`` is a list: then the first is kept and the problem
    recorded there.
    """
    return build_texts(Corpus, _documents(source), issues)


def _query(obj: dict[str, Any], where: str) -> Query:
    src = _get_str(obj, "source", where, "human") or "human"
    if src not in QUERY_SOURCES:
        raise DataFormatError(
            f"{where}: source {src!r}; expected one of {', '.join(QUERY_SOURCES)}"
        )
    verified = obj.get("verified", False)
    if not isinstance(verified, bool):
        raise DataFormatError(f"{where}: verified is {verified!r}; expected true or false")
    gen = obj.get("generator")
    return Query(_get_id(obj, where), _get_str(obj, "text", where), src,
                 None if gen is None else str(gen), verified,
                 _metadata(obj, _QUERY_KEYS, where))


def read_queries_jsonl(source: PathOrFile, *, issues: Issues | None = None) -> Queries:
    """Read ``{"id", "text", "source", "generator", "verified"}`` lines (BEIR ``_id`` ok)."""
    pairs = ((where, _query(obj, where)) for where, obj in iter_jsonl(source))
    return build_texts(Queries, pairs, issues)


def write_jsonl(path: str | os.PathLike[str], records: Iterable[dict[str, Any]]) -> int:
    """Write one compact JSON object per line, atomically; returns the number of lines."""
    n = 0
    with atomic_write(path) as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
            fh.write("\n")
            n += 1
    return n


def document_record(doc: Document, *, beir: bool = False) -> dict[str, Any]:
    """The JSON object of a document (``_id`` instead of ``id`` when ``beir``)."""
    rec: dict[str, Any] = {"_id" if beir else "id": doc.id, "title": doc.title, "text": doc.text}
    if doc.metadata:
        rec["metadata"] = dict(doc.metadata)
    return rec


def query_record(q: Query, *, beir: bool = False) -> dict[str, Any]:
    """The JSON object of a query; BEIR files keep provenance inside ``metadata``."""
    prov = {"source": q.source, "verified": q.verified}
    if q.generator is not None:
        prov["generator"] = q.generator
    if beir:
        meta = {**q.metadata, **prov}
        return {"_id": q.id, "text": q.text, "metadata": meta}
    rec: dict[str, Any] = {"id": q.id, "text": q.text, **prov}
    if q.metadata:
        rec["metadata"] = dict(q.metadata)
    return rec


def write_corpus_jsonl(path: str | os.PathLike[str], corpus: Corpus, *, beir: bool = False) -> int:
    """Write a corpus (streamed, atomic; ``.gz`` compresses)."""
    return write_jsonl(path, (document_record(d, beir=beir) for d in corpus))


def write_queries_jsonl(
    path: str | os.PathLike[str], queries: Queries, *, beir: bool = False
) -> int:
    """Write queries with their provenance (atomic)."""
    return write_jsonl(path, (query_record(q, beir=beir) for q in queries))
