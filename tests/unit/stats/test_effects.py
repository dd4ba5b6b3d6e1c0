"""Effect sizes, win/tie/loss counts and the power-based sample size."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from searchbench.stats.effects import (
    effect_size,
    paired_t_power,
    queries_for_power,
    wins_ties_losses,
)


def test_effect_size_is_mean_over_sample_sd() -> None:
    d = np.array([0.1, 0.3, -0.2, 0.4])
    assert effect_size(d) == pytest.approx(0.15 / np.sqrt(np.sum((d - 0.15) ** 2) / 3))
    both = effect_size(np.column_stack([np.zeros(3), np.full(3, -0.2)]))
    assert np.isnan(both[0]) and both[1] == -np.inf


def test_wins_ties_losses() -> None:
    d = np.array([[0.5, 0.0], [0.0, 0.0], [-0.1, 0.2], [1e-15, -0.3]])
    np.testing.assert_array_equal(wins_ties_losses(d), [[1, 1], [2, 2], [1, 1]])


@pytest.mark.parametrize(("d_z", "n"), [(0.2, 199), (0.5, 34), (0.8, 15)])
def test_queries_for_power_matches_published_gpower_values(d_z: float, n: int) -> None:
    # G*Power 3, "Means: difference from constant (one sample / matched pairs)",
    # two-tailed, alpha 0.05, power 0.80 (Faul et al. 2007; Cohen 1988 Table 2.4.1).
    assert queries_for_power(d_z) == n
    assert queries_for_power(-d_z) == n


def test_queries_for_power_is_the_smallest_sufficient_n() -> None:
    for d_z in (0.05, 0.33, 1.7):
        n = queries_for_power(d_z)
        assert paired_t_power(d_z, n) >= 0.8 > (paired_t_power(d_z, n - 1) if n > 2 else 0)
    assert queries_for_power(0.0) is None
    assert queries_for_power(float("nan")) is None
    assert queries_for_power(float("inf")) == 2


def test_paired_t_power_agrees_with_simulated_t_tests() -> None:
    rng = np.random.default_rng(0)
    n, d_z, sims = 20, 0.5, 6000
    samples = rng.normal(d_z, 1.0, size=(n, sims))
    rejected = stats.ttest_1samp(samples, 0.0, axis=0).pvalue < 0.05
    assert paired_t_power(d_z, n) == pytest.approx(rejected.mean(), abs=0.025)


def test_power_is_finite_far_in_the_tails() -> None:
    """scipy's nctdtr returns NaN where a tail probability underflows; power must not."""
    for n in (2, 3, 4, 30, 500):
        for d_z in (0.01, 1.0, 4.58, 8.0, 16.0, 30.0):
            value = paired_t_power(d_z, n)
            assert np.isfinite(value) and 0.0 <= value <= 1.0, (d_z, n)
    assert paired_t_power(8.0, 2) == pytest.approx(
        stats.nct.sf(stats.t.ppf(0.975, 1), 1, 8.0 * np.sqrt(2)), rel=1e-6)
    for d_z in (4.579, 8.0, 12.0):  # NaN power made the search stop too early
        n = queries_for_power(d_z)
        assert paired_t_power(d_z, n) >= 0.8 > (paired_t_power(d_z, n - 1) if n > 2 else 0)


@pytest.mark.parametrize("d_z", [1e-6, 1e-12, -1e-17])
def test_tiny_effects_need_no_realistic_sample(d_z: float) -> None:
    """Above 10⁹ queries the answer is None, not a 30-digit number."""
    assert queries_for_power(d_z) is None
