"""Properties that follow from the definitions, on generated inputs (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from searchbench.stats import benjamini_hochberg, bonferroni, holm, paired_t, randomization

p_values = arrays(np.float64, st.integers(1, 30), elements=st.floats(0.0, 1.0))
diffs = arrays(np.float64, st.integers(2, 12),
               elements=st.integers(-8, 8).map(lambda v: v / 8.0))


@settings(max_examples=200, deadline=None)
@given(p_values)
def test_p_le_bh_le_holm_le_bonferroni_le_1(p: np.ndarray) -> None:
    # BH p̃_(i) <= m p_(i) / i <= (m − i + 1) p_(i) <= Holm p̃_(i), since (i−1)(m−i) >= 0
    bh, hm, bf = benjamini_hochberg(p), holm(p), bonferroni(p)
    eps = 1e-12
    assert (p <= bh + eps).all() and (bh <= hm + eps).all() and (hm <= bf + eps).all()
    assert (bf <= 1.0).all()


@settings(max_examples=200, deadline=None)
@given(p_values)
def test_corrections_keep_the_order_of_p_values(p: np.ndarray) -> None:
    order = np.argsort(p, kind="stable")
    for fn in (benjamini_hochberg, holm, bonferroni):
        assert (np.diff(fn(p)[order]) >= -1e-12).all()


@settings(max_examples=100, deadline=None)
@given(diffs, st.randoms(use_true_random=False))
def test_exact_randomization_symmetric_and_order_free(d: np.ndarray, rnd) -> None:
    p = randomization(d, exact=True)
    assert 0.0 < p <= 1.0
    assert randomization(-d, exact=True) == p
    shuffled = d.copy()
    rnd.shuffle(shuffled)
    assert randomization(shuffled, exact=True) == p


@settings(max_examples=100, deadline=None)
@given(diffs)
def test_sampled_randomization_and_t_are_sign_symmetric(d: np.ndarray) -> None:
    assert randomization(-d, n_permutations=300, seed=1, exact=False) == randomization(
        d, n_permutations=300, seed=1, exact=False)
    assert paired_t(-d) == paired_t(d)
