"""Fisher randomisation test: searchbench vs ranx on the same per-query scores.

Data: 10,000 queries × 3 systems × 3 measures of synthetic per-query scores (seeded);
system ``a`` is the baseline, ``b`` and ``c`` differ from it by small mean shifts chosen so
the p-values spread over 0.001 … 0.9. Both libraries run 10,000 permutations on the same
6 (candidate, measure) pairs against the baseline:

- searchbench: ``searchbench.stats.randomization`` on the 10,000 × 6 difference matrix
  (one call: sign-flip bits × differences as a chunked matrix product), and the whole
  ``compare_results`` (tests + Holm + effect sizes + power) on the same data;
- ranx: ``ranx.statistical_tests.fisher_randomization_test`` (numba, ``parallel=True``)
  called once per pair, as ``ranx.compare`` does. Its first call compiles or loads the
  numba cache; it is timed separately ("first call") from the warm repeats.

Machine references: the float64 matrix product of the same size as searchbench's work
(10,000 × 10,000 @ 10,000 × 6, same chunks) timed alone, so what is left above it is
drawing the signs; and the machine's float64 GEMM peak (a 2000³ product), against which
the achieved GFLOP/s of the sign-flip products is reported.

    python benchmarks/stats_vs_ranx.py [--queries 10000] [--permutations 10000] [--repeat 3]

Printed: machine, library versions, p-values side by side (|Δp| should be within Monte
Carlo error, ≈ sqrt(p(1−p)/B) ≤ 0.005 for B = 10,000), times and ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from importlib import metadata

import numpy as np

SYSTEMS = ["a", "b", "c"]
MEASURES = ["nDCG@10", "RR@10", "R@100"]
SHIFTS = {"b": [0.004, 0.0, 0.012], "c": [-0.006, 0.002, 0.008]}


def make_scores(n: int, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """Baseline per-query scores Beta(2, 3); candidate = baseline + shift + N(0, 0.25²),
    not clipped (clipping would bias the shifts; the tests only see the differences)."""
    rng = np.random.default_rng(seed)
    base = {m: rng.beta(2, 3, size=n) for m in MEASURES}
    scores = {"a": base}
    for s in ("b", "c"):
        scores[s] = {m: base[m] + shift + rng.normal(0, 0.25, size=n)
                     for m, shift in zip(MEASURES, SHIFTS[s], strict=True)}
    return scores


REPEATS_AGREE: dict[str, bool] = {}


def timed(fn, repeat: int, label: str = "") -> tuple[list[float], object]:
    """Wall times of ``repeat`` calls and the last output; records in ``REPEATS_AGREE``
    whether every repeat (same seed) returned the same values."""
    walls, outs = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        outs.append(fn())
        walls.append(time.perf_counter() - t0)
    if label:
        REPEATS_AGREE[label] = all(np.array_equal(np.asarray(o, dtype=float),
                                                  np.asarray(outs[0], dtype=float))
                                   for o in outs)
    return walls, outs[-1]


def run_searchbench(scores, pairs, n_perm: int, repeat: int):
    from searchbench.stats import randomization

    diffs = np.column_stack([scores[s][m] - scores["a"][m] for s, m in pairs])
    return timed(lambda: randomization(diffs, n_permutations=n_perm, seed=0), repeat,
                 "searchbench")


def run_compare(scores, n_perm: int, repeat: int):
    import searchbench as sb
    from searchbench.comparison import compare_results

    qids = np.array([f"q{i}" for i in range(len(scores["a"][MEASURES[0]]))])
    results = {s: sb.EvalResult(s, MEASURES, qids, scores[s],
                                {m: float(v.mean()) for m, v in scores[s].items()})
               for s in SYSTEMS}
    return timed(lambda: compare_results(results, baseline="a", n_permutations=n_perm), repeat)


def run_ranx(scores, pairs, n_perm: int, repeat: int):
    from ranx.statistical_tests import fisher_randomization_test as frt

    def all_pairs():
        return [frt(scores["a"][m], scores[s][m], n_perm, 0.05, 42)[0] for s, m in pairs]

    t0 = time.perf_counter()
    frt(scores["a"][MEASURES[0]][:100], scores["b"][MEASURES[0]][:100], 10, 0.05, 42)
    first = time.perf_counter() - t0
    walls, out = timed(all_pairs, repeat, "ranx")
    return first, walls, out


def machine_limit(n: int, n_perm: int, n_pairs: int, repeat: int) -> float:
    """Best time of the bare float64 product (n_perm × n) @ (n × n_pairs), in chunks of
    the same shape searchbench uses, with the operands drawn beforehand."""
    from searchbench.stats.paired import _chunk_rows

    rows = _chunk_rows(n)
    bits = np.random.default_rng(1).integers(0, 2, size=(rows, n)).astype(np.float64)
    d = np.random.default_rng(2).normal(size=(n, n_pairs))
    chunks = -(-n_perm // rows)

    def product():
        for _ in range(chunks):
            bits @ d

    return min(timed(product, repeat)[0])


def dgemm_peak(repeat: int) -> float:
    """Best float64 GEMM rate of this machine (GFLOP/s): a 2000³ matrix product."""
    a = np.random.default_rng(3).normal(size=(2000, 2000))
    best = min(timed(lambda: a @ a, repeat)[0])
    return 2 * 2000**3 / best / 1e9


def versions() -> str:
    out = []
    for pkg in ("searchbench", "numpy", "scipy", "ranx", "numba"):
        try:
            out.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            out.append(f"{pkg} (not installed)")
    return ", ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--permutations", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=2,
                    help="ranx repeats (searchbench's: at least 7)")
    ap.add_argument("--no-ranx", action="store_true")
    args = ap.parse_args()
    n, b = args.queries, args.permutations
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.processor() or '?'}"
          f"; Python {platform.python_version()}; {versions()}")
    print(f"data: {n} queries x {len(SYSTEMS)} systems x {len(MEASURES)} measures; "
          f"{b} permutations; baseline a; 6 (candidate, measure) pairs\n")
    scores = make_scores(n)
    import scipy.stats  # noqa: F401  (imported once, outside the timings)
    pairs = [(s, m) for s in ("b", "c") for m in MEASURES]

    quick = max(args.repeat, 7)  # searchbench's repeats are cheap: more of them, best-of
    sb_walls, sb_p = run_searchbench(scores, pairs, b, quick)
    cmp_walls, _ = run_compare(scores, b, quick)
    limit = machine_limit(n, b, len(pairs), quick)
    peak = dgemm_peak(quick)
    ranx_first, ranx_walls, ranx_p = (None, None, None)
    if not args.no_ranx:
        ranx_first, ranx_walls, ranx_p = run_ranx(scores, pairs, b, args.repeat)

    print(f"{'pair':<14}{'searchbench p':>15}{'ranx p':>10}{'|diff|':>9}{'MC sd':>8}")
    for k, (s, m) in enumerate(pairs):
        p = float(sb_p[k])
        sd = np.sqrt(p * (1 - p) / b)
        rp = f"{ranx_p[k]:10.4f}{abs(ranx_p[k] - p):9.4f}" if ranx_p else ""
        print(f"{s + ' ' + m:<14}{p:15.4f}{rp}{sd:8.4f}")

    def line(label: str, walls: list[float]) -> float:
        best = min(walls)
        print(f"{label:<52}{best:9.3f} s best{statistics.median(walls):9.3f} s median")
        return best

    print()
    best_sb = line("searchbench randomization (6 pairs, one call)", sb_walls)
    line("searchbench compare_results (tests+Holm+effects)", cmp_walls)
    print(f"{'bare float64 product (same chunks, signs given)':<52}{limit:9.3f} s")
    if ranx_walls:
        print(f"{'ranx first call (numba compile / cache load)':<52}{ranx_first:9.3f} s")
        best_ranx = line("ranx fisher_randomization_test (6 calls, warm)", ranx_walls)
        print(f"\nratio ranx / searchbench (warm, best): {best_ranx / best_sb:.1f}x")
    for label, same in REPEATS_AGREE.items():
        print(f"{label}: same seed, repeated -> identical p-values: {same}")
    print(f"ratio searchbench / bare product (same kernel, signs given): {best_sb / limit:.2f}x")
    rate = 2 * b * n * len(pairs) / best_sb / 1e9
    print(f"searchbench: {rate:.1f} GFLOP/s on the sign-flip products = {rate / peak:.1%} of this "
          f"machine's float64 GEMM peak ({peak:.1f} GFLOP/s; tall-skinny products with "
          f"{len(pairs)} columns are memory-bound)")


if __name__ == "__main__":
    main()
