"""Qrels and runs in Parquet and Arrow IPC files (ARCHITECTURE §2.5).

Schema (one row per judgment or retrieved document, in any order):

========== ======================= ================================================
column     type                    meaning
========== ======================= ================================================
query_id   string                  the query
doc_id     string                  the document
score      float64 (any int/float) runs: the retrieval score (ranking is by score,
                                   then doc id, as for TREC runs)
grade      int (any integer)       qrels: the relevance label, -128..127
rank       int, optional           runs: written 1-based; ignored when read, as
                                   trec_eval ignores the TREC rank column
tag        string, optional        runs: the run's name (first row)
========== ======================= ================================================

Files are recognised by their magic bytes, whatever their names: ``PAR1`` (Parquet),
``ARROW1`` (Arrow IPC file, also called Feather v2) or an IPC stream's ``FF FF FF FF``.
Every value goes through the same checks as a TREC file's (``Qrels.from_columns``,
``Run.from_columns``): ids, grades, non-finite scores, duplicate pairs; a message names the
file, the column and the row. A column name given twice and a run without rows are
refused (in memory and streamed alike: an empty text run is refused too).

Integrity: Parquet pages carry an optional CRC-32. searchbench writes it for every page
(``write_page_checksum``) and verifies it on every read (``page_checksum_verification``):
a page whose bytes changed is refused, never scored. Pages written without a checksum
(pyarrow's default) cannot be verified. Arrow IPC has no checksums at all: its batches are
validated in full (offsets, UTF-8, bounds), which catches damage to ids and structure but
not a changed byte inside a number.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa

from .._util import atomic_write
from ..errors import DataFormatError
from ._arrow import to_numpy
from ._columns import Parsed
from ._files import open_text
from ._sniff import (
    ARROW_STREAM_MAGIC,
    ColumnarFormat,
    columnar_format,
)

if TYPE_CHECKING:
    from .qrels import Qrels
    from .run import Run

__all__ = ["ColumnarFormat", "check_run_file", "columnar_format", "parse_columnar_qrels",
           "parse_columnar_run", "run_columns", "write_columnar_qrels", "write_columnar_run"]

RUN_SCHEMA = "query_id (string), doc_id (string), score (number), optional rank (int), tag"
QRELS_SCHEMA = "query_id (string), doc_id (string), grade (integer)"


def read_table(path: str | os.PathLike[str]) -> pa.Table:
    """The whole table of a Parquet or Arrow IPC file; damage (a failed page checksum,
    an invalid batch, a truncated file) and a column name given twice are one
    DataFormatError."""
    src = os.fspath(path)
    fmt = columnar_format(path)
    what = "Parquet" if fmt == "parquet" else "Arrow IPC"
    try:
        if fmt == "parquet":
            with parquet_file(src) as pf:
                check_column_names(pf.schema_arrow, src)
                return pf.read()
        with pa.OSFile(src, "rb") as fh:
            if fh.read(4) == ARROW_STREAM_MAGIC:
                fh.seek(0)
                table = pa.ipc.open_stream(fh).read_all()
            else:
                fh.seek(0)
                table = pa.ipc.open_file(fh).read_all()
        check_column_names(table.schema, src)
        table.validate(full=True)
        return table
    except DataFormatError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise unreadable(src, what, exc) from None


def parquet_file(src: str) -> Any:
    """``pq.ParquetFile`` that verifies the CRC of every page that has one."""
    import pyarrow.parquet as pq  # lazy: loads pyarrow on first use

    return pq.ParquetFile(src, page_checksum_verification=True)


def check_column_names(schema: pa.Schema, src: str) -> None:
    """Refuse a schema naming a column twice (which of the two would be read?)."""
    names = schema.names
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise DataFormatError(f"{src}: column {twice!r} appears {names.count(twice)} times; "
                              "expected each column once")


def unreadable(src: str, what: str, exc: BaseException) -> DataFormatError:
    """The one error for a columnar file that cannot be read (``what``: Parquet, Arrow
    IPC): a failed page checksum says the values were refused."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "checksum" in reason.lower():
        return DataFormatError(f"{src}: a page fails its checksum ({reason}); the file is "
                               "damaged and none of its values are used: restore it or write "
                               "it again")
    return DataFormatError(f"{src}: cannot read this {what} file ({reason}); expected a "
                           f"complete {what} file (truncated or damaged?)")


def table_column(table: pa.Table, name: str, src: str, schema: str, *, kinds: tuple[str, ...],
            optional: bool = False) -> pa.ChunkedArray | None:
    """Column ``name`` checked for type (``kinds``: string, integer, number) and nulls."""
    if name not in table.column_names:
        if optional:
            return None
        found = ", ".join(table.column_names) or "none"
        raise DataFormatError(f"{src}: no column {name!r} (found columns: {found}); expected "
                              f"the columns {schema}")
    col = table.column(name)
    kind = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    ok = {"string": pa.types.is_string(kind) or pa.types.is_large_string(kind),
          "integer": pa.types.is_integer(kind),
          "number": pa.types.is_integer(kind) or pa.types.is_floating(kind)}
    if not any(ok[k] for k in kinds):
        raise DataFormatError(f"{src}: column {name!r} holds {col.type}; expected "
                              f"{' or '.join(kinds)} values ({schema})")
    if col.null_count:
        import pyarrow.compute as pc  # lazy: loads pyarrow.compute on first use

        row = int(np.flatnonzero(to_numpy(pc.is_null(col)))[0])
        raise DataFormatError(f"{src}: row {row + 1}: column {name!r} is null; expected a "
                              "value in every row")
    return col.cast(kind) if kind != col.type else col


def _row(src: str):
    def describe(i: int) -> str:
        return f"{src}: row {i + 1}"

    return describe


def parse_columnar_run(path: str | os.PathLike[str]) -> Parsed:
    """The columns of a Parquet or Arrow IPC run file (schema in the module docstring), for
    :meth:`Run.from_file <searchbench.data.Run.from_file>` to wrap."""
    src = os.fspath(path)
    table = read_table(path)
    if table.num_rows == 0:
        raise DataFormatError(no_rows(src))
    return run_columns(table, src, default_name=Path(src).name)


def check_run_file(path: str | os.PathLike[str]) -> None:
    """Refuse a Parquet or Arrow IPC run file that names a column twice or holds no rows,
    from its footer alone (Ray checks a file this way before cutting it into partitions,
    so it answers as :func:`parse_columnar_run` and the streamed reader do)."""
    src = os.fspath(path)
    fmt = columnar_format(path)
    what = "Parquet" if fmt == "parquet" else "Arrow IPC"
    try:
        if fmt == "parquet":
            with parquet_file(src) as pf:
                schema, rows = pf.schema_arrow, pf.metadata.num_rows
        else:
            with pa.memory_map(src) as fh:
                reader = pa.ipc.open_file(fh)
                schema = reader.schema
                rows = sum(reader.get_batch(i).num_rows
                           for i in range(reader.num_record_batches))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise unreadable(src, what, exc) from None
    check_column_names(schema, src)
    if rows == 0:
        raise DataFormatError(no_rows(src))


def no_rows(src: str) -> str:
    """The refusal of a run file without rows (the same in memory, streamed and on Ray,
    as for an empty text run)."""
    return f"{src}: the file holds no rows; expected at least one run row"


def run_columns(table: pa.Table, src: str, *, default_name: str | None = None) -> Parsed:
    """The run columns of a table, checked as a file's (``src`` names it in messages), for
    :func:`searchbench.data.run_from_table` to wrap. The default name: the ``tag`` of the
    first row, else ``default_name``, else ``src``."""
    query_ids = table_column(table, "query_id", src, RUN_SCHEMA, kinds=("string",))
    doc_ids = table_column(table, "doc_id", src, RUN_SCHEMA, kinds=("string",))
    scores = table_column(table, "score", src, RUN_SCHEMA, kinds=("number",))
    table_column(table, "rank", src, RUN_SCHEMA, kinds=("integer",), optional=True)
    tags = table_column(table, "tag", src, RUN_SCHEMA, kinds=("string",), optional=True)
    tag = tags[0].as_py() if tags is not None and len(tags) else None
    assert query_ids is not None and doc_ids is not None and scores is not None
    values = to_numpy(scores.cast(pa.float64()))
    return Parsed([query_ids.combine_chunks(), doc_ids.combine_chunks(), values], src,
                  _row(src), name=tag or default_name or src, tag=tag)


def parse_columnar_qrels(path: str | os.PathLike[str]) -> Parsed:
    """The columns of a Parquet or Arrow IPC qrels file (schema in the module docstring),
    for :meth:`Qrels.from_file <searchbench.data.Qrels.from_file>` to wrap."""
    src = os.fspath(path)
    table = read_table(path)
    query_ids = table_column(table, "query_id", src, QRELS_SCHEMA, kinds=("string",))
    doc_ids = table_column(table, "doc_id", src, QRELS_SCHEMA, kinds=("string",))
    grades = table_column(table, "grade", src, QRELS_SCHEMA, kinds=("number",))
    assert query_ids is not None and doc_ids is not None and grades is not None
    return Parsed([query_ids.combine_chunks(), doc_ids.combine_chunks(),
                   to_numpy(grades.combine_chunks())], src, _row(src))


def table_kind(table: pa.Table) -> Literal["qrels", "run"] | None:
    """``run`` when the table has a ``score`` column, ``qrels`` with ``grade``."""
    if "score" in table.column_names:
        return "run"
    return "qrels" if "grade" in table.column_names else None


def run_table(run: Run, *, tag: str | None = None) -> pa.Table:
    """A run as a table: query_id, doc_id, score (float64), rank (int32, 1-based), tag."""
    n = len(run.scores)
    label = tag or run.name or "run"
    return pa.table({
        "query_id": pa.array(run.query_ids[run.query_codes()].astype(str), pa.string()),
        "doc_id": run.doc_ids_arrow(),
        "score": pa.array(np.asarray(run.scores, dtype=np.float64)),
        "rank": pa.array(run.ranks() + 1, pa.int32()),
        "tag": pa.repeat(pa.scalar(label, pa.string()), n),
    })


def qrels_table(qrels: Qrels) -> pa.Table:
    """Qrels as a table: query_id, doc_id, grade (int32)."""
    return pa.table({
        "query_id": pa.array(qrels.query_ids[qrels.query_codes()].astype(str), pa.string()),
        "doc_id": pa.array(qrels.doc_vocab[qrels.doc_codes].astype(str), pa.string()),
        "grade": pa.array(qrels.grades.astype(np.int32)),
    })


def write_table(table: pa.Table, path: str | os.PathLike[str], format: ColumnarFormat) -> None:
    """Write ``table`` as Parquet (a CRC-32 on every page) or an Arrow IPC file,
    atomically (never gzipped)."""
    if format not in ("parquet", "arrow"):
        raise DataFormatError(f"columnar format {format!r} is unknown; expected 'parquet' or "
                              "'arrow'")
    with atomic_write(path, binary=True, compress=False) as out:
        if format == "parquet":
            import pyarrow.parquet as pq  # lazy: loads pyarrow on first use

            pq.write_table(table, out, write_page_checksum=True)
        else:
            with pa.ipc.new_file(out, table.schema) as writer:
                writer.write_table(table)


def write_columnar_run(run: Run, path: str | os.PathLike[str], format: ColumnarFormat, *,
                       tag: str | None = None) -> None:
    """Write a run as Parquet or Arrow IPC (see :func:`run_table`), atomically."""
    write_table(run_table(run, tag=tag), path, format)


def write_columnar_qrels(qrels: Qrels, path: str | os.PathLike[str],
                         format: ColumnarFormat) -> None:
    """Write qrels as Parquet or Arrow IPC (see :func:`qrels_table`), atomically."""
    write_table(qrels_table(qrels), path, format)


def detect_kind(path: str | os.PathLike[str]) -> Literal["qrels", "run"]:
    """Whether a file holds qrels or a run: a columnar file by its columns (``score`` or
    ``grade``), a text file by its first data line (6 fields or more: a TREC run; 3 or 4:
    TREC or BEIR qrels)."""
    src = os.fspath(path)
    if columnar_format(path):
        kind = table_kind(read_table(path))
        if kind is None:
            raise DataFormatError(f"{src}: found neither a 'score' nor a 'grade' column; "
                                  f"expected a run ({RUN_SCHEMA}) or qrels ({QRELS_SCHEMA})")
        return kind

    with open_text(path) as fh:
        for number, line in enumerate(fh, 1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) >= 6:
                return "run"
            if len(fields) in (3, 4):
                return "qrels"
            raise DataFormatError(f"{src}:{number}: found {len(fields)} fields; expected a TREC "
                                  "run (6 fields), TREC qrels (4) or BEIR qrels (3)")
    raise DataFormatError(f"{src}: holds no data line; expected qrels or a run")
