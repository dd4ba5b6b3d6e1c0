"""TREC SGML documents (``<DOC><DOCNO>…</DOCNO>…</DOC>``) and TREC topics (``<top>``).

Documents are streamed: the file is read in blocks and each complete ``<DOC>`` element is
cut out with a regular expression, so a multi-gigabyte collection is never held as raw
text. Inside a document, ``<DOCNO>`` is the id; ``<TITLE>``/``<HEAD>``/``<HEADLINE>`` the
title; the text is the content of ``<TEXT>`` elements if there are any, otherwise all the
remaining content; remaining tags are removed (MED's ``<body>``, ``<F P=105>``; only
``<name attr=value …>`` forms, so ``x<y and y>z`` in the text stays), trailing blanks cut.

Topics: classic ``<top>`` blocks with ``<num>``, ``<title>``, ``<desc>``, ``<narr>``,
closed or not, with the ``Number:``/``Topic:``/``Description:``/``Narrative:`` prefixes
removed; the ``<DOC><DOCNO>`` form (Anserini's CACM topics) is accepted too, its body being
the title. The query text is the title by default (``fields=("title", "desc")`` joins).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

from .._util import atomic_write
from ..errors import DataFormatError
from ._files import PathOrFile, describe, open_text
from .texts import EMPTY, Corpus, Document, Issues, Queries, Query, build_texts

__all__ = ["iter_trec_docs", "read_trec_docs", "read_trec_topics", "write_trec_docs",
           "write_trec_topics"]

BLOCK = 1 << 22
_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.S | re.I)
_TITLE = re.compile(r"<(TITLE|HEAD|HEADLINE)>(.*?)</\1>", re.S | re.I)
_TEXT = re.compile(r"<TEXT>(.*?)</TEXT>", re.S | re.I)
# a real tag only: a name, then name=value attributes (SGML's <F P=105>), so text such as
# "if x<y and y>z" is kept; a bare word after the name ("<y and y>") is not an attribute
_TAG = re.compile(r"""</?[A-Za-z][\w.:-]*(?:\s+[A-Za-z_:][\w.:-]*\s*=\s*"""
                  r"""(?:"[^"]*"|'[^']*'|[^\s<>"']+))*\s*/?>""")
_OPEN = re.compile(r"<(top|DOC)>", re.I)
_TOPIC = re.compile(r"<(top|DOC)>(.*?)</\1>", re.S | re.I)
_FIELD = re.compile(r"<(num|title|desc|narr)>", re.I)
_PREFIX = re.compile(r"^\s*(Number|Topic|Description|Narrative)\s*:\s*", re.I)


def _tidy(text: str) -> str:
    return "\n".join(line.rstrip() for line in _TAG.sub("", text).split("\n")).strip()


_BAD_ID = re.compile(r"[\s\x00\ufeff]")


def _check_id(value: str, tag: str, name: str, line: int) -> None:
    """An id holding whitespace (or NUL, U+FEFF) could never be matched in a run or qrels
    file, which split on whitespace: refuse it where it is read."""
    if _BAD_ID.search(value):
        raise DataFormatError(f"{name}:{line}: {tag} {value!r} holds whitespace (or a NUL or "
                              "U+FEFF); expected an id without spaces (runs and qrels split "
                              "on them)")


def _check_gap(gap: str, name: str, line: int) -> None:
    stray = gap.strip()
    if stray:
        raise DataFormatError(f"{name}:{line}: found {stray[:40]!r} outside <DOC>…</DOC>; "
                              "expected only <DOC> elements")


def _check_nested(inner: str, name: str, line: int) -> None:
    m = _OPEN.search(inner)
    if m:
        raise DataFormatError(f"{name}:{line + inner.count(chr(10), 0, m.start())}: found "
                              f"{m.group(0)} inside an element that is not closed; expected "
                              "every <DOC>/<top> closed before the next one opens")


def iter_elements(source: PathOrFile, pattern: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """Yield ``(line, inner text)`` of each element matched by ``pattern``, block by block.

    The inner text is the pattern's last group.
    """
    name = describe(source)
    buf, line = "", 1  # line = line number of buf[0]
    with open_text(source) as fh:
        while True:
            block = fh.read(BLOCK)
            buf += block
            pos = 0
            for m in pattern.finditer(buf):
                gap = buf[pos: m.start()]
                _check_gap(gap, name, line)
                line += gap.count("\n")
                inner = m.group(pattern.groups)
                _check_nested(inner, name, line)
                yield line, inner
                line += buf.count("\n", m.start(), m.end())
                pos = m.end()
            buf = buf[pos:]
            if not block:
                break
    if buf.strip():
        raise DataFormatError(f"{name}:{line}: found {buf.strip()[:40]!r} at the end: an element "
                              "is not closed; expected every <DOC>/<top> to be closed")


def _trec_docs(source: PathOrFile, name: str) -> Iterator[tuple[int, Document]]:
    for line, inner in iter_elements(source, _DOC):
        m = _DOCNO.search(inner)
        if m is None or not m.group(1):
            raise DataFormatError(f"{name}:{line}: <DOC> without <DOCNO>; expected "
                                  "<DOC><DOCNO>id</DOCNO>…</DOC>")
        _check_id(m.group(1), "<DOCNO>", name, line + inner.count("\n", 0, m.start()))
        rest = inner[: m.start()] + inner[m.end():]
        t = _TITLE.search(rest)
        title = _tidy(t.group(2)) if t else ""
        if t:
            rest = rest[: t.start()] + rest[t.end():]
        texts = _TEXT.findall(rest)
        body = "\n".join(texts) if texts else rest
        yield line, Document(m.group(1), _tidy(body), title)


def iter_trec_docs(source: PathOrFile) -> Iterator[tuple[str, Document]]:
    """Yield ``("path:line", Document)`` for each ``<DOC>`` element."""
    name = describe(source)
    for line, doc in _trec_docs(source, name):
        yield f"{name}:{line}", doc


def read_trec_docs(source: PathOrFile, *, issues: Issues | None = None) -> Corpus:
    """Read a TREC SGML document file into a :class:`Corpus` (streamed)."""
    name = describe(source)
    return build_texts(Corpus, _trec_docs(source, name), issues, name)


def _topic_fields(inner: str) -> dict[str, str]:
    parts = _FIELD.split(inner)
    fields: dict[str, str] = {}
    for tag, value in zip(parts[1::2], parts[2::2], strict=True):
        value = re.sub(r"</(num|title|desc|narr)>", "", value, flags=re.I)
        fields[tag.lower()] = _PREFIX.sub("", _tidy(value)).strip()
    return fields


def _topics(source: PathOrFile, name: str) -> Iterator[tuple[int, dict[str, str]]]:
    for line, inner in iter_elements(source, _TOPIC):
        m = _DOCNO.search(inner)
        if m is not None and not _FIELD.search(inner):  # <DOC><DOCNO> form (CACM)
            yield line, {"num": m.group(1), "title": _tidy(inner[m.end():])}
            continue
        fields = _topic_fields(inner)
        if not fields.get("num"):
            raise DataFormatError(f"{name}:{line}: <top> without <num>; expected <num> Number: id")
        _check_id(fields["num"], "<num>", name, line)
        yield line, fields


def read_trec_topics(
    source: PathOrFile, *, fields: Sequence[str] = ("title",), issues: Issues | None = None
) -> Queries:
    """Read TREC topics; the text joins ``fields`` (title, desc, narr), others → metadata."""
    bad = [f for f in fields if f not in ("title", "desc", "narr")]
    if bad or not fields:
        raise DataFormatError(f"topic fields {list(fields)}; expected some of title, desc, narr")

    name = describe(source)

    def pairs() -> Iterator[tuple[int, Query]]:
        for line, f in _topics(source, name):
            text = "\n".join(f[k] for k in fields if f.get(k))
            meta: dict[str, Any] = {k: v for k, v in f.items() if k != "num" and k not in fields}
            yield line, Query(f["num"], text, "human", None, False, meta or EMPTY)

    return build_texts(Queries, pairs(), issues, name)


def write_trec_docs(path: str | os.PathLike[str], corpus: Corpus) -> None:
    """Write ``<DOC><DOCNO>…</DOCNO><TITLE>…</TITLE><TEXT>…</TEXT></DOC>``, atomically."""
    with atomic_write(path) as fh:
        for d in corpus:
            title = f"<TITLE>{d.title}</TITLE>\n" if d.title else ""
            fh.write(f"<DOC>\n<DOCNO>{d.id}</DOCNO>\n{title}<TEXT>\n{d.text}\n</TEXT>\n</DOC>\n")


def write_trec_topics(path: str | os.PathLike[str], queries: Queries) -> None:
    """Write classic ``<top>`` topics (``<num>``, ``<title>``, ``<desc>`` if in metadata)."""
    with atomic_write(path) as fh:
        for q in queries:
            desc = q.metadata.get("desc")
            extra = f"<desc> Description:\n{desc}\n\n" if desc else ""
            fh.write(f"<top>\n\n<num> Number: {q.id}\n<title> {q.text}\n\n{extra}</top>\n\n")
