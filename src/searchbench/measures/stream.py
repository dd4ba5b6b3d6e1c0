"""Streaming evaluation: a run file evaluated query group by query group (ARCHITECTURE §13).

The run is read by :func:`searchbench.data.stream.iter_run_batches` in batches of many
complete query groups; each batch goes through the same vectorised kernels as the whole
run (:meth:`Evaluator.partial`) and the parts are assembled by :class:`Combiner`, so the
per-query values, the means, the tie-breaking and the missing/extra policies are exactly
those of :func:`~searchbench.measures.evaluate` on the run read whole. Peak memory: the
qrels, one batch (or the largest query group), one read block and the ids of the queries
seen.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from .._util import progress
from ..data import BATCH_ENTRIES, Qrels, Run, compact_qrels, iter_run_batches, release_free_memory
from .evaluator import Combiner, EvalResult, Evaluator
from .spec import Measure

__all__ = ["StreamedRun", "evaluate_stream", "stream_run"]


@dataclass
class StreamedRun:
    """A run evaluated by streaming: its result, its TREC tag (None for a columnar file
    without ``tag``) and its first batch (a sample of its ids, for coverage advice)."""

    result: EvalResult
    tag: str | None
    sample: Run | None


def stream_run(evaluator: Evaluator, path: str | os.PathLike[str], *, name: str | None = None,
               keep: str | None = None, quiet: bool | None = None,
               batch_entries: int = BATCH_ENTRIES, read_size: int | None = None
               ) -> StreamedRun:
    """Evaluate the run file at ``path`` with ``evaluator``, batch by batch, with a
    progress bar (bytes of the file) on a terminal (``read_size``: see
    :func:`~searchbench.data.stream.iter_run_batches`)."""
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    release_free_memory()  # what reading the qrels and building the evaluator left behind
    with progress(size, f"evaluating {os.fspath(path)}", quiet, unit="bytes") as advance:
        batches = iter_run_batches(path, name=name, keep=keep, batch_entries=batch_entries,
                                   on_bytes=advance, read_size=read_size)
        combiner: Combiner | None = None
        sample: Run | None = None
        for run in batches:
            if combiner is None:
                combiner, sample = Combiner(evaluator, batches.name), run
            combiner.add(evaluator.partial(run), os.fspath(path))
            del run  # the batch's arrays go before the next is read,
            release_free_memory()  # and the memory they held back to the system
    assert combiner is not None  # an empty file is refused by the reader
    return StreamedRun(combiner.result(), batches.tag, sample)


def evaluate_stream(qrels: Qrels | str | os.PathLike[str], run_path: str | os.PathLike[str],
                    measures: str | Measure | Sequence[str | Measure], *,
                    missing: str = "zero", depth: int | None = None, keep: str | None = None,
                    name: str | None = None, quiet: bool | None = None,
                    batch_entries: int = BATCH_ENTRIES) -> EvalResult:
    """:func:`~searchbench.measures.evaluate` of the run file at ``run_path`` without
    reading it whole: the same result, in memory bounded by the qrels and the largest query
    group (plus one batch of about ``batch_entries`` entries).

    The run (TREC text, ``.gz``, Parquet or Arrow IPC) must list each query's entries
    together (any query order); a query id reappearing after another query began is a
    :class:`~searchbench.errors.DataFormatError` naming the line and how to sort the file.
    ``qrels`` is a :class:`Qrels` or a path; ``keep`` applies to both files.
    """
    if not isinstance(qrels, Qrels):
        qrels = compact_qrels(Qrels.from_file(qrels, keep=keep))
    evaluator = Evaluator(qrels, measures, missing=missing, depth=depth)
    return stream_run(evaluator, run_path, name=name, keep=keep, quiet=quiet,
                      batch_entries=batch_entries).result
