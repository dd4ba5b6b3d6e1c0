"""Reading a run query group by query group, in bounded memory (ARCHITECTURE §13).

:func:`iter_run_batches` reads a run file - TREC text (plain or ``.gz``), Parquet (row
group by row group) or Arrow IPC (record batch by record batch) - and yields :class:`Run`
objects that each hold *complete* query groups, many at a time (about ``batch_entries``
entries). Memory is bounded by one text block or record batch, the largest query group
and one batch, plus the ids of the queries seen so far (to refuse a query that comes
back; 16 bytes each). Every batch is built by the same constructor as the whole file
(``Run._consume``), so within each query the ranking (score descending, then doc id
descending), the duplicate checks and ``keep`` act exactly as for the file read whole.

A run whose query ids are not grouped - a query id reappearing after another query began
- cannot be streamed: it is refused with one error naming the file, the line (or row)
and how to sort it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataFormatError
from ._columns import Interned, Strings
from ._text import has_data, iter_blocks, normalise, open_binary
from .ids import Interner, as_arrow_strings
from .qrels import Qrels
from .run import Run
from .trec import (
    DATA_LINE,
    ExtraFields,
    line_finder,
    parse_block,
    refuse_cr_line_endings,
    refuse_odd_characters,
    row_line,
    run_spec,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["BATCH_ENTRIES", "RunBatches", "compact_qrels", "iter_run_batches",
           "release_free_memory"]

BATCH_ENTRIES = 1 << 20  # entries per yielded batch (whole query groups, so at least one)
TEXT_BLOCK = 1 << 23  # bytes of text parsed at a time
COLUMNAR_ROWS = 1 << 20  # rows per Parquet/Arrow record batch read

Locate = Callable[[int], str]  # global data-row index -> "path:line" (or "path: row N")


class RunBatches:
    """The batches of one run file: iterate once; ``name`` and ``tag`` as
    :func:`~searchbench.data.read_run` gives them (known after the first line)."""

    def __init__(self, path: str | os.PathLike[str], *, name: str | None, keep: str | None,
                 batch_entries: int, on_bytes: Callable[[int], None] | None,
                 read_size: int | None = None) -> None:
        self.path = path
        self.src = os.fspath(path)
        self.keep = keep
        self.batch_entries = max(int(batch_entries), 1)
        self.on_bytes = on_bytes or (lambda n: None)
        self.tag: str | None = None
        self._name = name
        self.entries = 0  # entries read so far
        self.read_size = read_size  # text bytes or columnar rows read at a time

    @property
    def name(self) -> str:
        return self._name or self.tag or Path(self.src).name

    def __iter__(self) -> Iterator[Run]:
        from .columnar import columnar_format  # lazy: loads columnar, pyarrow on first use

        fmt = columnar_format(self.path)
        pieces = _columnar_pieces(self) if fmt else _text_pieces(self)
        yield from _Grouper(self, valid_ids=not fmt).runs(pieces)


def iter_run_batches(path: str | os.PathLike[str], *, name: str | None = None,
                     keep: str | None = None, batch_entries: int = BATCH_ENTRIES,
                     on_bytes: Callable[[int], None] | None = None,
                     read_size: int | None = None) -> RunBatches:
    """The run at ``path`` as batches of complete query groups (see the module docstring).

    ``on_bytes(n)`` is called as the file is read (``n`` bytes more of the file on disk),
    for a progress bar. Errors are those of :func:`~searchbench.data.read_run`, with the
    line (text) or row (Parquet, Arrow) of the whole file, plus the refusal of a query
    that reappears. ``read_size``: bytes of text (default 8 MiB) or rows of a columnar
    file (default 2²⁰) read at a time.
    """
    return RunBatches(path, name=name, keep=keep, batch_entries=batch_entries,
                      on_bytes=on_bytes, read_size=read_size)


# -- pieces: (query ids, doc ids, scores, locate-in-piece) from each format ----------------
Piece = tuple["pa.Array", "pa.Array", np.ndarray, Callable[[int], str]]


def _text_pieces(batches: RunBatches) -> Iterator[Piece]:
    """Parsed blocks of a TREC run (the checks of ``read_run``, block by block)."""
    from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use

    src = batches.src
    spec = None
    extra = ExtraFields()
    line_base, seen_data = 0, False
    regular = os.path.isfile(batches.path)  # else -, /dev/stdin, a pipe: read as it comes
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(open(batches.path, "rb")) if regular else None
        stream = stack.enter_context(open_binary(raw if raw is not None else batches.path))
        done = 0
        for block in iter_blocks(stream, batches.read_size or TEXT_BLOCK):
            refuse_cr_line_endings(block, src)
            data = normalise(block)
            refuse_odd_characters(data, src, line_base)
            if spec is None:
                found = DATA_LINE.search(data)
                if found is not None:
                    first = found.group().split(b" ")
                    spec, _ = run_spec(first, src, line_base + 1)
                    batches.tag = first[5].decode("utf-8", "replace") if len(first) > 5 \
                        else None
            if spec is not None and has_data(data):
                table = parse_block(data, spec, line_base, extra)
                seen_data = True
                base = line_base

                def locate(row: int, data: bytes = data, base: int = base) -> str:
                    return f"{src}:{row_line(data, row, base)}"

                yield (table.column("qid").combine_chunks(),
                       table.column("docid").combine_chunks(),
                       to_numpy(table.column("score")), locate)
            line_base += block.count(b"\n")
            position = raw.tell() if raw is not None else done + len(block)
            batches.on_bytes(position - done)
            done = position
    if not seen_data:
        raise DataFormatError(f"{src}: the file holds no run lines; expected at least one")
    extra.warn(src)


def _columnar_pieces(batches: RunBatches) -> Iterator[Piece]:
    """Record batches of a Parquet or Arrow IPC run, checked as ``parse_columnar_run``."""
    import pyarrow as pa  # lazy: loads pyarrow on first use

    from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use

    # lazy: loads columnar, pyarrow on first use
    from .columnar import RUN_SCHEMA, no_rows, table_column

    src = batches.src
    row_base, first = 0, True
    for batch, n_bytes in _record_batches(batches.path, batches.read_size or COLUMNAR_ROWS):
        table = pa.Table.from_batches([batch])
        try:
            query_ids = table_column(table, "query_id", src, RUN_SCHEMA, kinds=("string",))
            doc_ids = table_column(table, "doc_id", src, RUN_SCHEMA, kinds=("string",))
            scores = table_column(table, "score", src, RUN_SCHEMA, kinds=("number",))
            table_column(table, "rank", src, RUN_SCHEMA, kinds=("integer",), optional=True)
            tags = table_column(table, "tag", src, RUN_SCHEMA, kinds=("string",), optional=True)
        except DataFormatError as exc:  # rows are numbered within the batch: renumber
            raise _renumbered(exc, src, row_base) from None
        assert query_ids is not None and doc_ids is not None and scores is not None
        if first and len(table):
            batches.tag = tags[0].as_py() if tags is not None else None
            first = False
        base = row_base

        def locate(row: int, base: int = base) -> str:
            return f"{src}: row {base + row + 1}"

        yield (query_ids.combine_chunks(), doc_ids.combine_chunks(),
               to_numpy(scores.cast(pa.float64()).combine_chunks()), locate)
        row_base += len(table)
        batches.on_bytes(n_bytes)
    if row_base == 0:
        raise DataFormatError(no_rows(src))


def _record_batches(path: str | os.PathLike[str], rows: int
                    ) -> Iterator[tuple[pa.RecordBatch, int]]:
    """``(record batch, bytes of the file it stands for)``: Parquet row group by row
    group (``rows`` at a time), Arrow IPC batch by batch; damage is one error."""
    import pyarrow as pa  # lazy: loads pyarrow on first use

    from .columnar import (  # lazy: loads columnar, pyarrow on first use
        ARROW_STREAM_MAGIC,
        check_column_names,
        columnar_format,
        parquet_file,
        unreadable,
    )

    src = os.fspath(path)
    fmt = columnar_format(path)
    what = "Parquet" if fmt == "parquet" else "Arrow IPC"
    size = os.path.getsize(src)
    try:
        if fmt == "parquet":
            with parquet_file(src) as pf:
                check_column_names(pf.schema_arrow, src)
                total = max(pf.metadata.num_rows, 1)
                for batch in pf.iter_batches(batch_size=rows):
                    yield batch, size * len(batch) // total
            return
        with pa.OSFile(src, "rb") as fh:
            is_stream = fh.read(4) == ARROW_STREAM_MAGIC
            fh.seek(0)
            if is_stream:
                reader = pa.ipc.open_stream(fh)
                check_column_names(reader.schema, src)
                for batch in reader:
                    batch.validate(full=True)
                    yield batch, batch.nbytes
                return
            ipc = pa.ipc.open_file(fh)
            check_column_names(ipc.schema, src)
            for i in range(ipc.num_record_batches):
                batch = ipc.get_batch(i)
                batch.validate(full=True)
                yield batch, size // max(ipc.num_record_batches, 1)
    except DataFormatError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise unreadable(src, what, exc) from None


def _renumbered(exc: DataFormatError, src: str, row_base: int) -> DataFormatError:
    """A column error of one record batch with the row number of the whole file."""
    text = str(exc)
    found = re.match(re.escape(src) + r": row (\d+):", text)
    if found is None:
        return exc
    row = int(found.group(1)) + row_base
    return DataFormatError(f"{src}: row {row}:" + text[found.end():])


# -- grouping ----------------------------------------------------------------------------
class _Grouper:
    """Cuts pieces into batches of complete query groups; refuses a query seen before."""

    def __init__(self, batches: RunBatches, valid_ids: bool) -> None:
        self.batches = batches
        self.valid_ids = valid_ids  # text ids were split on whitespace: known valid
        self.seen = _SeenIds()  # query ids of finished groups
        self.pending: list[tuple[pa.Array, pa.Array, np.ndarray]] = []
        self.n_pending = 0
        self.row0 = 0  # global data row of the first pending entry

    def runs(self, pieces: Iterator[Piece]) -> Iterator[Run]:
        import pyarrow as pa  # lazy: loads pyarrow on first use
        carry: tuple[pa.Array, pa.Array, np.ndarray] | None = None  # the last, open group
        for qids, docs, scores, locate in pieces:
            if len(qids) == 0:
                continue
            held = 0
            if carry is not None:  # the open group may go on in this piece
                held = len(carry[0])
                qids, docs, scores = _concat(carry, (qids, docs, scores))
            starts = _group_starts(qids)
            ids = qids.take(pa.array(starts)).to_pylist()
            self._refuse_repeats(ids, starts, held, locate)
            last = int(starts[-1])
            if last:
                self._add(qids.slice(0, last), docs.slice(0, last), scores[:last])
                self.seen.update(ids[:-1])
            carry = (qids.slice(last), docs.slice(last), scores[last:])
            if self.n_pending >= self.batches.batch_entries:
                yield self._flush()
        if carry is not None:
            self._add(*carry)
        if self.n_pending:
            yield self._flush()

    def _refuse_repeats(self, ids: list[str], starts: np.ndarray, held: int,
                        locate: Callable[[int], str]) -> None:
        """A group id already finished or twice in this piece: not grouped by query.
        ``held`` rows at the start came from the previous piece (the open group)."""
        known = self.seen.contains(ids)
        if len(set(ids)) == len(ids) and not known.any():
            return
        here: set[str] = set()
        for qid, start, was in zip(ids, starts.tolist(), known.tolist(), strict=True):
            if was or qid in here:
                raise _unsorted(self.batches.src, locate(start - held), qid, not self.valid_ids)
            here.add(qid)

    def _add(self, qids: pa.Array, docs: pa.Array, scores: np.ndarray) -> None:
        self.pending.append((qids, docs, scores))
        self.n_pending += len(qids)

    def _flush(self) -> Run:
        """One run of the pending complete groups (built as ``read_run`` builds a file's)."""
        from ._strings import concat_strings  # lazy: loads _strings, pyarrow on first use
        parts, self.pending = self.pending, []
        n, self.n_pending = self.n_pending, 0
        queries = Interner()
        doc_chunks, score_parts = [], []
        for qids, docs, scores in parts:
            queries.add(qids)
            doc_chunks.append(docs)
            score_parts.append(scores)
        del parts
        row0 = self.row0
        self.row0 += n
        self.batches.entries += n
        valid = self.valid_ids
        columns: list[Any] = [Interned(*queries.finish(), valid=valid),
                              Strings(concat_strings(doc_chunks), valid=valid),
                              np.concatenate(score_parts)]
        batches = self.batches
        return Run._consume(columns, name=batches.name, keep=batches.keep, source=batches.src,
                            describe_line=_row_locator(batches, row0))


class _SeenIds:
    """A set of query ids held as sorted 128-bit BLAKE2b digests (16 bytes per id, against
    ~90 for a Python set of short strings); two ids share a digest with probability
    ~n²/2¹²⁹, nil for any run. New digests wait in a small list and are merged into the
    sorted array once they are as many as it holds, so merging costs O(n log n) in all."""

    def __init__(self) -> None:
        self.sorted = np.zeros(0, dtype="S16")
        self.recent: list[np.ndarray] = []
        self.n_recent = 0

    @staticmethod
    def _digests(ids: list[str]) -> np.ndarray:
        from hashlib import blake2b  # lazy: keeps hashlib out of eval

        return np.array([blake2b(i.encode("utf-8"), digest_size=16).digest() for i in ids],
                        dtype="S16")

    def contains(self, ids: list[str]) -> np.ndarray:
        """Whether each id was added before."""
        keys = self._digests(ids)
        found = np.zeros(len(keys), dtype=bool)
        for pool in (self.sorted, *self.recent):
            if len(pool):
                at = np.minimum(np.searchsorted(pool, keys), len(pool) - 1)
                found |= pool[at] == keys
        return found

    def update(self, ids: list[str]) -> None:
        if not ids:
            return
        self.recent.append(np.sort(self._digests(ids)))
        self.n_recent += len(ids)
        if self.n_recent >= max(len(self.sorted), 1 << 12):
            self.sorted = np.sort(np.concatenate([self.sorted, *self.recent]))
            self.recent, self.n_recent = [], 0


def _group_starts(qids: pa.Array) -> np.ndarray:
    """Rows where a new run of equal query ids starts (row 0 included)."""
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

    from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use
    if len(qids) < 2:
        return np.zeros(1, dtype=np.int64)
    change = to_numpy(pc.not_equal(qids.slice(1), qids.slice(0, len(qids) - 1)))
    return np.concatenate(([0], np.flatnonzero(change) + 1)).astype(np.int64)


def _concat(a: tuple[pa.Array, pa.Array, np.ndarray], b: tuple[pa.Array, pa.Array, np.ndarray]
            ) -> tuple[pa.Array, pa.Array, np.ndarray]:
    import pyarrow as pa  # lazy: loads pyarrow on first use
    return (pa.concat_arrays([a[0], b[0].cast(a[0].type)]),
            pa.concat_arrays([a[1], b[1].cast(a[1].type)]), np.concatenate([a[2], b[2]]))


def _row_locator(batches: RunBatches, row0: int) -> Locate:
    """``describe_line`` for entries of a batch: their line in the whole file (rescanned,
    error path only) for a regular text file, else their 1-based row."""
    src = batches.src

    def describe(i: int) -> str:
        from .columnar import columnar_format  # lazy: loads columnar, pyarrow on first use

        if os.path.isfile(src) and not columnar_format(src):
            return line_finder(src, src)(row0 + i)
        return f"{src}: row {row0 + i + 1}"

    return describe


def _unsorted(src: str, where: str, qid: str, columnar: bool) -> DataFormatError:
    """The refusal of a run whose query groups are not contiguous, with how to sort it."""
    gz = src.endswith(".gz")
    if columnar:
        how = (f"rewrite it grouped by query (searchbench convert {src} -o sorted.parquet, "
               "which reads it whole once)")
    elif gz:
        how = (f"sort it by query id first: zcat {src} | LC_ALL=C sort -s -k1,1 | gzip > "
               "sorted.trec.gz")
    else:
        how = f"sort it by query id first: LC_ALL=C sort -s -k1,1 {src} > sorted.trec"
    return DataFormatError(
        f"{where}: query {qid!r} appears again after other queries began; streaming "
        f"evaluation (--stream) needs each query's lines together: {how}, or evaluate "
        "without --stream")


def compact_qrels(qrels: Qrels) -> Qrels:
    """The same judgments with the document vocabulary as one Arrow string array instead of
    a numpy array of Python strings (about 60 bytes less per distinct document: 0.2 GiB for
    the 2.7 M documents of 10⁶ queries' qrels). The other arrays are shared, not copied.

    For streaming evaluation only, which reads ``doc_vocab`` as Arrow strings (the
    :class:`~searchbench.measures.Evaluator` converts it so anyway) and by its length;
    views that index ``doc_vocab`` with numpy (``to_dict``, ``to_frame``) need the original.
    """
    import pyarrow as pa  # lazy: loads pyarrow on first use

    compact = object.__new__(Qrels)
    for name in Qrels.__slots__:
        setattr(compact, name, getattr(qrels, name))
    if not isinstance(qrels.doc_vocab, pa.Array):
        compact.doc_vocab = as_arrow_strings(qrels.doc_vocab).combine_chunks()
    return compact


def release_free_memory() -> None:
    """Hand memory freed by Arrow's pool and by C ``malloc`` back to the system.

    Both allocators keep freed blocks for reuse; after reading the qrels (hundreds of MiB
    of parsing buffers) and between batches of a streamed run that retained memory would
    otherwise count in the process's peak. Only memory already freed is released; results
    are unaffected. ``malloc_trim`` exists in glibc only; elsewhere only Arrow's part runs.
    """
    import pyarrow as pa  # lazy: loads pyarrow on first use

    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).malloc_trim(0)  # the C library the interpreter is linked to
