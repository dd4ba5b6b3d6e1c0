"""Readers and writers for TREC qrels, TREC runs and BEIR qrels ``.tsv`` (ARCHITECTURE §2.4).

Parsing is vectorised: blocks of the file are normalised with numpy (see ``_text``) and
parsed by pyarrow's CSV reader with dictionary-encoded id columns, so a 10⁸-line run is
read without a Python loop per line. The slow, line-by-line path runs only to locate an
error for its message.
"""

from __future__ import annotations

import gzip
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ..errors import DataFormatError
from ._arrow import to_numpy
from ._columns import Interned, Strings
from ._strings import concat_strings
from ._text import (
    has_data,
    iter_blocks,
    keep_first_fields,
    normalise,
    open_binary,
    rewindable,
    source_name,
)
from .ids import Interner

if TYPE_CHECKING:
    from .qrels import Qrels
    from .run import Run

__all__ = ["read_qrels", "read_run", "write_qrels", "write_run"]

RUN_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]
TREC_QRELS_COLUMNS = ["qid", "iter", "docid", "grade"]
BEIR_QRELS_COLUMNS = ["qid", "docid", "grade"]


# -- reading -------------------------------------------------------------------------
def read_run(
    path: str | os.PathLike[str] | IO[Any], *, name: str | None = None, keep: str | None = None
) -> Run:
    """Read a TREC run ``qid Q0 docid rank score tag`` (extra trailing fields ignored)."""
    from .run import Run

    path = rewindable(path)
    src = source_name(path)
    columns = list(_read_table(
        path, RUN_COLUMNS, {"score": pa.float64()}, ["qid", "docid", "score"],
        min_fields=6, what="run", lazy_docs=True))
    tag = _first_tag(path)
    # the run takes the columns out of the list: each is freed once used
    run = Run._consume(columns, name=name or tag or Path(src).name, keep=keep, source=src,
                       describe_line=_line_finder(path, src))
    run.metadata["tag"] = tag
    return run


def read_qrels(path: str | os.PathLike[str] | IO[Any], *, keep: str | None = None) -> Qrels:
    """Read TREC qrels ``qid iter docid grade`` or BEIR ``query-id corpus-id score`` (.tsv).

    The layout is chosen from the first data line: 4 fields → TREC, 3 → BEIR (a header
    line whose last field is not an integer is skipped).
    """
    from .qrels import Qrels

    path = rewindable(path)
    src = source_name(path)
    n_fields, has_header = _sniff_qrels(path, src)
    columns = TREC_QRELS_COLUMNS if n_fields == 4 else BEIR_QRELS_COLUMNS
    query_ids, doc_ids, grades = _read_table(
        path, columns, {"grade": pa.int64()}, ["qid", "docid", "grade"],
        min_fields=n_fields, max_fields=n_fields, what="qrels", skip_header=has_header)
    return Qrels.from_columns(query_ids, doc_ids, grades, keep=keep, source=src,
                              describe_line=_line_finder(path, src, skip_header=has_header))


def _read_table(
    path: str | os.PathLike[str] | IO[Any], columns: list[str], types: dict[str, pa.DataType],
    include: list[str], *, min_fields: int, what: str, max_fields: int | None = None,
    skip_header: bool = False, lazy_docs: bool = False,
) -> tuple[Interned, Interned | Strings, np.ndarray]:
    """Parse block by block; ids are interned per block so their strings never pile up.

    Returns the interned query ids, the doc ids and the values column. With
    ``lazy_docs`` (runs) the doc ids are not interned but kept as one Arrow string array:
    evaluation never needs a run-wide doc vocabulary, and hashing every id into one is
    most of the reading time.
    """
    src = source_name(path)
    column_types = {c: pa.string() for c in ("qid", "docid")} | types
    spec = _Spec(src, columns, column_types, include, min_fields, max_fields, what)
    queries, docs, values, line_base, valid = Interner(), Interner(), [], 0, True
    doc_chunks: list[pa.Array] = []
    with open_binary(path) as stream:
        for block in _guarded_blocks(stream, src):
            _refuse_cr_line_endings(block, src)
            data = normalise(block)
            # a form feed is the one whitespace byte a split field may hold; NUL is refused too
            valid &= b"\f" not in data and b"\x00" not in data
            if skip_header and line_base == 0:
                data = _HEADER.sub(rb"\1", data, count=1)
            if has_data(data):
                table = _parse(data, spec, line_base)
                queries.add(table.column("qid"))
                if lazy_docs:
                    doc_chunks.extend(table.column("docid").chunks)
                else:
                    docs.add(table.column("docid"))
                values.append(to_numpy(table.column(include[-1])))
            line_base += block.count(b"\n")
    if not values:
        raise DataFormatError(f"{src}: the file holds no {what} lines; expected at least one")
    doc_ids = Strings(concat_strings(doc_chunks), valid=valid) if lazy_docs else \
        Interned(*docs.finish(), valid=valid)
    scores = np.concatenate(values)
    values.clear()
    return Interned(*queries.finish(), valid=valid), doc_ids, scores


def _refuse_cr_line_endings(block: bytes, src: str) -> None:
    """A file whose lines end in a lone CR (classic Mac) reads as one long line, and a run
    would keep only its first record (extra fields are ignored): refuse it instead."""
    if b"\r" in block and b"\n" not in block and _CR_THEN_DATA.search(block):
        raise DataFormatError(f"{src}: lines end in a lone carriage return (\\r, classic Mac "
                              "line endings); expected LF or CRLF line endings")


_CR_THEN_DATA = re.compile(rb"\r[^\s]")


def _guarded_blocks(stream: IO[bytes], src: str) -> Iterator[bytes]:
    """Blocks of the stream; a truncated or corrupt gzip file becomes a DataFormatError."""
    import zlib

    try:
        yield from iter_blocks(stream)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise DataFormatError(f"{src}: the compressed file is truncated or corrupt ({exc}); "
                              "expected a complete .gz file") from None


_HEADER = re.compile(rb"^(\n*)[^\n]*")
_COLUMN_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")


@dataclass(frozen=True)
class _Spec:
    src: str
    columns: list[str]
    types: dict[str, pa.DataType]
    include: list[str]
    min_fields: int
    max_fields: int | None
    what: str

    @property
    def layout(self) -> str:
        if self.what == "run":
            return "qid Q0 docid rank score tag"
        return "qid iter docid grade" if self.min_fields == 4 else "query-id corpus-id score"


def _parse(data: bytes, spec: _Spec, line_base: int) -> pa.Table:
    """Parse a normalised block with pyarrow; locate the bad line on failure."""
    try:
        return _read_csv(data, spec)
    except pa.ArrowInvalid as exc:
        counts = _COLUMN_COUNT.search(str(exc))
        if spec.max_fields is None and counts and int(counts.group(2)) > int(counts.group(1)):
            try:
                return _read_csv(keep_first_fields(data, len(spec.columns)), spec)
            except pa.ArrowInvalid:
                pass
        raise _locate_error(data, spec, line_base, exc) from None


def _read_csv(data: bytes, spec: _Spec) -> pa.Table:
    return pacsv.read_csv(
        pa.py_buffer(data),
        read_options=pacsv.ReadOptions(column_names=spec.columns, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False,
                                          ignore_empty_lines=True),
        convert_options=pacsv.ConvertOptions(
            column_types=spec.types, include_columns=spec.include, strings_can_be_null=False,
            quoted_strings_can_be_null=False, null_values=[]),
    )


def _locate_error(data: bytes, spec: _Spec, line_base: int, exc: Exception) -> Exception:
    """Slow path, run only on failure: the first line with a bad field count or number."""
    for i, raw in enumerate(data.split(b"\n")):
        if not raw:
            continue
        where = f"{spec.src}:{line_base + i + 1}"
        try:
            fields = raw.decode("utf-8").split(" ")
        except UnicodeDecodeError as err:
            return DataFormatError(f"{where}: byte {raw[err.start]:#04x} is not valid UTF-8; "
                                   "expected UTF-8 text")
        too_many = spec.max_fields is not None and len(fields) > spec.max_fields
        if len(fields) < spec.min_fields or too_many:
            expected = spec.min_fields if spec.max_fields == spec.min_fields else \
                f"at least {spec.min_fields}"
            return DataFormatError(f"{where}: found {len(fields)} fields, expected {expected} "
                                   f"({spec.layout})")
        bad = _bad_number(fields, spec)
        if bad:
            return DataFormatError(f"{where}: {bad}; expected {spec.layout}")
    return DataFormatError(f"{spec.src}: cannot parse the {spec.what} file: {exc}")


def _bad_number(fields: list[str], spec: _Spec) -> str | None:
    for col, typ in spec.types.items():
        if pa.types.is_string(typ):
            continue
        value = fields[spec.columns.index(col)]
        try:
            float(value) if pa.types.is_floating(typ) else int(value)
        except ValueError:
            kind = "a number" if pa.types.is_floating(typ) else "an integer"
            return f"{col} {value!r} is not {kind}"
    return None


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
    with open_binary(path) as stream:
        seen = 0
        for n, raw in enumerate(stream, start=1):
            line = raw.decode("utf-8", "replace").lstrip("\ufeff")
            if line.startswith("#") or not line.strip():
                continue
            yield n, line.split()
            seen += 1
            if limit is not None and seen >= limit:
                return


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


# -- writing -------------------------------------------------------------------------
def write_run(run: Run, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
    """Write ``qid Q0 docid rank score tag`` lines (rank 1-based), atomically."""
    import pyarrow.compute as pc

    q = pa.array(run.query_ids[run.query_codes()].astype(str))
    d = run.doc_ids_arrow()
    rank = pc.cast(pa.array(run.ranks() + 1), pa.string())
    score = pc.cast(pa.array(run.scores), pa.string())
    label = (tag or run.name or "run").replace(" ", "_")
    kind = d.type  # ids of 2 GiB or more are large_string: every part must match
    q, rank, score = (c.cast(kind) for c in (q, rank, score))
    lines = pc.binary_join_element_wise(q, pa.scalar("Q0", kind), d, rank, score,
                                        pa.scalar(label, kind), pa.scalar(" ", kind))
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
