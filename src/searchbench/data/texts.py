"""Corpus and Queries: id-addressed texts with metadata (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Corpus", "Document", "Queries", "Query"]


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    source: str = "human"  # human | logs | curated | synthetic
    generator: str | None = None
    verified: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)


class _Texts:
    """An ordered, id-indexed collection of records."""

    _records: list[Any]
    _index: dict[str, int]

    def __init__(self, records: list[Any]) -> None:
        self._records = list(records)
        self._index = {}
        for i, rec in enumerate(self._records):
            if rec.id in self._index:
                from ..errors import DataFormatError

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
