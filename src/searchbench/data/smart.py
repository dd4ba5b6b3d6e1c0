"""SMART-format files (Cranfield, CISI, MED, CACM ``.ALL``/``.QRY``): ``.I`` records.

A record starts at a line ``.I <id>``; each field starts at a line holding a dot and one
capital letter (``.T`` title, ``.A`` author, ``.B`` bibliography, ``.W`` text, ``.X``
cross references, ``.K`` keywords, ``.C`` categories) and runs to the next marker. A
field may repeat (CISI lists one ``.A`` per author); repeats are kept in order. CRLF line
ends and trailing blanks are removed. The files are small historic collections and are
read whole, then split with one regular expression (no Python loop per line).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .._util import atomic_write
from ..errors import DataFormatError
from ._files import PathOrFile, describe, open_text
from .texts import EMPTY, Corpus, Document, Issues, Queries, Query, build_texts

__all__ = ["SmartRecord", "iter_smart", "read_smart_docs", "read_smart_queries", "write_smart"]

_MARKER = re.compile(r"^\.([A-Z])(?:[ \t]+(\S*))?[ \t]*$", re.MULTILINE)
DOC_FIELDS = {"T": "title", "A": "authors", "B": "bibliography", "W": "text",
              "X": "references", "K": "keywords", "C": "categories", "N": "note"}


@dataclass(frozen=True)
class SmartRecord:
    """One ``.I`` record: its id, the line it starts on and its fields (letter → texts)."""

    id: str
    line: int
    fields: Mapping[str, list[str]]

    def get(self, letter: str) -> str:
        """The field's text, repeats joined by newlines ('' when absent)."""
        return "\n".join(self.fields.get(letter, []))


def _clean(block: str) -> str:
    return "\n".join(line.rstrip() for line in block.strip("\n").split("\n")).strip()


def iter_smart(source: PathOrFile) -> Iterator[SmartRecord]:
    """Yield the records of a SMART file in order."""
    name = describe(source)
    with open_text(source) as fh:
        text = fh.read()
    marks = list(_MARKER.finditer(text))
    head = text[: marks[0].start()] if marks else text
    if head.strip() or (marks and marks[0].group(1) != "I"):
        raise DataFormatError(f"{name}:1: found {head.strip()[:40] or marks[0].group(0)!r} "
                              "before the first record; expected '.I <id>'")
    line = 1
    pos = 0
    record: tuple[str, int, dict[str, list[str]]] | None = None
    for i, m in enumerate(marks):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = _clean(text[m.end(): end])
        letter, value = m.group(1), m.group(2)
        if letter == "I":
            if record is not None:
                yield SmartRecord(*record)
            if not value:
                raise DataFormatError(f"{name}:{line}: '.I' without an id; expected '.I <id>'")
            record = (value, line, {})
        elif record is not None:
            record[2].setdefault(letter, []).append(body)
    if record is not None:
        yield SmartRecord(*record)


def _doc(rec: SmartRecord) -> Document:
    meta = {DOC_FIELDS.get(k, k): "\n".join(v) for k, v in rec.fields.items() if k not in "TW"}
    return Document(rec.id, rec.get("W"), rec.get("T"), meta or EMPTY)


def read_smart_docs(source: PathOrFile, *, issues: Issues | None = None) -> Corpus:
    """Documents: ``.W`` is the text, ``.T`` the title, other fields go to metadata."""
    name = describe(source)
    pairs = ((r.line, _doc(r)) for r in iter_smart(source))
    return build_texts(Corpus, pairs, issues, name)


def read_smart_queries(
    source: PathOrFile, *, ids: str = "record", issues: Issues | None = None
) -> Queries:
    """Queries: ``.W`` is the text (``.T``/``.A``/``.B`` kept in metadata).

    ``ids="record"`` uses the ``.I`` value; ``ids="position"`` numbers queries 1, 2, …
    in file order and keeps the ``.I`` value as ``metadata["record_id"]`` (Cranfield).
    """
    if ids not in ("record", "position"):
        raise DataFormatError(f"ids={ids!r}; expected 'record' or 'position'")
    name = describe(source)

    def pairs() -> Iterator[tuple[int, Query]]:
        for n, r in enumerate(iter_smart(source), 1):
            meta = {DOC_FIELDS.get(k, k): "\n".join(v) for k, v in r.fields.items() if k != "W"}
            qid = r.id
            if ids == "position":
                meta["record_id"], qid = r.id, str(n)
            yield r.line, Query(qid, r.get("W"), "human", None, False, meta or EMPTY)

    return build_texts(Queries, pairs(), issues, name)


def write_smart(path: str | os.PathLike[str], records: Corpus | Queries) -> None:
    """Write documents (``.T``/``.W``) or queries (``.W``) as a SMART file, atomically."""
    with atomic_write(path) as fh:
        for r in records:
            fh.write(f".I {r.id}\n")
            title = getattr(r, "title", "")
            if title:
                fh.write(f".T\n{title}\n")
            fh.write(f".W\n{r.text}\n")
