"""Timing a search until it is stable, shared by both sweeps (:mod:`.sweep` over ANN
indexes, :mod:`.db_sweep` over vector stores): batch QPS repeated until the fastest runs
agree, single-query latencies, the warning naming settings that never settled, and the
machine facts a timing depends on."""

from __future__ import annotations

import os
import platform
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._util import library_versions
from ..errors import SearchbenchWarning, user_stacklevel

__all__ = ["MAX_REPEAT_FACTOR", "STABLE_WITHIN", "machine_info", "timed_batch", "timed_single",
           "warn_unstable"]

STABLE_WITHIN = 0.05  # the fastest batch runs must agree within 5 %
MAX_REPEAT_FACTOR = 4  # at most 4 × --repeats batch runs per setting


def _spread(walls: list[float], m: int) -> float:
    """Relative spread of the ``m`` fastest runs: ``wall_(m) / wall_(1) − 1`` (NaN if m < 2)."""
    ordered = sorted(walls)[:m]
    return ordered[-1] / max(ordered[0], 1e-12) - 1 if len(ordered) >= 2 else float("nan")


def _finite(x: float) -> float | None:
    return x if np.isfinite(x) else None


def timed_batch(run: Callable[[], Any], n: int, threads: int,
                 repeats: int) -> tuple[dict[str, Any], Any]:
    """``run()`` (a search of ``n`` queries) timed until stable: at least ``repeats`` runs,
    then more (up to ``MAX_REPEAT_FACTOR × repeats``) until the fastest ``min(3, repeats)``
    agree within :data:`STABLE_WITHIN`. Kept: the best run, the spread, and
    ``qps_batch_low`` (the slowest of the fastest runs), the lower end of the QPS range
    used to call ties; returns the timing and the answer of the last run."""
    walls, cpus = [], []
    answer: Any = None
    m = min(3, max(1, repeats))
    limit = max(1, repeats) * MAX_REPEAT_FACTOR
    while True:
        c0, t0 = time.process_time(), time.perf_counter()
        answer = run()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        spread = _spread(walls, m)
        if len(walls) >= max(1, repeats) and (not spread > STABLE_WITHIN
                                              or len(walls) >= limit):
            break
    best = int(np.argmin(walls))
    low = sorted(walls)[:m][-1]
    return {"qps_batch": n / walls[best], "qps_batch_median": n / np.median(walls),
            "qps_batch_min": n / max(walls), "qps_batch_max": n / min(walls),
            "qps_batch_low": n / low, "qps_batch_spread": _finite(spread),
            "timing_stable": None if m < 2 else bool(spread <= STABLE_WITHIN),
            "batch_threads": threads, "batch_wall_s": walls[best], "batch_cpu_s": cpus[best],
            "batch_repeats": len(walls)}, answer


def timed_single(search_one: Callable[[int], Any], n_queries: int, warmup: int,
                  max_single: int, rounds: int = 3) -> dict[str, Any]:
    """Single-query latencies of ``search_one(i)`` over ``rounds`` rounds of the same
    queries, after ``warmup`` untimed ones; the fastest round is reported (interference
    only slows a round), with the spread between rounds."""
    for i in range(min(warmup, n_queries)):
        search_one(i)
    n = min(max_single, n_queries)
    timed: list[tuple[float, float, np.ndarray]] = []  # (wall, cpu, latencies) per round
    for _ in range(max(1, rounds)):
        lat = np.empty(n)
        c0, t_all = time.process_time(), time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter()
            search_one(i)
            lat[i] = time.perf_counter() - t0
        timed.append((time.perf_counter() - t_all, time.process_time() - c0, lat))
    walls = [t[0] for t in timed]
    wall, cpu, lat = min(timed, key=lambda t: t[0])  # the first fastest round
    p50, p95, p99 = np.percentile(lat, [50, 95, 99]) * 1e3
    return {"qps_single": n / wall, "single_threads": 1, "single_queries": n,
            "single_warmup": min(warmup, n_queries), "latency_ms": {"p50": float(p50),
            "p95": float(p95), "p99": float(p99)}, "single_wall_s": wall,
            "single_cpu_s": cpu, "single_rounds": len(walls), "qps_single_low": n / max(walls),
            "qps_single_spread": _finite(_spread(walls, len(walls)))}


def warn_unstable(points: list[dict[str, Any]]) -> dict[str, Any]:
    """One warning naming the settings whose batch timings never settled; the summary."""
    unstable = [p for p in points if p.get("timing_stable") is False]
    summary = {"stable_within": STABLE_WITHIN, "unstable_points": len(unstable)}
    if unstable:
        worst = max(p["qps_batch_spread"] for p in unstable)
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        warnings.warn(f"batch timings of {len(unstable)} of {len(points)} settings did not "
                      f"settle within {STABLE_WITHIN:.0%} after up to "
                      f"{max(p['batch_repeats'] for p in unstable)} runs (spread up to "
                      f"{worst:.0%}, load average {load}): QPS differences that small are "
                      "noise; the recommendation treats overlapping QPS ranges as ties. "
                      "Rerun on a quieter machine or with more --repeats",
                      SearchbenchWarning, stacklevel=user_stacklevel())
        summary["worst_spread"] = worst
    return summary


def machine_info(threads: int | None = None) -> dict[str, Any]:
    """CPU, cores, load average and library versions: what a timing depends on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh
                        if ln.startswith("model name")), cpu)
    except OSError:
        pass
    libs = {k: v for k, v in library_versions(("numpy", "faiss-cpu", "hnswlib")).items() if v}
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": threads,
            "load_average": list(os.getloadavg()), "libraries": libs}
