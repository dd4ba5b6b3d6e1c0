"""Corrections against hand-computed examples from their definitions, and scipy's BH."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from searchbench.errors import ConfigError
from searchbench.stats.corrections import benjamini_hochberg, bonferroni, correct, holm

P = np.array([0.01, 0.04, 0.03, 0.005])


def test_bonferroni_is_m_times_p_capped_at_1() -> None:
    np.testing.assert_allclose(bonferroni(P), [0.04, 0.16, 0.12, 0.02])
    np.testing.assert_allclose(bonferroni([0.3, 0.6]), [0.6, 1.0])


def test_holm_hand_computed() -> None:
    # sorted: .005 .01 .03 .04 -> 4*.005=.02, 3*.01=.03, 2*.03=.06, 1*.04=.04 -> cummax
    np.testing.assert_allclose(holm(P), [0.03, 0.06, 0.06, 0.02])
    # sorted: .01 .5 .9 -> .03, min(1, 2*.5)=1, .9 -> cummax .03 1 1
    np.testing.assert_allclose(holm([0.5, 0.9, 0.01]), [1.0, 1.0, 0.03])


def test_bh_hand_computed() -> None:
    # sorted p*m/j: .005*4/1=.02, .01*4/2=.02, .03*4/3=.04, .04*4/4=.04 -> reverse cummin
    np.testing.assert_allclose(benjamini_hochberg(P), [0.02, 0.04, 0.04, 0.02])
    # .04 .04 .028 .5 -> reverse cummin: .028 .028 .028 .5
    np.testing.assert_allclose(benjamini_hochberg([0.01, 0.02, 0.021, 0.5]),
                               [0.028, 0.028, 0.028, 0.5])


def test_bh_matches_scipy_false_discovery_control() -> None:
    p = np.random.default_rng(3).uniform(size=40) ** 3
    np.testing.assert_allclose(benjamini_hochberg(p), stats.false_discovery_control(p))


def test_correct_dispatch_nan_and_unknown() -> None:
    out = correct(np.array([0.01, np.nan, 0.02]), "bonferroni")
    np.testing.assert_allclose(out, [0.02, np.nan, 0.04])  # NaN not counted in m
    np.testing.assert_allclose(correct(P, "none"), P)
    np.testing.assert_allclose(correct(P, "Benjamini-Hochberg"), benjamini_hochberg(P))
    with pytest.raises(ConfigError, match=r"unknown correction 'sidak'.*holm"):
        correct(P, "sidak")
