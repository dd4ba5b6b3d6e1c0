"""Evaluation of runs as Ray tasks, partitioned by query (ARCHITECTURE §13).

Each run file is cut into query partitions: the qrels' sorted query ids give ``P - 1``
boundaries, and partition ``i`` holds the run queries ``b[i] ≤ query_id < b[i+1]`` (byte-wise,
the first and last ranges open), so every run query falls in exactly one. A Parquet or
Arrow IPC file is read by each task with that filter (Parquet skips row groups by their
statistics); a TREC text file or an Arrow IPC stream is one partition. Each task returns
:meth:`Evaluator.partial`'s per-query values; :class:`Combiner` assembles them into exactly
the in-memory result (the per-query array, then ``np.mean`` on it).

A task that fails on an I/O error or a lost worker is retried (``retries`` times); a
partition that still fails is reported by name, after every other partition has finished,
with how many finished - no partial result is presented as the run's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from ..data import Run
from ..errors import BackendError, DataFormatError, SearchbenchError
from ..measures import Combiner, EvalResult, Evaluator, PartialResult
from ._cluster import gather, ray_cluster

__all__ = ["RayEvaluated", "RunSample", "evaluate_runs"]

RETRIES = 2


@dataclass
class RunSample:
    """What the command line needs of a run besides its result: name, tag (metadata) and
    some of its doc ids (for the advice when its results are mostly unjudged)."""

    name: str
    metadata: dict[str, Any] = field(default_factory=dict)
    doc_vocab: list[str] = field(default_factory=list)


@dataclass
class RayEvaluated:
    """One run's :class:`EvalResult` and its :class:`RunSample`."""

    result: EvalResult
    sample: RunSample


@dataclass(frozen=True)
class _Partition:
    run: int
    path: str
    lo: str | None
    hi: str | None

    @property
    def label(self) -> str:
        if self.lo is None and self.hi is None:
            return self.path
        lo = repr(self.lo) if self.lo is not None else "the first"
        hi = f"before {self.hi!r}" if self.hi is not None else "the last"
        return f"{self.path} [queries from {lo} to {hi}]"


def evaluate_runs(evaluator: Evaluator, paths: Sequence[str | os.PathLike[str]], *,
                  names: Sequence[str] | None = None, keep: str | None = None,
                  address: str | None = None, partitions: int | None = None,
                  retries: int = RETRIES, quiet: bool | None = None) -> list[RayEvaluated]:
    """Evaluate the run files at ``paths`` with ``evaluator`` on Ray; the results equal
    ``evaluator.evaluate(Run.from_file(path))`` exactly. ``partitions`` per columnar run
    (default: twice the cluster's CPUs); ``address`` as :func:`ray_cluster`."""

    chosen: list[str | None] = list(names) if names is not None else [None] * len(paths)
    with ray_cluster(address) as ray:
        n_parts = partitions or max(2 * int(ray.cluster_resources().get("CPU", 1)), 1)
        bounds = _boundaries(evaluator.qrels.query_ids, n_parts)
        parts = [part for i, p in enumerate(paths) for part in _partitions(i, p, bounds)]
        task = ray.remote(max_retries=retries, retry_exceptions=[OSError])(_evaluate_part)
        ev_ref = ray.put(evaluator)
        pending = {task.remote(ev_ref, part, chosen[part.run], keep): part for part in parts}
        done, failed = gather(ray, pending, "evaluating partitions", "partitions", quiet)
    if failed:
        raise _failure(failed, len(done), len(parts))
    return [_combine(evaluator, [(p, v) for p, v in done.items() if p.run == i])
            for i in range(len(paths))]


def _boundaries(query_ids: np.ndarray, n_parts: int) -> list[str]:
    """Up to ``n_parts - 1`` ascending query ids cutting the (sorted) qrels ids evenly."""
    n = len(query_ids)
    cuts = sorted({round(i * n / n_parts) for i in range(1, n_parts)} - {0, n})
    return [str(query_ids[c]) for c in cuts]


def _partitions(run: int, path: str | os.PathLike[str], bounds: list[str]) -> list[_Partition]:
    # lazy: loads data, pyarrow on first use
    from ..data import ARROW_STREAM_MAGIC, check_run_file, columnar_format

    src = os.fspath(path)
    fmt = columnar_format(src)
    if fmt == "arrow":
        with open(src, "rb") as fh:
            fmt = None if fh.read(4) == ARROW_STREAM_MAGIC else fmt
    if fmt is not None:
        check_run_file(src)  # a column named twice, no rows: refused as when read whole
    if fmt is None or not bounds:
        return [_Partition(run, src, None, None)]
    edges: list[str | None] = [None, *bounds, None]
    return [_Partition(run, src, lo, hi) for lo, hi in pairwise(edges)]


def _evaluate_part(evaluator: Evaluator, part: _Partition, name: str | None, keep: str | None
                   ) -> tuple[PartialResult | None, RunSample]:
    """A Ray task: the partial result of one partition (None when it holds no row)."""
    if part.lo is None and part.hi is None:
        run = Run.from_file(part.path, name=name, keep=keep)
    else:
        run = _read_partition(part, name, keep)
        if run is None:
            return None, RunSample(name or os.path.basename(part.path))
    ids = run.doc_ids_arrow().slice(0, 1000).to_pylist()
    sample = RunSample(run.name, {"tag": run.metadata.get("tag")}, ids)
    return evaluator.partial(run), sample


def _read_partition(part: _Partition, name: str | None, keep: str | None) -> Any:
    """The run rows of one query range of a Parquet or Arrow IPC file."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.dataset as pds  # lazy: loads pandas, pyarrow on first use

    # lazy: loads data, pyarrow on first use
    from ..data import columnar_format, run_from_table, unreadable

    parquet = columnar_format(part.path) == "parquet"
    kind: Any = pds.ParquetFileFormat(default_fragment_scan_options=pds.
                                      ParquetFragmentScanOptions(
                                          page_checksum_verification=True)) \
        if parquet else "ipc"
    key = pds.field("query_id")
    where = None
    if part.lo is not None:
        where = key >= part.lo
    if part.hi is not None:
        where = key < part.hi if where is None else where & (key < part.hi)
    try:
        table = pds.dataset(part.path, format=kind).to_table(filter=where)
        if not parquet:  # Arrow IPC has no checksums: validate what can be
            table.validate(full=True)
    except (pa.ArrowException, OSError) as exc:
        if "checksum" in str(exc).lower():
            raise unreadable(part.label, "Parquet", exc) from None
        raise DataFormatError(f"{part.label}: cannot read it ({exc}); expected a complete "
                              "run file with a string column 'query_id'") from None
    if table.num_rows == 0:
        return None
    tag = None
    if "tag" in table.column_names:  # the run's name is its first row's tag, as read whole
        first = pds.dataset(part.path, format=kind).head(1, columns=["tag"])
        tag = first.column("tag")[0].as_py() if first.num_rows else None
    return run_from_table(table, part.label, name=name or tag, keep=keep,
                          default_name=os.path.basename(part.path))


def _combine(evaluator: Evaluator,
             parts: list[tuple[_Partition, tuple[PartialResult | None, RunSample]]]
             ) -> RayEvaluated:
    parts.sort(key=lambda item: (item[0].lo is not None, item[0].lo or ""))
    samples = [s for _, (p, s) in parts if p is not None]
    sample = samples[0] if samples else parts[0][1][1]
    combiner = Combiner(evaluator, sample.name)
    for part, (partial, _) in parts:
        if partial is not None:
            combiner.add(partial, part.label)
    return RayEvaluated(combiner.result(), sample)


def _failure(failed: list[tuple[_Partition, BaseException]], n_done: int,
             n_parts: int) -> SearchbenchError:
    """One error naming the failed partitions; the cause's type when it is ours."""
    part, cause = failed[0]
    others = f" (and {len(failed) - 1} more partitions)" if len(failed) > 1 else ""
    tail = (f"; {n_done} of {n_parts} partitions finished, no result is shown for a run "
            "with a failed partition")
    if isinstance(cause, SearchbenchError):
        return type(cause)(f"partition {part.label}{others} failed: {cause}{tail}")
    return BackendError(f"partition {part.label}{others} failed after {RETRIES} retries: "
                        f"{type(cause).__name__}: {_last_line(cause)}"
                        f"{tail}")


def _last_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[-1] if lines else "no message"
