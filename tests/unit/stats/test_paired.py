"""Paired tests: t and Wilcoxon against scipy, randomisation against exact enumeration,
bootstrap by its coverage on data with a known difference."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from searchbench.errors import ConfigError
from searchbench.stats import paired
from searchbench.stats.paired import (
    bootstrap,
    paired_t,
    paired_test,
    randomization,
    t_interval,
    wilcoxon,
)


def _pairs(seed: int, n: int = 25, cols: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, cols))
    y = np.clip(x + rng.normal(0.05, 0.2, size=(n, cols)), 0, 1)
    return x, y


def _brute_force_p(d: np.ndarray) -> float:
    """All 2^n sign vectors by itertools, with exact arithmetic on dyadic values."""
    observed = abs(sum(d))
    hits = sum(abs(sum(s * v for s, v in zip(signs, d, strict=True))) >= observed
               for signs in itertools.product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


def test_paired_t_matches_scipy_ttest_rel() -> None:
    x, y = _pairs(0)
    expected = stats.ttest_rel(y, x, axis=0).pvalue
    np.testing.assert_allclose(paired_t(y - x), expected, rtol=1e-12)
    assert paired_t(y[:, 0] - x[:, 0]) == pytest.approx(expected[0], rel=1e-12)


def test_paired_t_degenerate_columns() -> None:
    d = np.column_stack([np.zeros(5), np.full(5, 0.1)])
    np.testing.assert_array_equal(paired_t(d), [1.0, 0.0])


@pytest.mark.parametrize("seed", [1, 2])
def test_wilcoxon_matches_scipy(seed: int) -> None:
    x, y = _pairs(seed, n=30)
    y[:5] = x[:5]  # zero differences are dropped by scipy's default
    y[5:9] = np.round(y[5:9], 1)
    x[5:9] = np.round(x[5:9], 1)  # ties among |d|
    for j in range(x.shape[1]):
        assert wilcoxon(y[:, j] - x[:, j]) == pytest.approx(
            stats.wilcoxon(y[:, j], x[:, j]).pvalue, rel=1e-12)
    assert wilcoxon(np.zeros(6)) == 1.0


def test_t_interval_matches_scipy() -> None:
    d = _pairs(4)[1][:, 0] - _pairs(4)[0][:, 0]
    low, high = stats.t.interval(0.9, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert t_interval(d, 0.9) == pytest.approx((low, high), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_randomization_exact_matches_enumeration_of_1024_sign_flips(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = rng.integers(-4, 5, size=10) / 8.0  # dyadic: sums are exact, ties are real
    assert randomization(d, n_permutations=1024) == pytest.approx(_brute_force_p(d.tolist()))
    assert randomization(d, exact=True) == pytest.approx(_brute_force_p(d.tolist()))


def test_randomization_exact_with_float_differences() -> None:
    x, y = _pairs(5, n=10, cols=1)
    d = (y - x)[:, 0]
    expected = np.mean([abs(np.dot(s, d)) >= abs(d.sum()) - 1e-12
                        for s in itertools.product((1, -1), repeat=10)])
    assert randomization(d, exact=True) == pytest.approx(expected)


def test_randomization_sampled_agrees_with_exact_within_binomial_error() -> None:
    rng = np.random.default_rng(7)
    d = rng.normal(0.1, 0.3, size=10)
    exact = randomization(d, exact=True)
    b = 20_000
    sampled = randomization(d, n_permutations=b, seed=11, exact=False)
    assert abs(sampled - exact) < 4.5 * np.sqrt(exact * (1 - exact) / b) + 1 / b


def test_randomization_reproducible_and_column_independent() -> None:
    x, y = _pairs(8, n=200, cols=3)
    d = y - x
    full = randomization(d, n_permutations=3000, seed=5)
    np.testing.assert_array_equal(full, randomization(d, n_permutations=3000, seed=5))
    for j in range(3):  # a column's p-value does not depend on the other columns
        assert randomization(d[:, j], n_permutations=3000, seed=5) == full[j]
    assert not np.array_equal(full, randomization(d, n_permutations=3000, seed=6))
    assert (full >= 1 / 3001).all()  # (1 + count) / (B + 1): never 0


def test_randomization_same_with_one_or_two_blas_threads() -> None:
    code = ("import numpy as np; from searchbench.stats.paired import randomization;"
            "d=np.random.default_rng(1).normal(0.01,0.2,(3000,4));"
            "print(repr(randomization(d, n_permutations=2000, seed=3).tolist()))")
    outs = []
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads,
               "MKL_NUM_THREADS": threads}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert outs[0] == outs[1]


def test_randomization_chunks_cover_every_permutation(monkeypatch: pytest.MonkeyPatch) -> None:
    d = np.random.default_rng(2).integers(-3, 4, size=12) / 4.0
    expected = randomization(d, exact=True)
    monkeypatch.setattr(paired, "_CHUNK_ELEMENTS", 12 * 7)  # 7 rows per chunk
    assert randomization(d, exact=True) == expected


def test_bootstrap_ci_coverage_on_known_difference() -> None:
    rng = np.random.default_rng(12)
    true_delta, reps, covered = 0.03, 300, 0
    for r in range(reps):
        d = rng.normal(true_delta, 0.15, size=60)
        _, low, high = bootstrap(d, n_resamples=1000, seed=r, confidence=0.95)
        covered += low <= true_delta <= high
    assert 0.90 <= covered / reps <= 0.985  # nominal 0.95; binomial sd 0.013


def test_bootstrap_p_value_extremes() -> None:
    assert bootstrap(np.zeros(20), 500)[0] == 1.0
    d = np.random.default_rng(0).normal(0.5, 0.1, size=40)
    p, low, high = bootstrap(d, 2000, seed=1)
    assert p == pytest.approx(1 / 2001)
    assert low < d.mean() < high


def test_bootstrap_p_value_close_to_t_test_on_normal_data() -> None:
    d = np.random.default_rng(21).normal(0.04, 0.2, size=80)
    assert bootstrap(d, 20_000, seed=0)[0] == pytest.approx(paired_t(d), abs=0.03)


def test_paired_test_dispatch_and_errors() -> None:
    x, y = _pairs(9)
    res = paired_test(y - x, "t")
    np.testing.assert_allclose(res.p_values, stats.ttest_rel(y, x).pvalue)
    assert paired_test(y - x, "fisher").test == "randomization"
    with pytest.raises(ConfigError, match=r"unknown test 'z'.*randomization"):
        paired_test(y - x, "z")
    with pytest.raises(ConfigError, match="at least 2 queries"):
        paired_test(np.array([0.1]), "t")
    with pytest.raises(ConfigError, match="NaN"):
        paired_test(np.array([0.1, np.nan]), "t")


def test_bad_seed_is_a_config_error() -> None:
    d = np.random.default_rng(0).normal(0.1, 0.2, size=30)
    for call in (lambda: randomization(d, 100, seed=-1), lambda: bootstrap(d, 100, seed=-1),
                 lambda: paired_test(d, "t", seed=-1), lambda: randomization(d, 100, seed=1.5)):
        with pytest.raises(ConfigError, match="seed must be a non-negative integer"):
            call()


def test_number_of_resamples_is_capped() -> None:
    d = np.array([0.1, -0.2, 0.3])
    too_many = paired.MAX_RESAMPLES + 1
    with pytest.raises(ConfigError, match="n_resamples must be between 1 and 10,000,000"):
        bootstrap(d, too_many)
    with pytest.raises(ConfigError, match="n_permutations must be between 1 and 10,000,000"):
        randomization(d, too_many, exact=False)
    with pytest.raises(ConfigError, match="between 1 and"):
        paired_test(d, "bootstrap", n_permutations=too_many)


def _all_resample_means(d: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(seed))
    rows, n, out = paired._chunk_rows(len(d)), len(d), []
    for start in range(0, n_resamples, rows):
        counts = paired._resample_counts(rng, min(rows, n_resamples - start), n)
        out.append(counts.astype(np.float64) @ d / n)
    return np.vstack(out)


@pytest.mark.parametrize(("n_resamples", "confidence", "chunk"),
                         [(1000, 0.95, 1 << 21), (777, 0.9, 13 * 5), (3, 0.5, 13)])
def test_bootstrap_interval_is_numpy_percentile_of_all_resample_means(
        monkeypatch: pytest.MonkeyPatch, n_resamples: int, confidence: float, chunk: int) -> None:
    monkeypatch.setattr(paired, "_CHUNK_ELEMENTS", chunk)
    d = np.random.default_rng(5).normal(0.02, 0.2, size=(13, 3))
    means = _all_resample_means(d, n_resamples, seed=8)
    expected = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    _, low, high = bootstrap(d, n_resamples, seed=8, confidence=confidence)
    np.testing.assert_allclose(np.stack([low, high]), expected, rtol=1e-12, atol=1e-15)


def _peak_bytes(call) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_bootstrap_memory_does_not_grow_with_all_resample_means() -> None:
    d = np.random.default_rng(6).normal(0.02, 0.2, size=(20, 20))
    small = _peak_bytes(lambda: bootstrap(d, 300_000, seed=0))
    large = _peak_bytes(lambda: bootstrap(d, 1_000_000, seed=0))
    # all 7·10^5 more means would add 112 MB; their 2.5 % tails add about 6 MB
    assert large - small < 30e6
