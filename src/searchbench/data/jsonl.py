"""JSON Lines readers and writers for corpora, queries and evidence (ARCHITECTURE §5.1).

Files are streamed one line at a time: a 1 GB ``corpus.jsonl`` is held in memory once,
as :class:`~searchbench.data.texts.Document` objects, never also as raw text. ``.gz`` is
transparent; a UTF-8 BOM, CRLF and blank lines are accepted. Ids may be given as ``id`` or
``_id`` (BEIR's spelling); numeric ids become strings.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from .._util import atomic_write
from ..errors import DataFormatError
from ._decode import number_problem
from ._files import PathOrFile, describe, open_text
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
_DOC_KEYS = frozenset({"id", "_id", "title", "text", "metadata"})
_QUERY_KEYS = frozenset({"id", "_id", "text", "source", "generator", "verified", "no_answer",
                         "metadata"})


_decode = json.JSONDecoder().decode
_SPACE = re.compile(r"[\s\x00\ufeff]")  # the characters TREC readers refuse in ids


def _objects(source: PathOrFile, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line (bytes that are not UTF-8 raise a
    DataFormatError naming the line: see :func:`open_text`)."""
    with open_text(source) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.isspace():
                yield lineno, _object(line, name, lineno)


def _object(line: str, name: str, lineno: int) -> dict[str, Any]:
    """One line's JSON object. Failures of every kind - bad syntax, an integer longer than
    Python converts (4300 digits), nesting deeper than the recursion limit, a lone
    surrogate escape (``"\\ud800"``, not encodable as UTF-8) - name the line."""
    where = f"{name}:{lineno}"
    try:
        obj = _decode(line)
    except json.JSONDecodeError as exc:
        raise DataFormatError(
            f"{where}: invalid JSON ({exc.msg} at column {exc.colno}): "
            f"{line.strip()[:60]!r}; expected one JSON object per line"
        ) from None
    except ValueError as exc:
        raise DataFormatError(f"{where}: a JSON value cannot be read ({number_problem(exc)}); "
                              "expected one JSON object per line with ordinary numbers") from None
    except RecursionError:
        raise DataFormatError(f"{where}: JSON nested too deeply to read; expected one JSON "
                              "object per line") from None
    if type(obj) is not dict:
        raise DataFormatError(
            f"{where}: found a JSON {type(obj).__name__}, expected an object "
            '{"id": ..., "text": ...}'
        )
    if _SURROGATE.search(line):
        _check_encodable(obj, where)
    return obj


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_encodable(obj: dict[str, Any], where: str) -> None:
    """A lone surrogate (``"\\udc80"`` without its pair) cannot be written as UTF-8."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else "?"
        raise DataFormatError(f"{where}: the escape {bad.encode('unicode_escape').decode()!r} "
                              "is half of a surrogate pair (not a character); expected valid "
                              "Unicode text — fix the escape or remove it") from None
    except (ValueError, RecursionError):
        return


def iter_jsonl(source: PathOrFile) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("path:line", object)`` for every non-blank line; each must be a JSON object."""
    name = describe(source)
    for lineno, obj in _objects(source, name):
        yield f"{name}:{lineno}", obj


def _get_id(obj: dict[str, Any], where: object) -> str:
    value = obj.get("id", obj.get("_id"))
    if type(value) is str and value and _SPACE.search(value) is None:
        return value
    if value is None or isinstance(value, bool) or not isinstance(value, str | int):
        raise DataFormatError(f'{where}: id is {value!r}; expected a string "id" (or "_id")')
    if isinstance(value, str):
        raise DataFormatError(f"{where}: id {value!r} is empty or contains whitespace (or a "
                              "NUL or U+FEFF); expected a non-empty id without spaces (qrels "
                              "and runs split on them)")
    return str(value)


def _get_str(obj: dict[str, Any], key: str, where: object, default: str = "") -> str:
    value = obj.get(key, default)
    if type(value) is str:
        return value
    if value is None:
        return default
    raise DataFormatError(f"{where}: {key!r} is a {type(value).__name__}; expected a string")


def _metadata(obj: dict[str, Any], known: frozenset[str], where: object) -> Mapping[str, Any]:
    meta = obj.get("metadata") or EMPTY
    if not isinstance(meta, dict | MappingProxyType):
        raise DataFormatError(f"{where}: 'metadata' is a {type(meta).__name__}; expected an object")
    if obj.keys() <= known:
        return meta
    return {**meta, **{k: v for k, v in obj.items() if k not in known}}


class _Where:
    """Formats as ``"path:line"``, but only when an error message needs it."""

    __slots__ = ("line", "name")

    def __init__(self, name: str) -> None:
        self.name, self.line = name, 0

    def __str__(self) -> str:
        return f"{self.name}:{self.line}"


def _documents(source: PathOrFile, name: str) -> Iterator[tuple[int, Document]]:
    where = _Where(name)
    for lineno, obj in _objects(source, name):
        where.line = lineno
        doc = Document(_get_id(obj, where), _get_str(obj, "text", where),
                       _get_str(obj, "title", where), _metadata(obj, _DOC_KEYS, where))
        yield lineno, doc


def read_corpus_jsonl(source: PathOrFile, *, issues: Issues | None = None) -> Corpus:
    """Read ``{"id", "title", "text", "metadata"}`` lines (BEIR ``_id`` accepted).

    Unknown keys go into ``metadata``. A duplicate id raises :class:`DataFormatError`
    naming both lines, unless ``issues`` is a list: then the first is kept and the problem
    recorded there.
    """
    name = describe(source)
    return build_texts(Corpus, _documents(source, name), issues, name)


def _query(obj: dict[str, Any], where: object) -> Query:
    src = _get_str(obj, "source", where, "human") or "human"
    if src not in QUERY_SOURCES:
        raise DataFormatError(
            f"{where}: source {src!r}; expected one of {', '.join(QUERY_SOURCES)}"
        )
    verified = obj.get("verified", False)
    if not isinstance(verified, bool):
        raise DataFormatError(f"{where}: verified is {verified!r}; expected true or false")
    no_answer = obj.get("no_answer", False)
    if not isinstance(no_answer, bool):
        raise DataFormatError(f"{where}: no_answer is {no_answer!r}; expected true (no "
                              "document answers this query) or false")
    gen = obj.get("generator")
    return Query(_get_id(obj, where), _get_str(obj, "text", where), src,
                 None if gen is None else str(gen), verified,
                 _metadata(obj, _QUERY_KEYS, where), no_answer)


def read_queries_jsonl(source: PathOrFile, *, issues: Issues | None = None) -> Queries:
    """Read ``{"id", "text", "source", "generator", "verified", "no_answer"}`` lines (BEIR
    ``_id`` ok); ``no_answer: true`` marks a query no document answers (ARCHITECTURE §5.1)."""
    name = describe(source)
    pairs = ((n, _query(obj, f"{name}:{n}")) for n, obj in _objects(source, name))
    return build_texts(Queries, pairs, issues, name)


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
        return {"_id": q.id, "text": q.text, "metadata": meta,
                **({"no_answer": True} if q.no_answer else {})}
    rec: dict[str, Any] = {"id": q.id, "text": q.text, **prov}
    if q.no_answer:
        rec["no_answer"] = True
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
