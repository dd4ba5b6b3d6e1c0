"""Corpus and Queries: id-addressed texts with metadata (ARCHITECTURE §5)."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from ..errors import DataFormatError

__all__ = ["EMPTY", "Corpus", "Document", "Issue", "Issues", "Queries", "Query", "build_texts"]

EMPTY: Mapping[str, Any] = MappingProxyType({})
"""The shared read-only empty metadata of records that have none (saves a dict per record)."""


@dataclass(frozen=True, slots=True)
class Document:
    """One document: ``text`` (searched), ``title`` (kept apart, as in BEIR), metadata.

    Records without metadata share the read-only :data:`EMPTY` mapping.
    """

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True, slots=True)
class Query:
    """One query with its provenance: who wrote it, which model if synthetic, verified?
    ``no_answer``: the set's authors expect no document to answer it (ARCHITECTURE §4.4)."""

    id: str
    text: str
    source: str = "human"  # human | logs | curated | synthetic
    generator: str | None = None
    verified: bool = False
    metadata: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    no_answer: bool = False


class _Texts:
    """An ordered, id-indexed collection of records."""

    _records: list[Any]
    _index: dict[str, int]

    def __init__(self, records: list[Any]) -> None:
        self._records = list(records)
        self._index = {}
        for i, rec in enumerate(self._records):
            if rec.id in self._index:
                raise DataFormatError(f"duplicate id {rec.id!r}; expected unique ids")
            self._index[rec.id] = i

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._records)

    def __contains__(self, id_: object) -> bool:
        return id_ in self._index

    def __getitem__(self, id_: str) -> Any:
        return self._records[self._index[id_]]

    def get(self, id_: str, default: Any = None) -> Any:
        """The record with this id, or ``default``."""
        i = self._index.get(id_)
        return default if i is None else self._records[i]

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self._records]

    def subset(self, ids: list[str]) -> Any:
        """A new collection with the given ids, in the given order."""
        return type(self)([self[i] for i in ids])


class Corpus(_Texts):
    """Documents by id; ``corpus[doc_id].text``, iteration in file order."""

    def __repr__(self) -> str:
        return f"Corpus({len(self)} documents)"

    @classmethod
    def from_dict(cls, docs: Mapping[str, str | Mapping[str, Any]]) -> Corpus:
        """``{doc_id: text}`` or ``{doc_id: {"title": ..., "text": ...}}``."""
        out = []
        for did, value in docs.items():
            if isinstance(value, str):
                out.append(Document(str(did), value))
            else:
                out.append(Document(str(did), value.get("text", ""), value.get("title", ""),
                                    value.get("metadata", {})))
        return cls(out)

    def texts(self, with_title: bool = True) -> list[str]:
        """Document texts in corpus order, title prepended when ``with_title``."""
        if with_title:
            return [f"{d.title} {d.text}".strip() if d.title else d.text for d in self]
        return [d.text for d in self]


class Queries(_Texts):
    """Queries by id; ``queries[qid].text``, iteration in file order."""

    def __repr__(self) -> str:
        return f"Queries({len(self)} queries)"

    @classmethod
    def from_dict(cls, queries: Mapping[str, str]) -> Queries:
        """``{query_id: text}``."""
        return cls([Query(str(q), t) for q, t in queries.items()])

    def texts(self) -> list[str]:
        return [q.text for q in self]

    def by_source(self) -> dict[str, int]:
        """Number of queries per provenance (``human``, ``logs``, ``curated``, ``synthetic``)."""
        return dict(Counter(q.source for q in self))

    def n_verified(self) -> int:
        return sum(1 for q in self if q.verified)

    def no_answer_ids(self) -> list[str]:
        """Ids of the queries marked ``no_answer`` (in query order)."""
        return [q.id for q in self if q.no_answer]


@dataclass(frozen=True)
class Issue:
    """A problem found while loading leniently: ``kind`` (e.g. ``duplicate-id``), message."""

    kind: str
    message: str


Issues = list[Issue]
T = TypeVar("T", bound=_Texts)


def build_texts(
    cls: type[T], pairs: Iterable[tuple[int | str, Any]], issues: Issues | None = None,
    name: str = "<records>",
) -> T:
    """Build a Corpus/Queries from ``(line, record)`` pairs, streaming.

    ``line`` is the record's line number in the source ``name`` (or a full location string).
    A duplicate id raises :class:`DataFormatError` naming both places; with an ``issues``
    list the first record is kept and the duplicate recorded.
    """
    records: list[Any] = []
    index: dict[str, int] = {}
    lines = array("q")  # line of each record (8 bytes each, no "path:line" strings kept)
    for loc, rec in pairs:
        i = index.setdefault(rec.id, len(records))
        if i < len(records):
            where = f"{name}:{loc}" if isinstance(loc, int) else loc
            first = f"{name}:{lines[i]}" if lines[i] >= 0 else f"record {i + 1}"
            msg = f"{where}: duplicate id {rec.id!r}, first seen at {first}; expected every id once"
            if issues is None:
                raise DataFormatError(msg)
            issues.append(Issue("duplicate-id", msg))
            continue
        records.append(rec)
        lines.append(loc if isinstance(loc, int) else -1)
    out = cls.__new__(cls)
    out._records, out._index = records, index
    return out
