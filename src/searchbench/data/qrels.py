"""Relevance judgments as CSR-like arrays: per query, sorted doc codes and int8 grades."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import IO, Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import DataFormatError
from ._columns import (
    Grouped,
    Interned,
    Parsed,
    default_line,
    encode,
    flatten_mapping,
    resolve_duplicates,
    subset,
)
from ._text import read_json_mapping, source_name
from .trec import parse_qrels, write_qrels

__all__ = ["Qrels"]

GRADE_MIN, GRADE_MAX = -128, 127


class Qrels:
    """Judgments ``(query, doc) -> grade``; ``grade >= rel`` is relevant, < 0 is unjudged.

    Arrays (read-only by convention): ``query_ids`` (sorted str), ``offsets`` (int64,
    n_queries + 1), ``doc_vocab`` (sorted str), ``doc_codes`` (int32, sorted within each
    query) and ``grades`` (int8).
    """

    __slots__ = ("doc_codes", "doc_vocab", "grades", "offsets", "query_ids", "source")

    def __init__(self, grouped: Grouped, source: str | None = None) -> None:
        # by (query, doc) as one int64 key: a stable argsort of it is lexsort's order, ~10×
        # faster (n_queries * n_docs < 2**63 for any qrels that fits in memory)
        span = max(len(grouped.doc_vocab), 1)
        order = np.argsort(grouped.query_codes.astype(np.int64) * span + grouped.doc_codes,
                           kind="stable")
        self.query_ids: np.ndarray = grouped.query_ids
        self.offsets: np.ndarray = grouped.offsets
        self.doc_vocab: np.ndarray = grouped.doc_vocab
        self.doc_codes: np.ndarray = grouped.doc_codes[order]
        self.grades: np.ndarray = grouped.values[order].astype(np.int8)
        self.source = source

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_columns(
        cls,
        query_ids: Interned | Iterable[Any],
        doc_ids: Interned | Iterable[Any],
        grades: ArrayLike,
        *,
        keep: str | None = None,
        source: str | None = None,
        describe_line=None,
    ) -> Qrels:
        """Build from three parallel columns (lists, numpy or pyarrow arrays)."""
        name = source or "<qrels>"
        grade_arr = _check_grades(np.asarray(grades), name, describe_line)
        grouped = encode(query_ids, doc_ids, grade_arr, source)
        keep_idx = resolve_duplicates(grouped, keep, name, describe_line or default_line(name))
        return cls(subset(grouped, keep_idx), source=source)

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, int]], **kw: Any) -> Qrels:
        """Build from ``{query_id: {doc_id: grade}}`` (pytrec_eval's layout)."""
        qs, ds, gs = flatten_mapping(judgments, "grade", kw.get("source") or "<qrels>")
        return cls.from_columns(qs, ds, gs, **kw)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str] | IO[Any], **kw: Any) -> Qrels:
        """Read a JSON file holding ``{query_id: {doc_id: value}}`` (pytrec_eval, ranx)."""
        data = read_json_mapping(path)
        kw.setdefault("source", source_name(path))
        return cls.from_dict(data, **kw)

    @classmethod
    def from_frame(cls, frame: Any, **kw: Any) -> Qrels:
        """Build from a DataFrame with ``query_id, doc_id, relevance`` columns.

        ir_measures' names (``query_id, doc_id, relevance``) and ranx's
        (``q_id, doc_id, score``) are both accepted.
        """
        cols = {c.lower(): c for c in frame.columns}
        q = cols.get("query_id") or cols.get("q_id") or cols.get("qid")
        d = cols.get("doc_id") or cols.get("docid") or cols.get("docno")
        g = cols.get("relevance") or cols.get("grade") or cols.get("rel") or cols.get("score")
        if not (q and d and g):
            raise DataFormatError(
                f"DataFrame columns {list(frame.columns)}: expected query_id, doc_id, relevance"
            )
        return cls.from_columns(
            frame[q].astype(str).tolist(), frame[d].astype(str).tolist(),
            frame[g].to_numpy(), **kw,
        )

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str] | IO[Any], *, keep: str | None = None
    ) -> Qrels:
        """Read TREC qrels (``qid iter docid grade``) or BEIR ``.tsv`` qrels, ``.gz`` too, or
        Parquet or Arrow IPC qrels (recognised by their magic bytes); the rules are
        :func:`searchbench.data.read_qrels`'s."""
        return cls.from_parsed(parse_qrels(path), keep=keep)

    @classmethod
    def from_parsed(cls, parsed: Parsed, *, keep: str | None = None) -> Qrels:
        """Qrels from a reader's columns (``trec.parse_qrels``,
        ``columnar.parse_columnar_qrels``)."""
        query_ids, doc_ids, grades = parsed.columns
        return cls.from_columns(query_ids, doc_ids, grades, keep=keep, source=parsed.source,
                                describe_line=parsed.describe_line)

    # -- views ---------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __len__(self) -> int:
        return len(self.doc_codes)

    def __repr__(self) -> str:
        return f"Qrels({self.n_queries} queries, {len(self)} judgments)"

    def query_codes(self) -> np.ndarray:
        """Query index of every judgment (int32)."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int32), np.diff(self.offsets))

    def num_rel(self, rel: int = 1) -> np.ndarray:
        """Per query: number of docs with ``grade >= rel``."""
        return np.bincount(
            self.query_codes(), weights=self.grades >= rel, minlength=self.n_queries
        ).astype(np.int64)

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: grade}}``."""
        out: dict[str, dict[str, int]] = {}
        docs = self.doc_vocab[self.doc_codes].tolist()
        grades = self.grades.tolist()
        for i, qid in enumerate(self.query_ids.tolist()):
            a, b = self.offsets[i], self.offsets[i + 1]
            out[qid] = dict(zip(docs[a:b], grades[a:b], strict=True))
        return out

    def to_frame(self) -> Any:
        """A pandas DataFrame ``query_id, doc_id, relevance``."""
        import pandas as pd  # lazy: the pandas extra

        return pd.DataFrame(
            {
                "query_id": self.query_ids[self.query_codes()],
                "doc_id": self.doc_vocab[self.doc_codes],
                "relevance": self.grades.astype(np.int64),
            }
        )

    def to_file(self, path: str | os.PathLike[str], format: str = "trec") -> None:
        """Write TREC qrels (``format="trec"``) or BEIR tsv with header (``"beir"``)."""
        write_qrels(self, path, format=format)

    def to_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write a Parquet file (``query_id, doc_id, grade``), atomically."""
        # lazy: loads columnar, pyarrow on first use
        from .columnar import write_columnar_qrels  # in-function: columnar loads pyarrow

        write_columnar_qrels(self, path, "parquet")

    def to_arrow(self, path: str | os.PathLike[str]) -> None:
        """Write an Arrow IPC file (``.arrow``/``.feather``) with :meth:`to_parquet`'s
        columns, atomically."""
        # lazy: loads columnar, pyarrow on first use
        from .columnar import write_columnar_qrels  # in-function: columnar loads pyarrow

        write_columnar_qrels(self, path, "arrow")


def _check_grades(grades: np.ndarray, source: str, describe_line) -> np.ndarray:
    if grades.dtype.kind == "f":
        bad = ~np.isfinite(grades) | (grades != np.round(grades))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            where = describe_line(i) if describe_line else f"{source}: entry {i + 1}"
            raise DataFormatError(f"{where}: grade {float(grades[i])!r} is not an integer; "
                                  "expected an integer relevance label such as 0, 1, 2")
    elif grades.dtype.kind not in "iub" and len(grades):
        raise DataFormatError(f"{source}: grades of type {grades.dtype} are not integers")
    grades = grades.astype(np.int64)
    out_of_range = (grades < GRADE_MIN) | (grades > GRADE_MAX)
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        where = describe_line(i) if describe_line else f"{source}: entry {i + 1}"
        raise DataFormatError(
            f"{where}: grade {grades[i]} is outside {GRADE_MIN}..{GRADE_MAX}; "
            "expected a small integer label"
        )
    return grades
