"""Multiple-comparison corrections of p-values (adjusted p-values, not decisions).

With ``m`` p-values sorted ascending, ``p_(1) <= … <= p_(m)``:

- **Bonferroni**: ``p̃_i = min(1, m · p_i)`` (controls the family-wise error rate).
- **Holm** (step-down, Holm 1979): ``p̃_(i) = max_{j <= i} min(1, (m − j + 1) · p_(j))``
  (FWER, uniformly more powerful than Bonferroni).
- **Benjamini–Hochberg** (step-up, Benjamini & Hochberg 1995):
  ``p̃_(i) = min_{j >= i} min(1, m · p_(j) / j)`` (controls the false discovery rate).

A hypothesis is rejected at level α when its adjusted p-value is below α. NaN p-values
(an undefined test) stay NaN and do not count towards ``m``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..vocab import canonical_correction

__all__ = ["CORRECTIONS", "benjamini_hochberg", "bonferroni", "correct", "correction_name", "holm"]


def bonferroni(p_values: np.ndarray) -> np.ndarray:
    """Bonferroni-adjusted p-values: ``min(1, m · p)``."""
    p = np.asarray(p_values, dtype=np.float64)
    return np.minimum(1.0, p * p.size)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values: ``max_{j<=i} min(1, (m − j + 1) p_(j))``."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(scaled)
    return out


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg step-up adjusted p-values: ``min_{j>=i} min(1, m p_(j) / j)``."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, p[order] * m / np.arange(1, m + 1))
    out = np.empty(m)
    out[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return out


def _none(p_values: np.ndarray) -> np.ndarray:
    return np.asarray(p_values, dtype=np.float64).copy()


CORRECTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "bonferroni": bonferroni,
    "holm": holm,
    "bh": benjamini_hochberg,
    "none": _none,
}


def correction_name(name: str) -> str:
    """Canonical correction name, or :class:`ConfigError` listing the known ones."""
    return canonical_correction(name)


def correct(p_values: np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjust ``p_values`` by ``method`` (bonferroni, holm, bh, none); NaN stays NaN."""
    fn = CORRECTIONS[correction_name(method)]
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = fn(p[ok])
    return out
