"""Parameter sweeps: one build per build-parameter set, search parameters looped over it.

Every point records knn_recall (by id and tie-aware, mean/p5/min), 1-recall@1, batch QPS
(all queries in one call, ``threads`` threads; the best run, since interference only slows
a run, repeated until the fastest three agree within 5 % or 4 × ``repeats`` runs; median,
min, max, the spread and the range used to call ties kept; a warning names settings that
never settled), single-query latency p50/p95/p99 with one thread after ``warmup`` queries
(fastest of up to three rounds, spread kept), build wall and CPU time, the
serialised index size and the RSS growth of the build. CPU time is process time (all
threads): CPU ≫ wall × threads means other load, CPU ≪ wall means waiting. Latencies are
measured from Python around one library call per query.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util import progress as steps
from .._util import write_text
from ..errors import ConfigError, DataFormatError
from ..knn import (
    GroundTruth,
    as_matrix,
    check_finite,
    check_metric,
    check_pair,
    exact_knn,
    normalize_rows,
)
from ._timing import machine_info, timed_batch, timed_single, warn_unstable
from .indexes import AnnIndex, IndexSpec, index_spec, make_index
from .recall import knn_recall, one_recall_at

__all__ = ["SweepResult", "parse_param", "run_sweep"]

FORMAT = "searchbench.ann.sweep/1"
Progress = Callable[[str], None]


@dataclass
class SweepResult:
    """All points of a sweep plus what they were measured on (JSON-ready dicts)."""

    points: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, **self.meta, "points": self.points}

    def save(self, path: str | os.PathLike[str]) -> None:
        write_text(path, json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SweepResult:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DataFormatError(f"{path}: not a readable sweep JSON: {exc}") from exc
        if data.get("format") != FORMAT:
            raise DataFormatError(f"{path}: format {data.get('format')!r}; expected {FORMAT!r} "
                                  "(written by `searchbench ann sweep`)")
        points = data.pop("points")
        data.pop("format")
        return cls(points, data)

    @classmethod
    def merge(cls, results: list[SweepResult]) -> SweepResult:
        """Points of several sweeps of one data set (e.g. several index families)."""
        meta = dict(results[0].meta)
        meta["indexes"] = sorted({p["index"] for r in results for p in r.points})
        return cls([p for r in results for p in r.points], meta)


def parse_param(text: str) -> tuple[str, list[int]]:
    """``"efSearch=16,32,64"`` → ``("efSearch", [16, 32, 64])``."""
    name, sep, values = text.partition("=")
    try:
        parsed = [int(v) for v in values.split(",") if v.strip()]
    except ValueError:
        parsed = []
    if not sep or not name.strip() or not parsed:
        raise ConfigError(f"--param {text!r}: expected NAME=V1,V2,... with integer values, "
                          "e.g. efSearch=16,32,64")
    return name.strip(), parsed


def _grids(s: IndexSpec, params: dict[str, list[int]]
           ) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    s.check(list(params))
    build = {n: params.get(n, [v]) for n, v in s.build.items()}
    search = {n: params.get(n, [v]) for n, v in s.search.items()}
    return _product(build), _product(search)


def _product(values: dict[str, list[int]]) -> list[dict[str, int]]:
    return [dict(zip(values, combo, strict=True)) for combo in itertools.product(*values.values())]


def run_sweep(
    base: np.ndarray,
    queries: np.ndarray,
    index: str,
    params: dict[str, list[int]] | None = None,
    *,
    metric: str = "cosine",
    k: int = 10,
    search_k: int | None = None,
    gt: GroundTruth | None = None,
    threads: int | None = None,
    repeats: int = 3,
    warmup: int = 20,
    max_single: int = 500,
    relevance: Any = None,
    progress: Progress | None = None,
    quiet: bool | None = None,
) -> SweepResult:
    """Sweep ``index`` over the cartesian grid of ``params`` (unset ones take defaults).

    ``progress`` receives a line per build and per setting; a progress bar (``quiet``:
    none; see ``_util.progress``) counts the settings.

    ``search_k`` (K ≥ k) results are requested per query; ``relevance`` (a
    :class:`~searchbench.ann.relevance.RelevanceContext`) adds ΔnDCG@10 / ΔR@100 per point.
    All inputs are checked before the first build.
    """
    metric = check_metric(metric)
    s = index_spec(index)
    build_grid, search_grid = _grids(s, params or {})
    base, queries = as_matrix(base, "corpus vectors"), as_matrix(queries, "query vectors")
    big_k = max(k, search_k or k)
    deep = max(big_k, min(relevance.depth, len(base)) if relevance is not None else 0)
    _check_inputs(s, build_grid, base, queries, metric, k, deep, gt)
    say = progress or (lambda _m: None)
    if metric == "cosine":
        base, queries = normalize_rows(base, "corpus vectors"), normalize_rows(queries, "queries")
    threads = threads or os.cpu_count() or 1
    exact_s, exact = _exact(base, queries, metric, deep, gt)
    say(f"exact search: {len(queries) / exact_s:,.0f} QPS")
    points = []
    with steps(len(build_grid) * len(search_grid), f"sweeping {s.name}", quiet,
               unit="settings") as done:
        for b in build_grid:
            idx, built = _build(s.name, metric, b, base, threads)
            say(f"built {s.name} {b} in {built['build_wall_s']:.2f}s")
            for sp in search_grid:
                pt = _point(idx, sp, base, queries, exact, k, big_k, threads, repeats, warmup,
                            max_single)
                pt.update(built)
                ids = pt.pop("_ids")
                if relevance is not None:
                    pt["relevance"] = _relevance(relevance, idx, queries, exact, ids, deep,
                                                 threads)
                say(f"  {sp}: knn_recall@{k} {pt['knn_recall']['by_id']['mean']:.4f}, "
                    f"{pt['qps_batch']:,.0f} QPS")
                points.append(pt)
                done(1)
    meta = _meta(base, queries, metric, k, big_k, threads, exact, exact_s, s)
    meta["timing"] = warn_unstable(points)
    if relevance is not None:
        meta["relevance"] = dict(relevance.describe(), search_depths=sorted({big_k, deep}))
    return SweepResult(points, meta)


def _check_inputs(s: IndexSpec, build_grid: list[dict[str, int]], base: np.ndarray,
                  queries: np.ndarray, metric: str, k: int, deep: int,
                  gt: GroundTruth | None) -> None:
    """Every check that can fail, before the first build."""
    check_pair(base, queries, deep)
    for b in build_grid:
        make_index(s.name, metric, b).check(*base.shape)
    check_finite(base, "corpus vectors")
    check_finite(queries, "query vectors")
    if gt is not None:
        gt.check_compatible(metric, len(queries), k, base)


def _exact(base: np.ndarray, queries: np.ndarray, metric: str, depth: int,
           gt: GroundTruth | None) -> tuple[float, GroundTruth]:
    """Exact neighbours and the wall time of exact search per query batch; a given ``gt``
    deep enough is reused (then only 200 queries are timed)."""
    if gt is not None and gt.depth >= depth:
        sub = queries[:200]
        t0 = time.perf_counter()
        exact_knn(base, sub, depth, metric, check=False)
        return (time.perf_counter() - t0) * len(queries) / len(sub), gt
    t0 = time.perf_counter()
    fresh = exact_knn(base, queries, depth, metric, check=False)
    return time.perf_counter() - t0, fresh


def _relevance(ctx: Any, idx: AnnIndex, queries: np.ndarray, exact: GroundTruth,
               ids: np.ndarray, deep: int, threads: int) -> dict[str, Any]:
    """Relevance cost; measures deeper than the timed K use an untimed search of depth
    ``deep`` (hnswlib then explores max(efSearch, deep) candidates; faiss HNSW keeps
    efSearch and fills ``deep`` results from the nodes it visited)."""
    runs = {ids.shape[1]: ids}
    if deep > ids.shape[1]:
        runs[deep] = idx.search(queries, deep, threads)[0]
    return ctx.cost(exact, runs)


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def _build(name: str, metric: str, build: dict[str, int], base: np.ndarray,
           threads: int) -> tuple[AnnIndex, dict[str, Any]]:
    idx = make_index(name, metric, build)
    rss0, c0, t0 = _rss(), time.process_time(), time.perf_counter()
    idx.build(base, threads)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return idx, {"build": dict(idx.build_params), "build_wall_s": wall, "build_cpu_s": cpu,
                 "build_threads": threads, "index_bytes": idx.memory_bytes(),
                 "rss_growth_bytes": _rss() - rss0}


def _point(idx: AnnIndex, sp: dict[str, int], base: np.ndarray, queries: np.ndarray,
           exact: GroundTruth, k: int, big_k: int, threads: int, repeats: int, warmup: int,
           max_single: int) -> dict[str, Any]:
    idx.set_search(sp)
    batch, ids = _time_batch(idx, queries, big_k, threads, repeats)
    single = _time_single(idx, queries, big_k, warmup, max_single, min(3, max(1, repeats)))
    rec = knn_recall(exact, ids, k, base=base, queries=queries)
    pt: dict[str, Any] = {"index": idx.spec.name, "library": idx.spec.library,
                          "search": dict(sp), "k": k, "K": big_k,
                          "knn_recall": rec.summary(),
                          "one_recall_at_1": one_recall_at(exact, ids, 1)}
    if big_k > k:
        pt["knn_recall_at_K"] = knn_recall(exact, ids, big_k, base=base,
                                           queries=queries).summary()
    pt.update(batch)
    pt.update(single)
    pt["_ids"] = ids
    return pt


def _time_batch(idx: AnnIndex, q: np.ndarray, k: int, threads: int,
                repeats: int) -> tuple[dict[str, Any], np.ndarray]:
    """:func:`timed_batch` of ``idx.search`` over all of ``q``; the ids of the last run."""
    timing, (ids, _) = timed_batch(lambda: idx.search(q, k, threads), len(q), threads,
                                    repeats)
    return timing, ids


def _time_single(idx: AnnIndex, q: np.ndarray, k: int, warmup: int, max_single: int,
                 rounds: int = 3) -> dict[str, Any]:
    """:func:`timed_single` of ``idx.search`` with one thread, one query per call."""
    return timed_single(lambda i: idx.search(q[i:i + 1], k, 1), len(q), warmup,
                         max_single, rounds)


def _meta(base: np.ndarray, queries: np.ndarray, metric: str, k: int, big_k: int,
          threads: int, exact: GroundTruth, exact_s: float, s: IndexSpec) -> dict[str, Any]:
    return {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "metric": metric, "k": k, "K": big_k, "indexes": [s.name],
        "n_base": int(base.shape[0]), "n_queries": int(queries.shape[0]),
        "dim": int(base.shape[1]),
        "exact": {"qps_batch": len(queries) / exact_s, "wall_s": exact_s,
                  "library": exact.provenance.get("library", "searchbench exact_knn")},
        "ground_truth": {k_: v for k_, v in exact.provenance.items()},
        "machine": machine_info(threads),
    }
