"""Readers and writers for TREC qrels, TREC runs and BEIR qrels ``.tsv`` (ARCHITECTURE §2.4).

Parsing is vectorised: blocks of the file are normalised with numpy (see ``_text``) and
parsed by pyarrow's CSV reader with dictionary-encoded id columns, so a 10⁸-line run is
read without a Python loop per line. The slow, line-by-line path runs only to locate an
error for its message.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from ..errors import DataFormatError, SearchbenchWarning, user_stacklevel
from ._columns import Interned, Parsed, Strings, sorted_codes
from ._compiled import NOT_SCANNED, NUMBER_LIKE, NotScanned, scan_compiled
from ._sniff import columnar_format
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
    import pyarrow as pa

    from .qrels import Qrels
    from .run import Run

__all__ = ["parse_qrels", "parse_run", "write_qrels", "write_run"]

RUN_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]
TREC_QRELS_COLUMNS = ["qid", "iter", "docid", "grade"]
BEIR_QRELS_COLUMNS = ["qid", "docid", "grade"]


# -- reading -------------------------------------------------------------------------
def parse_run(path: str | os.PathLike[str] | IO[Any], *,
              scanned: dict[str, Any] | NotScanned | None = NOT_SCANNED) -> Parsed:
    """The columns of a TREC run file, or of a Parquet or Arrow IPC run (recognised by its
    magic bytes), for :meth:`Run.from_file <searchbench.data.Run.from_file>` to wrap; the
    input rules are :func:`searchbench.data.read_run`'s. ``scanned``: what
    ``_compiled.scan_run_file(path)`` gave, when it was called already."""
    if isinstance(scanned, NotScanned) and isinstance(path, (str, os.PathLike)) and \
            columnar_format(path):
        # lazy: loads columnar, pyarrow on first use
        from .columnar import parse_columnar_run  # in-function: columnar loads pyarrow

        return parse_columnar_run(path)
    source = rewindable(path)
    src = source_name(path)
    if isinstance(scanned, NotScanned):
        scanned = scan_compiled(source, "run")
    if scanned is not None:
        tag = scanned["tag"].decode("ascii")
        return Parsed([], src, line_finder(source, src), name=tag or Path(src).name, tag=tag,
                      scan=scanned)
    table = _read_table(source, src, run_spec, lazy_docs=True)
    table.extra.warn(src)
    tag = table.first[5].decode("utf-8", "replace") if len(table.first) > 5 else None
    # the run takes the columns out of the list: each is freed once used
    return Parsed(table.columns, src, line_finder(source, src), name=tag or Path(src).name,
                  tag=tag)


def parse_qrels(path: str | os.PathLike[str] | IO[Any]) -> Parsed:
    """The columns of TREC or BEIR qrels, or of Parquet or Arrow IPC qrels, for
    :meth:`Qrels.from_file <searchbench.data.Qrels.from_file>` to wrap; the input rules
    are :func:`searchbench.data.read_qrels`'s."""
    if isinstance(path, (str, os.PathLike)) and columnar_format(path):
        # lazy: loads columnar, pyarrow on first use
        from .columnar import parse_columnar_qrels  # in-function: columnar loads pyarrow

        return parse_columnar_qrels(path)
    source = rewindable(path)
    src = source_name(path)
    scanned = scan_compiled(source, "qrels")
    if scanned is not None:
        return Parsed([sorted_codes(scanned["query_codes"], scanned["queries"]),
                       sorted_codes(scanned["doc_codes"], scanned["docs"]),
                       np.frombuffer(scanned["values"], dtype=np.int64)],
                      src, line_finder(source, src, scanned["header"]))
    table = _read_table(source, src, _qrels_spec)
    return Parsed(table.columns, src, line_finder(source, src, table.header))


@dataclass(frozen=True)
class _Spec:
    src: str
    columns: list[str]
    types: dict[str, pa.DataType]
    include: list[str]
    n_fields: int
    what: str
    integers: tuple[str, ...] = ()  # read as strings, checked against _INTEGER, then cast

    @property
    def layout(self) -> str:
        if self.what == "run":
            return "qid Q0 docid rank score tag"
        return "qid iter docid grade" if self.n_fields == 4 else "query-id corpus-id score"


@dataclass
class ExtraFields:
    """Run lines with fields after the sixth (ignored, as trec_eval does): the first such
    line and how many there are, for one warning per file."""

    first: int = 0
    count: int = 0

    def add(self, line: int, count: int) -> None:
        self.first = self.first or line
        self.count += count

    def warn(self, src: str) -> None:
        if self.count:
            warnings.warn(f"{src}:{self.first}: {self.count} line(s) have more than six fields; "
                          "the fields after the sixth are ignored, as trec_eval does — if a "
                          "doc id holds a space, fix the file", SearchbenchWarning,
                          stacklevel=user_stacklevel())


@dataclass
class _Table:
    columns: list[Any]
    first: list[bytes]  # fields of the first data line
    header: bool
    extra: ExtraFields


def run_spec(first: list[bytes], src: str, line: int) -> tuple[_Spec, bool]:
    import pyarrow as pa  # lazy: loads pyarrow on first use
    types = {"qid": pa.string(), "docid": pa.string(), "score": pa.float64()}
    return _Spec(src, RUN_COLUMNS, types, ["qid", "docid", "score"], 6, "run"), False


def _qrels_spec(first: list[bytes], src: str, line: int) -> tuple[_Spec, bool]:
    import pyarrow as pa  # lazy: loads pyarrow on first use
    if len(first) not in (3, 4):
        raise DataFormatError(
            f"{src}:{line}: found {len(first)} fields, expected 4 (TREC: qid iter docid "
            "grade) or 3 (BEIR: query-id corpus-id score)")
    columns = TREC_QRELS_COLUMNS if len(first) == 4 else BEIR_QRELS_COLUMNS
    header = len(first) == 3 and NUMBER_LIKE.fullmatch(first[-1]) is None
    types = {"qid": pa.string(), "docid": pa.string(), "grade": pa.string()}
    spec = _Spec(src, columns, types, ["qid", "docid", "grade"], len(first), "qrels",
                 integers=("grade",))
    return spec, header


_INTEGER = r"^-?[0-9]{1,18}$"  # at most 18 digits: always fits int64
DATA_LINE = re.compile(rb"[^\n]+")


def _read_table(
    source: str | os.PathLike[str] | IO[Any], src: str,
    choose: Callable[[list[bytes], str, int], tuple[_Spec, bool]], *, lazy_docs: bool = False,
) -> _Table:
    """Parse block by block; ids are interned per block so their strings never pile up.

    ``choose`` gets the first data line's fields and returns the layout. Returns the
    interned query ids, the doc ids and the values column. With ``lazy_docs`` (runs) the
    doc ids are not interned but kept as one Arrow string array: evaluation never needs a
    run-wide doc vocabulary, and hashing every id into one is most of the reading time.
    """
    from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use
    from ._strings import concat_strings  # lazy: loads _strings, pyarrow on first use
    queries, docs, values, line_base = Interner(), Interner(), [], 0
    doc_chunks: list[pa.Array] = []
    spec: _Spec | None = None
    first: list[bytes] = []
    header = False
    extra = ExtraFields()
    with open_binary(source) as stream:
        for block in iter_blocks(stream):
            refuse_cr_line_endings(block, src)
            data = normalise(block)
            refuse_odd_characters(data, src, line_base)
            if spec is None:
                found = DATA_LINE.search(data)
                if found is not None:
                    first = found.group().split(b" ")
                    line = line_base + data.count(b"\n", 0, found.start()) + 1
                    spec, header = choose(first, src, line)
                    if header:  # blank it: line numbers stay right
                        data = data[:found.start()] + data[found.end():]
            if spec is not None and has_data(data):
                table = parse_block(data, spec, line_base, extra)
                queries.add(table.column("qid"))
                if lazy_docs:
                    doc_chunks.extend(table.column("docid").chunks)
                else:
                    docs.add(table.column("docid"))
                values.append(to_numpy(table.column(spec.include[-1])))
            line_base += block.count(b"\n")
    if not values:
        what = spec.what if spec else ("run" if choose is run_spec else "qrels")
        raise DataFormatError(f"{src}: the file holds no {what} lines; expected at least one")
    doc_ids = Strings(concat_strings(doc_chunks), valid=True) if lazy_docs else \
        Interned(*docs.finish(), valid=True)
    scores = np.concatenate(values)
    values.clear()
    return _Table([Interned(*queries.finish(), valid=True), doc_ids, scores], first, header,
                  extra)


def refuse_cr_line_endings(block: bytes, src: str) -> None:
    """A file whose lines end in a lone CR (classic Mac) reads as one long line: refuse it."""
    if b"\r" in block and b"\n" not in block and _CR_THEN_DATA.search(block):
        raise DataFormatError(f"{src}: lines end in a lone carriage return (\\r, classic Mac "
                              "line endings); expected LF or CRLF line endings")


_CR_THEN_DATA = re.compile(rb"\r[^\s]")

# Whitespace Python's str.split() splits on besides space/tab/CR/LF, NUL, and U+FEFF; the
# hints are single bytes (memchr speed): the control bytes, and the UTF-8 lead bytes of the
# others (looked for only when the block is not ASCII)
_CONTROL_HINTS = (b"\x00", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
_LEAD_HINTS = (b"\xc2", b"\xe1", b"\xe2", b"\xe3", b"\xef")
_ODD = re.compile(rb"[\x00\x0b\x0c\x1c-\x1f]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a"
                  rb"\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80|\xef\xbb\xbf")
_ODD_NAMES = {b"\x00": "a NUL byte", b"\x0b": "a vertical tab (\\v)",
              b"\x0c": "a form feed (\\f)", b"\xc2\xa0": "a no-break space (U+00A0)",
              b"\xef\xbb\xbf": "a byte-order mark (U+FEFF) after the start of the file"}


def refuse_odd_characters(data: bytes, src: str, line_base: int) -> None:
    """Refuse whitespace other than space, tab, CR and LF, NUL bytes and a byte-order mark
    inside the file: each would end up inside an id (or split it, for other readers) and
    silently stop it from matching. One memchr-speed scan per character when none occurs
    (the usual case: an ASCII block costs an ``isascii`` pass and seven ``memchr``); the
    regex runs only when a hint byte occurs."""
    hints = _CONTROL_HINTS if data.isascii() else _CONTROL_HINTS + _LEAD_HINTS
    if not any(hint in data for hint in hints):
        return
    found = _ODD.search(data)
    if found is None:
        return
    line = line_base + data.count(b"\n", 0, found.start()) + 1
    char = found.group()
    what = _ODD_NAMES.get(char) or f"the whitespace character U+{ord(char.decode()):04X}"
    raise DataFormatError(f"{src}:{line}: found {what}; expected fields separated by spaces "
                          "or tabs, and ids without other whitespace, NUL bytes or byte-order "
                          "marks")


def parse_block(data: bytes, spec: _Spec, line_base: int, extra: ExtraFields) -> pa.Table:
    """Parse a normalised block with pyarrow; locate the bad line on failure."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    try:
        table = _read_csv(data, spec)
    except pa.ArrowInvalid as exc:
        if spec.what != "run" or not _LONG_LINE.search(data):
            raise _locate_error(data, spec, line_base, exc) from None
        data = _drop_trailing_fields(data, spec, line_base, extra)
        try:
            table = _read_csv(data, spec)
        except pa.ArrowInvalid as again:
            raise _locate_error(data, spec, line_base, again) from None
    for column in spec.integers:
        table = _integer_column(table, column, data, spec, line_base)
    return table


_LONG_LINE = re.compile(rb"(?m)^(?:[^ \n]+ ){6}[^\n]*")
_RANK = re.compile(rb"[+-]?[0-9]+")
_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|nan)",
                      re.IGNORECASE)


def _drop_trailing_fields(data: bytes, spec: _Spec, line_base: int, extra: ExtraFields) -> bytes:
    """The block with run fields after the sixth removed (trec_eval ignores them), after
    checking each long line: a rank that is not an integer, or a tag that is a number, means
    the columns are shifted (a doc id holding a space) - an error naming the line."""
    found = 0
    for found, match in enumerate(_LONG_LINE.finditer(data), 1):
        fields = match.group().split(b" ")
        rank, tag = fields[3], fields[5]
        shifted = "rank" if _RANK.fullmatch(rank) is None else \
            "tag" if _DECIMAL.fullmatch(tag) is not None else None
        if shifted:
            line = line_base + data.count(b"\n", 0, match.start()) + 1
            value = (rank if shifted == "rank" else tag).decode("utf-8", "replace")
            why = f"rank {value!r} is not an integer" if shifted == "rank" else \
                f"tag {value!r} is a number"
            raise DataFormatError(f"{spec.src}:{line}: found {len(fields)} fields and shifted "
                                  f"columns ({why}: a doc id holding a space?); expected 6 "
                                  f"fields ({spec.layout})")
        if found == 1:
            extra.add(line_base + data.count(b"\n", 0, match.start()) + 1, 0)
    extra.add(0, found)
    return keep_first_fields(data, len(spec.columns))


def _integer_column(table: pa.Table, column: str, data: bytes, spec: _Spec,
                    line_base: int) -> pa.Table:
    """Check a string column against ``-?[0-9]{1,18}`` (vectorised) and cast it to int64."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

    from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use

    values = table.column(column)
    ok = to_numpy(pc.match_substring_regex(values, _INTEGER))
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        line = row_line(data, row, line_base)
        raise DataFormatError(f"{spec.src}:{line}: found {column} {values[row].as_py()!r}, "
                              f"expected an integer such as 0, 1 or 2 (digits with an "
                              f"optional '-'; {spec.layout})")
    index = table.column_names.index(column)
    return table.set_column(index, column, pc.cast(values, pa.int64()))


def row_line(data: bytes, row: int, line_base: int) -> int:
    """The file line of the ``row``-th data line (0-based) of a normalised block."""
    for i, found in enumerate(DATA_LINE.finditer(data)):
        if i == row:
            return line_base + data.count(b"\n", 0, found.start()) + 1
    return line_base + 1


def _read_csv(data: bytes, spec: _Spec) -> pa.Table:
    """Parse with pyarrow from memory Arrow owns: no pyarrow thread ever holds (and drops,
    possibly during interpreter shutdown) a reference to a Python object."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.csv as pacsv  # lazy: loads pyarrow on first use
    return pacsv.read_csv(
        pa.BufferReader(_arrow_copy(data)),
        read_options=pacsv.ReadOptions(column_names=spec.columns, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False,
                                          ignore_empty_lines=True),
        convert_options=pacsv.ConvertOptions(
            column_types=spec.types, include_columns=spec.include, strings_can_be_null=False,
            quoted_strings_can_be_null=False, null_values=[]),
    )


def _arrow_copy(data: bytes) -> pa.Buffer:
    """``data`` copied into a buffer allocated from Arrow's memory pool."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    buffer = pa.allocate_buffer(len(data))
    memoryview(buffer).cast("B")[:] = data
    return buffer


def _locate_error(data: bytes, spec: _Spec, line_base: int, exc: Exception) -> Exception:
    """Slow path, run only on failure: find the first line pyarrow refuses (bisecting the
    block with the same parser, so the rules cannot drift apart) and say what is wrong."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    lines = [(i, raw) for i, raw in enumerate(data.split(b"\n")) if raw]
    lo, hi = 0, len(lines)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fails(lines[lo:mid], spec):
            hi = mid
        else:
            lo = mid
    if not lines:
        return DataFormatError(f"{spec.src}: cannot parse the {spec.what} file: {exc}")
    index, raw = lines[lo]
    where = f"{spec.src}:{line_base + index + 1}"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return DataFormatError(f"{where}: byte {raw[err.start]:#04x} (field "
                               f"{raw.count(b' ', 0, err.start) + 1}) is not valid UTF-8; "
                               "expected UTF-8 text")
    fields = raw.split(b" ")
    if len(fields) != spec.n_fields:
        hint = " (a field holding a space?)" if len(fields) > spec.n_fields else ""
        return DataFormatError(f"{where}: found {len(fields)} fields{hint}, expected "
                               f"{spec.n_fields} ({spec.layout})")
    for column, kind in spec.types.items():
        value = fields[spec.columns.index(column)]
        if pa.types.is_floating(kind) and _fails([(0, value)], spec, {column: kind}):
            return DataFormatError(f"{where}: found {column} {value.decode()!r}, expected a "
                                   f"number such as 1.5 or -2e3 ({spec.layout})")
    return DataFormatError(f"{where}: cannot parse this {spec.what} line ({exc}); expected "
                           f"{spec.layout}")


def _fails(lines: list[tuple[int, bytes]], spec: _Spec,
           single: dict[str, pa.DataType] | None = None) -> bool:
    """Whether pyarrow refuses these lines (or, with ``single``, this one value)."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.csv as pacsv  # lazy: loads pyarrow on first use
    data = b"\n".join(raw for _, raw in lines) + b"\n"
    try:
        if single is None:
            _read_csv(data, spec)
        else:
            column = next(iter(single))
            pacsv.read_csv(pa.BufferReader(_arrow_copy(data)),
                           read_options=pacsv.ReadOptions(column_names=[column]),
                           parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False),
                           convert_options=pacsv.ConvertOptions(column_types=single,
                                                                null_values=[]))
    except pa.ArrowInvalid:
        return True
    return False


def line_finder(source: str | os.PathLike[str] | IO[Any], src: str, skip_header: bool = False
                ) -> Callable[[int], str]:
    """Map a data-row index to ``path:line`` by rescanning the source (error path only)."""

    def describe(row: int) -> str:
        target = row + (1 if skip_header else 0)
        try:
            seen, line_base = 0, 0
            with open_binary(source) as stream:
                for block in iter_blocks(stream):
                    data = normalise(block)
                    n = len(DATA_LINE.findall(data))
                    if target < seen + n:
                        return f"{src}:{row_line(data, target - seen, line_base)}"
                    seen, line_base = seen + n, line_base + block.count(b"\n")
        except (OSError, ValueError):
            pass
        return f"{src}: row {row + 1}"

    return describe


# -- writing -------------------------------------------------------------------------
def write_run(run: Run, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
    """Write ``qid Q0 docid rank score tag`` lines (rank 1-based), atomically."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

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
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

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
    """Write ``header`` and ``lines``, one per line, atomically (gzip if named ``.gz``)."""
    from .._util import atomic_write  # lazy: reading (eval) does not load the writers

    with atomic_write(path, binary=True) as out:
        if header:
            out.write(header.encode() + b"\n")
        if len(lines):
            out.write("\n".join(lines.to_pylist()).encode("utf-8") + b"\n")
