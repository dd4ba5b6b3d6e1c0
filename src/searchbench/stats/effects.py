"""Effect sizes, per-query win/tie/loss counts and sample-size planning for paired data.

- **Standardised effect** (Cohen's ``d_z`` for paired samples): ``d_z = d̄ / s_d`` with
  ``s_d`` the sample standard deviation (ddof = 1) of the per-query differences.
- **Wins / ties / losses**: queries where ``d_q > tol``, ``|d_q| <= tol``, ``d_q < −tol``.
- **Queries needed for power** (paired t approximation; Cohen 1988, ch. 2): the smallest
  ``n`` with ``P(|T| > t_{1−α/2, n−1}) >= power`` where ``T`` follows a non-central t
  distribution with ``n − 1`` degrees of freedom and non-centrality ``d_z · √n``. It starts
  from the normal approximation ``n ≈ ((z_{1−α/2} + z_{power}) / d_z)²``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["effect_size", "paired_t_power", "queries_for_power", "wins_ties_losses"]

TIE_TOLERANCE = 1e-12
_MAX_QUERIES = 10**9


def effect_size(diffs: np.ndarray) -> np.ndarray:
    """Cohen's ``d_z = d̄ / s_d`` per column; ±inf for a non-zero constant, NaN for all 0."""
    d = np.asarray(diffs, dtype=np.float64)
    mean = d.mean(axis=0)
    sd = d.std(axis=0, ddof=1) if d.shape[0] > 1 else np.zeros_like(mean)
    constant = np.ptp(d, axis=0) <= 1e-12 * np.abs(d).max(axis=0)  # not rounding noise
    sd = np.where(constant, 0.0, sd)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0),
                        np.where(mean == 0, np.nan, np.sign(mean) * np.inf))


def wins_ties_losses(diffs: np.ndarray, tol: float = TIE_TOLERANCE) -> np.ndarray:
    """Counts ``[wins, ties, losses]`` per column (shape ``(3,)`` or ``(3, n_pairs)``)."""
    d = np.asarray(diffs, dtype=np.float64)
    wins = (d > tol).sum(axis=0)
    losses = (d < -tol).sum(axis=0)
    return np.stack([wins, d.shape[0] - wins - losses, losses]).astype(np.int64)


def paired_t_power(d_z: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test with ``n`` queries at effect ``d_z``:
    ``P(T > t_c) + P(T < −t_c)``, ``T ~ nct(df=n−1, nc=d_z √n)``, ``t_c = t_{1−α/2, n−1}``."""
    # lazy: loads scipy, numpy on first use
    from scipy import special  # the distributions without importing scipy.stats

    df = n - 1
    crit = special.stdtrit(df, 1 - alpha / 2)
    nc = abs(d_z) * math.sqrt(n)
    # scipy's nctdtr gives NaN far in a tail (nc − t_c > ~34 above, nc > ~7.6 below),
    # where the probability is below 1e-8: take it as 0 there
    below_crit, below_minus_crit = (float(np.nan_to_num(special.nctdtr(df, nc, t)))
                                    for t in (crit, -crit))
    return 1.0 - below_crit + below_minus_crit


def queries_for_power(d_z: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Smallest number of queries whose paired t-test reaches ``power`` at effect ``d_z``.

    ``None`` when the effect is 0, undefined, or needs more than 10⁹ queries; 2 for an
    infinite effect (a constant non-zero difference).
    """
    from scipy import special  # lazy: loads scipy, numpy on first use

    if d_z is None or not np.isfinite(d_z):
        return None if d_z is None or np.isnan(d_z) else 2
    if d_z == 0:
        return None
    z = special.ndtri(1 - alpha / 2) + special.ndtri(power)
    guess = max(2, math.ceil((z / abs(d_z)) ** 2))
    if guess > _MAX_QUERIES:
        return None  # no realistic number of queries detects so small an effect
    low, high = 1, guess
    while paired_t_power(d_z, high, alpha) < power:
        low, high = high, high * 2
        if high > _MAX_QUERIES:
            return None
    while high - low > 1:  # invariant: power(low) < target <= power(high), or low == 1
        mid = (low + high) // 2
        if paired_t_power(d_z, mid, alpha) >= power:
            high = mid
        else:
            low = mid
    return max(2, high)
