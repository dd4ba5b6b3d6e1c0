"""Readers and writers for TREC qrels, TREC runs and BEIR qrels ``.tsv`` (DESIGN §2).

Parsing is vectorised: blocks of the file are normalised with numpy (see ``_text``) and
parsed by pyarrow's CSV reader with dictionary-encoded id columns, so a 10⁸-line run is
read without a Python loop per line. The slow, line-by-line path runs only to locate an
error for its message.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ..errors import DataFormatError
from ._text import iter_blocks, keep_first_fields, line_fields, normalise, open_binary, source_name

if TYPE_CHECKING:
    from .qrels import Qrels
    from .run import Run

__all__ = ["read_qrels", "read_run", "write_qrels", "write_run"]

_ID = pa.dictionary(pa.int32(), pa.string())
RUN_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]
TREC_QRELS_COLUMNS = ["qid", "iter", "docid", "grade"]
BEIR_QRELS_COLUMNS = ["qid", "docid", "grade"]


# -- reading -------------------------------------------------------------------------
def read_run(
    path: str | os.PathLike[str] | IO[Any], *, name: str | None = None, keep: str | None = None
) -> Run:
    """Read a TREC run ``qid Q0 docid rank score tag`` (extra trailing fields ignored)."""
    from .run import Run

    src = source_name(path)
    table = _read_table(path, RUN_COLUMNS, {"score": pa.float64()}, ["qid", "docid", "score"],
                        min_fields=6, what="run")
    tag = name or _first_tag(path) or Path(src).name
    return Run.from_columns(
        table.column("qid"), table.column("docid"), _to_numpy(table.column("score")),
        name=tag, keep=keep, source=src, describe_line=_line_finder(path, src),
    )


def read_qrels(path: str | os.PathLike[str] | IO[Any], *, keep: str | None = None) -> Qrels:
    """Read TREC qrels ``qid iter docid grade`` or BEIR ``query-id corpus-id score`` (.tsv).

    The layout is chosen from the first data line: 4 fields → TREC, 3 → BEIR (a header
    line whose last field is not an integer is skipped).
    """
    from .qrels import Qrels

    src = source_name(path)
    n_fields, has_header = _sniff_qrels(path, src)
    columns = TREC_QRELS_COLUMNS if n_fields == 4 else BEIR_QRELS_COLUMNS
    table = _read_table(path, columns, {"grade": pa.int64()}, ["qid", "docid", "grade"],
                        min_fields=n_fields, max_fields=n_fields, what="qrels",
                        skip_header=has_header)
    return Qrels.from_columns(
        table.column("qid"), table.column("docid"), _to_numpy(table.column("grade")),
        keep=keep, source=src, describe_line=_line_finder(path, src, skip_header=has_header),
    )


def _read_table(
    path: str | os.PathLike[str] | IO[Any], columns: list[str], types: dict[str, pa.DataType],
    include: list[str], *, min_fields: int, what: str, max_fields: int | None = None,
    skip_header: bool = False,
) -> pa.Table:
    src = source_name(path)
    column_types = {c: _ID for c in ("qid", "docid")} | types
    tables, line_base = [], 0
    with open_binary(path) as stream:
        for block in iter_blocks(stream):
            buf = normalise(block)
            if skip_header and line_base == 0:
                buf = _blank_first_line(buf)
            n_lines = _validate_fields(buf, line_base, src, min_fields, max_fields, what)
            if len(columns) > min_fields or max_fields is None:
                buf = _truncate(buf, len(columns))
            tables.append(_parse(buf, columns, column_types, include, src, line_base, what))
            line_base += n_lines
    tables = [t for t in tables if t.num_rows]
    if not tables:
        raise DataFormatError(f"{src}: the file holds no {what} lines; expected at least one")
    return pa.concat_tables(tables).unify_dictionaries()


def _validate_fields(buf: np.ndarray, line_base: int, src: str, lo: int, hi: int | None,
                     what: str) -> int:
    counts, _ = line_fields(buf)
    bad = (counts > 0) & ((counts < lo) | (counts > hi if hi is not None else False))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        expected = f"{lo}" if hi == lo else f"at least {lo}"
        raise DataFormatError(
            f"{src}:{line_base + i + 1}: found {counts[i]} fields, expected {expected} "
            f"({_layout(what, lo)})"
        )
    return len(counts)


def _layout(what: str, n: int) -> str:
    if what == "run":
        return "qid Q0 docid rank score tag"
    return "qid iter docid grade" if n == 4 else "query-id corpus-id score"


def _truncate(buf: np.ndarray, n_fields: int) -> np.ndarray:
    counts, _ = line_fields(buf)
    return keep_first_fields(buf, n_fields) if (counts > n_fields).any() else buf


def _blank_first_line(buf: np.ndarray) -> np.ndarray:
    nl = int(np.flatnonzero(buf == 10)[0])
    return np.concatenate((buf[nl:nl + 1], buf[nl + 1:])) if nl else buf


def _parse(buf: np.ndarray, columns: list[str], types: dict[str, pa.DataType],
           include: list[str], src: str, line_base: int, what: str) -> pa.Table:
    if not (buf != 10).any():
        return pa.table({c: pa.array([], type=types[c]) for c in include})
    try:
        return pacsv.read_csv(
            pa.py_buffer(buf.tobytes()),
            read_options=pacsv.ReadOptions(column_names=columns, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False,
                                              ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(column_types=types, include_columns=include,
                                                 strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False,
                                                 null_values=[]),
        )
    except pa.ArrowInvalid as exc:
        raise _locate_conversion_error(buf, columns, types, src, line_base, what, exc) from None


def _locate_conversion_error(buf: np.ndarray, columns: list[str], types: dict[str, pa.DataType],
                             src: str, line_base: int, what: str, exc: Exception) -> Exception:
    """Slow path: find the first line whose numeric field does not parse."""
    numeric = {c: t for c, t in types.items() if not pa.types.is_dictionary(t)}
    for i, line in enumerate(buf.tobytes().split(b"\n")):
        fields = line.decode("utf-8", "replace").split(" ")
        for col, typ in numeric.items():
            if col not in columns or len(fields) <= columns.index(col):
                continue
            value = fields[columns.index(col)]
            try:
                number = float(value) if pa.types.is_floating(typ) else int(value)
            except ValueError:
                kind = "a number" if pa.types.is_floating(typ) else "an integer"
                return DataFormatError(f"{src}:{line_base + i + 1}: {col} {value!r} is not "
                                       f"{kind}; expected {_layout(what, len(columns))}")
            del number
    return DataFormatError(f"{src}: cannot parse the {what} file: {exc}")


def _sniff_qrels(path: str | os.PathLike[str] | IO[Any], src: str) -> tuple[int, bool]:
    """(fields per line, has a header) from the first data line."""
    for _, fields in _iter_lines(path, limit=1):
        if len(fields) in (3, 4):
            header = len(fields) == 3 and not _is_int(fields[-1])
            return len(fields), header
        raise DataFormatError(
            f"{src}:1: found {len(fields)} fields, expected 4 (TREC: qid iter docid grade) "
            "or 3 (BEIR: query-id corpus-id score)"
        )
    raise DataFormatError(f"{src}: the file holds no qrels lines; expected at least one")


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _iter_lines(path: str | os.PathLike[str] | IO[Any], limit: int | None = None
                ) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of data lines, line by line: for sniffing and error paths only."""
    if not isinstance(path, (str, os.PathLike)):
        pos = path.tell() if path.seekable() else None
        if pos is None:
            return
    else:
        pos = None
    stream = open_binary(path)
    try:
        seen = 0
        for n, raw in enumerate(stream, start=1):
            line = raw.decode("utf-8", "replace").lstrip("\ufeff")
            if line.startswith("#") or not line.strip():
                continue
            yield n, line.split()
            seen += 1
            if limit is not None and seen >= limit:
                return
    finally:
        if pos is not None:
            path.seek(pos)  # type: ignore[union-attr]
        elif isinstance(path, (str, os.PathLike)):
            stream.close()


def _line_finder(path: str | os.PathLike[str] | IO[Any], src: str, skip_header: bool = False
                 ) -> Callable[[int], str]:
    """Map a data-row index to ``path:line`` by rescanning the file (error path only)."""

    def describe(row: int) -> str:
        target = row + (1 if skip_header else 0)
        try:
            for i, (n, _) in enumerate(_iter_lines(path)):
                if i == target:
                    return f"{src}:{n}"
        except (OSError, ValueError):
            pass
        return f"{src}: row {row + 1}"

    return describe


def _first_tag(path: str | os.PathLike[str] | IO[Any]) -> str | None:
    try:
        for _, fields in _iter_lines(path, limit=1):
            return fields[5] if len(fields) >= 6 else None
    except (OSError, ValueError, DataFormatError):
        return None
    return None


def _to_numpy(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy()


# -- writing -------------------------------------------------------------------------
def write_run(run: Run, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
    """Write ``qid Q0 docid rank score tag`` lines (rank 1-based), atomically."""
    import pyarrow.compute as pc

    q = pa.array(run.query_ids[run.query_codes()].astype(str))
    d = pa.array(run.doc_vocab[run.doc_codes].astype(str))
    rank = pc.cast(pa.array(run.ranks() + 1), pa.string())
    score = pc.cast(pa.array(run.scores), pa.string())
    label = (tag or run.name or "run").replace(" ", "_")
    lines = pc.binary_join_element_wise(q, "Q0", d, rank, score, label, " ")
    _atomic_write_lines(path, lines)


def write_qrels(qrels: Qrels, path: str | os.PathLike[str], *, format: str = "trec") -> None:
    """Write TREC qrels (``qid 0 docid grade``) or BEIR tsv with header, atomically."""
    import pyarrow.compute as pc

    if format not in ("trec", "beir"):
        raise DataFormatError(f"qrels format {format!r} is unknown; expected 'trec' or 'beir'")
    q = pa.array(qrels.query_ids[qrels.query_codes()].astype(str))
    d = pa.array(qrels.doc_vocab[qrels.doc_codes].astype(str))
    g = pc.cast(pa.array(qrels.grades.astype(np.int64)), pa.string())
    if format == "trec":
        lines = pc.binary_join_element_wise(q, "0", d, g, " ")
        header = None
    else:
        lines = pc.binary_join_element_wise(q, d, g, "\t")
        header = "query-id\tcorpus-id\tscore"
    _atomic_write_lines(path, lines, header=header)


def _atomic_write_lines(path: str | os.PathLike[str], lines: pa.Array,
                        header: str | None = None) -> None:
    """Write lines to a temp file beside ``path`` and rename it into place (.gz if named so)."""
    import gzip

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as raw:
            out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if target.suffix == ".gz" \
                else raw
            if header:
                out.write(header.encode() + b"\n")
            if len(lines):
                out.write("\n".join(lines.to_pylist()).encode("utf-8") + b"\n")
            if out is not raw:
                out.close()
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
