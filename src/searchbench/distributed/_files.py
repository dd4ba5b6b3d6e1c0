"""Evaluate run files on qrels, in memory, streamed or on Ray: what ``searchbench eval``
does, as one call (ARCHITECTURE §13)::

    from searchbench.distributed import evaluate_files

    done = evaluate_files("qrels.txt", ["bm25.trec", "big.parquet"], ["nDCG@10"],
                          stream=True)            # or engine="ray", address="auto"
    for res, cov in zip(done.results, done.coverage):
        print(res.run_name, res.mean["nDCG@10"], cov.flag())

Every way gives the same numbers: in memory each run is read whole; ``stream=True`` reads
it query group by query group (memory bounded by the qrels and the largest group);
``engine="ray"`` evaluates it as Ray tasks partitioned by query. Every result then goes
through the one scoring step (:class:`~searchbench.measures.Scorer`): queries marked
``no_answer`` left out (``unanswerable="skip"``), the Judged@k probe taken out and its
warning raised for a run almost entirely unjudged.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ..data import RunsReadAhead
from ..errors import ConfigError
from ..vocab import DEFAULT_MEASURES

__all__ = ["EvaluatedFiles", "evaluate_files"]

ENGINES = ("local", "ray")
PathLike = str | os.PathLike[str]


@dataclass
class EvaluatedFiles:
    """Results of :func:`evaluate_files`, one entry per run file, in order.

    ``runs`` are the runs read (streamed or on Ray: the first batch of each, with its
    name and ``tag``, enough to name a run and advise on ids); ``scorer`` holds the
    evaluator (its parsed measures and qrels)."""

    results: list[Any]
    runs: list[Any]
    coverage: list[Any]
    scored: list[Any]
    scorer: Any

    @property
    def evaluator(self) -> Any:
        return self.scorer.evaluator


def evaluate_files(qrels: Any, runs: Sequence[PathLike], measures: Sequence[str] | None = None,
                   *, names: Sequence[str] | None = None, missing: str = "zero",
                   depth: int | None = None, keep: str | None = None, stream: bool = False,
                   engine: str = "local", address: str | None = None,
                   partitions: int | None = None, no_answer: Collection[str] = (),
                   unanswerable: str = "skip", quiet: bool | None = None) -> EvaluatedFiles:
    """Evaluate the run files ``runs`` on ``qrels`` (a :class:`~searchbench.data.Qrels` or
    a qrels file) with ``measures`` (default: the default measures).

    ``names`` name the runs (default: file names, or paths when two share a name);
    ``missing``/``depth`` go to the evaluator, ``keep`` to the readers; ``stream`` or
    ``engine="ray"`` (with ``address``, ``partitions``) choose how a large run is read
    (see the module docstring; not both); ``no_answer``: ids of queries marked so.

    In memory, the runs are read by a background thread while the qrels are read (see
    :class:`~searchbench.data.RunsReadAhead`, started before numpy is imported)."""
    if engine not in ENGINES:
        raise ConfigError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if stream and engine == "ray":
        raise ConfigError("--stream and --engine ray are two ways to evaluate a large run; "
                          "choose one")
    paths = list(runs)
    named = list(names) if names is not None else [_name(p, paths) for p in paths]
    ahead = RunsReadAhead(paths, named, keep) if not stream and engine == "local" else None
    try:
        return _evaluate(qrels, paths, named, measures, ahead, missing=missing, depth=depth,
                         keep=keep, stream=stream, engine=engine, address=address,
                         partitions=partitions, no_answer=no_answer,
                         unanswerable=unanswerable, quiet=quiet)
    finally:
        if ahead is not None:
            ahead.abandon()


def _evaluate(qrels: Any, paths: list[PathLike], named: list[str],
              measures: Sequence[str] | None, ahead: RunsReadAhead | None, *, missing: str,
              depth: int | None, keep: str | None, stream: bool, engine: str,
              address: str | None, partitions: int | None, no_answer: Collection[str],
              unanswerable: str, quiet: bool | None) -> EvaluatedFiles:
    """:func:`evaluate_files` once its arguments are checked (``ahead`` reads the runs)."""
    from ..data import Qrels  # lazy: loads data, numpy on first use
    from ..measures import Scorer, parse_measures  # lazy: loads measures, numpy on first use

    wanted = [m.name for m in parse_measures(list(measures or DEFAULT_MEASURES))]
    judgments = qrels if isinstance(qrels, Qrels) else Qrels.from_file(qrels, keep=keep)
    if stream:  # only read as Arrow strings then: no Python string per document
        from ..data import compact_qrels  # lazy: loads data, numpy on first use

        judgments = compact_qrels(judgments)
    scorer = Scorer(judgments, wanted, missing=missing, depth=depth, no_answer=no_answer,
                    unanswerable=unanswerable)
    qrels_name = os.fspath(qrels) if isinstance(qrels, (str, os.PathLike)) else "the qrels"
    if engine == "ray":
        loaded, raw = _on_ray(scorer.evaluator, paths, named, keep, address, partitions,
                              quiet)
    elif stream:
        loaded, raw = _streamed(scorer.evaluator, paths, named, keep, quiet)
    else:
        assert ahead is not None
        loaded, raw = _in_memory(scorer, ahead.runs(), paths, qrels_name)
    done = [scorer.finish(res, run) for run, res in zip(loaded, raw, strict=True)]
    return EvaluatedFiles([d.result for d in done], loaded, [d.coverage for d in done],
                          [d.scored for d in done], scorer)


def _name(path: PathLike, paths: Sequence[PathLike]) -> str:
    """A run is named by its file name (by its path when two share a name)."""
    base = os.path.basename(os.fspath(path))
    same = [p for p in paths if os.path.basename(os.fspath(p)) == base]
    return base if len(same) == 1 else os.fspath(path)


def _in_memory(scorer: Any, loaded: list[Any], paths: list[PathLike], qrels_name: str
               ) -> tuple[list[Any], list[Any]]:
    """Each run scored; a run sharing no query with the qrels names both files."""
    from ..measures import NoSharedQueriesError  # lazy: loads measures, numpy on first use

    results = []
    for run, path in zip(loaded, paths, strict=True):
        try:
            results.append(scorer.evaluate(run))
        except NoSharedQueriesError:
            raise NoSharedQueriesError.between(
                f"run file {os.fspath(path)}", f"qrels file {qrels_name}", run.query_ids,
                scorer.qrels.query_ids) from None
    return loaded, results


def _streamed(evaluator: Any, paths: list[PathLike], names: list[str], keep: str | None,
              quiet: bool | None) -> tuple[list[Any], list[Any]]:
    """Each run read query group by query group; its first batch kept as its sample."""
    # lazy: loads measures, numpy on first use
    from ..measures import NoSharedQueriesError, stream_run

    samples, results = [], []
    for path, name in zip(paths, names, strict=True):
        try:
            done = stream_run(evaluator, path, name=name, keep=keep, quiet=quiet)
        except NoSharedQueriesError as exc:
            raise NoSharedQueriesError(f"run file {os.fspath(path)}: {exc}") from None
        if done.sample is not None:
            done.sample.name = done.result.run_name
            done.sample.metadata["tag"] = done.tag
        samples.append(done.sample)
        results.append(done.result)
    return samples, results


def _on_ray(evaluator: Any, paths: list[PathLike], names: list[str], keep: str | None,
            address: str | None, partitions: int | None, quiet: bool | None
            ) -> tuple[list[Any], list[Any]]:
    """The runs as Ray tasks partitioned by query (:func:`.evaluate_runs`)."""
    from ._evaluate import evaluate_runs  # lazy: loads _evaluate, numpy on first use

    found = evaluate_runs(evaluator, paths, names=names, keep=keep, address=address,
                          partitions=partitions, quiet=quiet)
    return [f.sample for f in found], [f.result for f in found]
