"""Reading a run or qrels file into the model: the public readers of ``searchbench.data``.

The readers below the model (``trec``, ``columnar``) return the columns they found
(:class:`~searchbench.data._columns.Parsed`); :class:`Run` and :class:`Qrels` check and
group them (``from_parsed``). This module sits above both, so the model never imports a
reader that imports the model back.
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Any

from .qrels import Qrels
from .run import Run

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["read_qrels", "read_run", "run_from_table"]


def read_run(
    path: str | os.PathLike[str] | IO[Any], *, name: str | None = None, keep: str | None = None
) -> Run:
    """Read a TREC run: six fields per line, ``qid Q0 docid rank score tag``.

    Input rules, shared with :func:`read_qrels`:

    - fields are separated by spaces or tabs; a line with fewer than six fields is an error
      naming the line. Fields after the sixth are ignored, as trec_eval does (its own test
      run ``results.trunc`` has such lines), with a warning naming the first such line -
      unless the columns are evidently shifted (the fourth field, the rank, is not an
      integer, or the sixth, the tag, is a number: a doc id holding a space), which is an
      error naming the line;
    - no other whitespace (form feed, vertical tab, no-break space U+00A0, other Unicode
      spaces), NUL byte or byte-order mark may appear in a line: an error naming the line
      (trec_eval would keep them in the id, so the id would silently differ);
    - a UTF-8 byte-order mark at the very start of the file is ignored (trec_eval keeps it
      in the first query id); CRLF line ends are accepted, a lone-CR file refused;
    - a line whose first non-blank character is ``#`` is a comment (trec_eval 10);
    - the score is a decimal float (``1``, ``-0.5``, ``+2e3``); a non-finite score is an
      error; the rank column is not read (ranking is by score, then doc id).

    Paths, ``-``/``/dev/stdin``, pipes, FIFOs and file objects are read once; ``.gz`` is
    recognised from the data. A path to a Parquet or Arrow IPC file (recognised by its magic
    bytes) is read as one (schema in ``data/columnar.py``).
    """
    return Run.from_file(path, name=name, keep=keep)


def read_qrels(path: str | os.PathLike[str] | IO[Any], *, keep: str | None = None) -> Qrels:
    """Read TREC qrels ``qid iter docid grade`` or BEIR ``query-id corpus-id score`` (.tsv).

    The layout is chosen from the first data line: 4 fields → TREC, 3 → BEIR (a first line
    whose last field is not a number is a header and skipped); every line must then have
    that many fields (more is an error naming the line: qrels have no trailing fields, and
    a doc id holding a space would shift the grade). A grade is an integer written
    ``-?[0-9]+`` in -128..127 (``+1``, ``1_0``, ``0x1`` and ``1.0`` are refused with their
    line). The other input rules are :func:`read_run`'s; a path to a Parquet or Arrow IPC
    file is read as one (schema in ``data/columnar.py``).
    """
    return Qrels.from_file(path, keep=keep)


def run_from_table(table: pa.Table, src: str, *, name: str | None = None,
                   keep: str | None = None, default_name: str | None = None) -> Run:
    """A run from a table with the run columns (checked as a file's; ``src`` names it in
    messages). The name: ``name``, else the ``tag`` of the first row, else
    ``default_name``."""
    # lazy: loads columnar, pyarrow on first use
    from .columnar import run_columns  # in-function: columnar loads pyarrow

    return Run.from_parsed(run_columns(table, src, default_name=default_name), name=name,
                           keep=keep)
