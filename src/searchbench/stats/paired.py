"""Paired significance tests over per-query score differences.

Every function takes ``diffs``: the per-query differences ``d_q = x_q − y_q`` of two
systems on one measure, as a vector ``(n_queries,)`` or as a matrix
``(n_queries, n_pairs)`` holding several comparisons at once (one column each). All tests
are two-sided with the null hypothesis "the mean (or median) difference is 0".

- **Student's paired t-test**: ``t = d̄ / (s_d / √n)``, ``n − 1`` degrees of freedom
  (``scipy.stats.ttest_1samp`` on the differences, identical to ``ttest_rel``).
- **Wilcoxon signed-rank**: ``scipy.stats.wilcoxon`` with its defaults (zero differences
  dropped, exact distribution for small samples without ties).
- **Fisher's randomisation test** (sign-flip permutation test; Fisher 1935, Smucker, Allan
  & Carterette 2007): under the null the sign of each ``d_q`` is exchangeable, so with
  ``S(s) = Σ_q s_q d_q`` for sign vectors ``s ∈ {−1, +1}^n``,
  ``p = P(|S(s)| >= |S(1)|)``. When ``2^n <= n_permutations`` every sign vector is
  enumerated and ``p`` is exact; otherwise ``B`` random sign vectors give
  ``p = (1 + #{b : |S(s_b)| >= |S(1)|}) / (B + 1)`` (Phipson & Smyth 2010: never 0).
- **Paired bootstrap** (Efron & Tibshirani 1993, §16.4; Sakai 2006): ``B`` resamples of the
  queries with replacement give bootstrap means ``d̄*_b``; the confidence interval is the
  percentile interval of ``d̄*`` and the p-value is
  ``(1 + #{b : |d̄*_b − d̄| >= |d̄|}) / (B + 1)`` (the shifted, null-centred distribution).

Resampling is vectorised: sign (or count) matrices of a bounded number of rows are drawn
from ``numpy.random.Generator(PCG64(seed))`` and multiplied with the difference matrix. The
chunk size depends only on ``n``, so the same ``seed`` gives the same p-values whatever the
number of comparisons or threads; ``|S|`` ties are compared with a tolerance of
``1e-9 · Σ|d|`` so floating-point summation order cannot flip a count. Memory stays bounded
whatever ``B``: counts are accumulated chunk by chunk, and the bootstrap keeps only the
tails of ``d̄*`` its percentile interval needs. ``B`` is at most :data:`MAX_RESAMPLES`
(10⁷), and ``seed`` must be a non-negative integer.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..vocab import DEFAULT_STATS, MAX_RESAMPLES, TESTS, canonical_test

__all__ = [
    "MAX_RESAMPLES",
    "TESTS",
    "PairedTestResult",
    "bootstrap",
    "paired_t",
    "paired_test",
    "randomization",
    "t_interval",
    "test_name",
    "wilcoxon",
]

_CHUNK_ELEMENTS = 1 << 21  # sign/count matrix entries per chunk (16 MB as float64)
_TIE_TOL = 1e-9
MAX_EXACT_QUERIES = 24


@dataclass(frozen=True)
class PairedTestResult:
    """p-values and a confidence interval of the mean difference, one entry per column."""

    test: str
    p_values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    confidence: float


def test_name(name: str) -> str:
    """Canonical test name, or :class:`ConfigError` listing the known tests."""
    return canonical_test(name)


def _as_matrix(diffs: np.ndarray) -> np.ndarray:
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim == 1:
        d = d[:, None]
    if d.ndim != 2:
        raise ConfigError(f"differences must be a vector or a matrix, got shape {d.shape}")
    if d.shape[0] < 2:
        raise ConfigError(
            f"a paired test needs at least 2 queries, got {d.shape[0]}; "
            "evaluate on more queries"
        )
    if not np.isfinite(d).all():
        raise ConfigError("per-query differences contain NaN or infinity")
    return d


def _generator(seed: int) -> np.random.Generator:
    """``Generator(PCG64(seed))``, or :class:`ConfigError` for a seed numpy refuses."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.Generator(np.random.PCG64(int(seed)))


def _check_resamples(value: int, what: str) -> None:
    if not 1 <= value <= MAX_RESAMPLES:
        raise ConfigError(f"{what} must be between 1 and {MAX_RESAMPLES:,}, got {value:,}; "
                          "10,000 is usually enough (the p-value's standard error is "
                          "at most 0.005)")


def _shape_like(values: np.ndarray, diffs: np.ndarray) -> np.ndarray | float:
    """An array for a matrix of differences, a float for a single vector."""
    values = np.asarray(values, dtype=np.float64)
    return values if np.ndim(diffs) == 2 else float(values.reshape(-1)[0])


# -- classical tests ------------------------------------------------------------------------
def paired_t(diffs: np.ndarray) -> np.ndarray | float:
    """Two-sided p-value of Student's paired t-test, ``t = d̄ / (s_d/√n)``, df = n − 1.

    Degenerate columns: all differences 0 → p = 1; a non-zero constant → p = 0.
    """
    from scipy import stats  # lazy: loads scipy, numpy on first use

    d = _as_matrix(diffs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        p = np.atleast_1d(stats.ttest_1samp(d, 0.0, axis=0).pvalue).astype(np.float64)
    constant = np.ptp(d, axis=0) == 0
    p[constant] = np.where(d[0, constant] == 0, 1.0, 0.0)
    return _shape_like(p, diffs)


def wilcoxon(diffs: np.ndarray) -> np.ndarray | float:
    """Two-sided p-value of the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``).

    ``W = Σ_{d_q != 0} rank(|d_q|) · [d_q > 0]``; a column of only zeros gives p = 1.
    """
    from scipy import stats  # lazy: loads scipy, numpy on first use

    d = _as_matrix(diffs)
    p = np.ones(d.shape[1])
    for j in range(d.shape[1]):
        if np.any(d[:, j] != 0):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                p[j] = float(stats.wilcoxon(d[:, j]).pvalue)
    return _shape_like(p, diffs)


def t_interval(
    diffs: np.ndarray, confidence: float = DEFAULT_STATS.confidence
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Student's interval of the mean difference: ``d̄ ± t_{(1+c)/2, n−1} · s_d / √n``."""
    # lazy: loads scipy, numpy on first use
    from scipy import special  # t quantile without importing scipy.stats (slow to load)

    d = _as_matrix(diffs)
    n = d.shape[0]
    mean = d.mean(axis=0)
    half = special.stdtrit(n - 1, (1 + confidence) / 2) * d.std(axis=0, ddof=1) / np.sqrt(n)
    return _shape_like(mean - half, diffs), _shape_like(mean + half, diffs)


# -- randomisation --------------------------------------------------------------------------
def _chunk_rows(n: int) -> int:
    return max(1, _CHUNK_ELEMENTS // n)


def _random_bits(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    raw = rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
    return np.unpackbits(raw, axis=1, count=n)


def _all_bits(start: int, stop: int, n: int) -> np.ndarray:
    codes = np.arange(start, stop, dtype=np.int64)[:, None]
    return ((codes >> np.arange(n, dtype=np.int64)) & 1).astype(np.uint8)


def _sign_chunks(n: int, n_permutations: int, seed: int, exact: bool) -> Iterator[np.ndarray]:
    """Bit matrices (1 = flip the sign) of bounded size: all 2^n, or ``n_permutations``."""
    rows = _chunk_rows(n)
    total = 1 << n if exact else n_permutations
    rng = _generator(seed)
    for start in range(0, total, rows):
        stop = min(total, start + rows)
        yield _all_bits(start, stop, n) if exact else _random_bits(rng, stop - start, n)


def randomization(
    diffs: np.ndarray,
    n_permutations: int = DEFAULT_STATS.n_permutations,
    seed: int = DEFAULT_STATS.seed,
    exact: bool | None = None,
) -> np.ndarray | float:
    """Two-sided p-value of Fisher's sign-flip randomisation test.

    ``S(s) = Σ_q s_q d_q``; with bits ``b = (1 − s)/2``, ``S(s) = Σd − 2 · b·d``, computed for
    a chunk of sign vectors and all columns at once as one matrix product.
    ``exact=None`` enumerates all ``2^n`` sign vectors when ``2^n <= n_permutations``
    (``p = #{|S(s)| >= |S(1)|} / 2^n``), else samples ``n_permutations`` of them
    (``p = (1 + count) / (n_permutations + 1)``).
    """
    d = _as_matrix(diffs)
    n = d.shape[0]
    _check_resamples(n_permutations, "n_permutations")
    if exact is None:
        exact = n <= MAX_EXACT_QUERIES and (1 << n) <= n_permutations
    if exact and n > MAX_EXACT_QUERIES:
        raise ConfigError(f"exact enumeration of 2^{n} sign flips is too large; "
                          f"use at most {MAX_EXACT_QUERIES} queries or exact=False")
    total = d.sum(axis=0)
    threshold = np.abs(total) - _TIE_TOL * np.abs(d).sum(axis=0)
    count = np.zeros(d.shape[1], dtype=np.int64)
    for bits in _sign_chunks(n, n_permutations, seed, exact):
        flipped = total - 2.0 * (bits.astype(np.float64) @ d)
        count += (np.abs(flipped) >= threshold).sum(axis=0)
    p = count / float(1 << n) if exact else (1.0 + count) / (n_permutations + 1.0)
    return _shape_like(p, diffs)


# -- bootstrap ------------------------------------------------------------------------------
def _resample_counts(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """``rows × n`` matrix: how often each query is drawn in each resample of size n."""
    idx = rng.integers(0, n, size=(rows, n), dtype=np.int64)
    idx += (np.arange(rows, dtype=np.int64) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=rows * n).reshape(rows, n)


def bootstrap(
    diffs: np.ndarray,
    n_resamples: int = DEFAULT_STATS.n_permutations,
    seed: int = DEFAULT_STATS.seed,
    confidence: float = DEFAULT_STATS.confidence,
) -> tuple[np.ndarray | float, np.ndarray | float, np.ndarray | float]:
    """Paired bootstrap: ``(p_value, ci_low, ci_high)`` of the mean difference.

    ``d̄*_b = Σ_q c_bq d_q / n`` with multinomial counts ``c_b``; CI = percentiles
    ``(1 − c)/2`` and ``(1 + c)/2`` of ``d̄*``; p = ``(1 + #{|d̄*_b − d̄| >= |d̄|}) / (B + 1)``.
    """
    d = _as_matrix(diffs)
    n = d.shape[0]
    _check_resamples(n_resamples, "n_resamples")
    rng = _generator(seed)
    rows = _chunk_rows(n)
    observed = d.mean(axis=0)
    limit = np.abs(observed) - _TIE_TOL * np.abs(d).mean(axis=0)
    count = np.zeros(d.shape[1], dtype=np.int64)
    qs = ((1.0 - confidence) / 2, (1.0 + confidence) / 2)
    (lo_at, lo_frac), (hi_at, hi_frac) = (_position(n_resamples, q) for q in qs)
    k_lo, k_hi = min(n_resamples, lo_at + 2), n_resamples - hi_at
    smallest = largest = np.empty((0, d.shape[1]))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        means = (_resample_counts(rng, stop - start, n).astype(np.float64) @ d) / n
        count += (np.abs(means - observed) >= limit).sum(axis=0)
        smallest = _tail(np.vstack([smallest, means]), k_lo, low=True)
        largest = _tail(np.vstack([largest, means]), k_hi, low=False)
    p = (1.0 + count) / (n_resamples + 1.0)
    smallest, largest = np.sort(smallest, axis=0), np.sort(largest, axis=0)
    low = _lerp(smallest, lo_at, lo_frac)
    high = _lerp(largest, 0, hi_frac)  # largest[0] is order statistic hi_at
    return _shape_like(p, diffs), _shape_like(low, diffs), _shape_like(high, diffs)


def _position(total: int, q: float) -> tuple[int, float]:
    """numpy's linear quantile: order statistic ``⌊h⌋`` and fraction, ``h = (B − 1) q``."""
    h = (total - 1) * q
    at = min(int(np.floor(h)), total - 1)
    return at, h - at


def _tail(values: np.ndarray, k: int, low: bool) -> np.ndarray:
    """The ``k`` smallest (or largest) values of each column, unordered."""
    if len(values) <= k:
        return values
    if low:
        return np.partition(values, k - 1, axis=0)[:k]
    return np.partition(values, len(values) - k, axis=0)[len(values) - k:]


def _lerp(ordered: np.ndarray, at: int, frac: float) -> np.ndarray:
    nxt = ordered[min(at + 1, len(ordered) - 1)]
    return ordered[at] + (nxt - ordered[at]) * frac


# -- dispatcher -----------------------------------------------------------------------------
def paired_test(
    diffs: np.ndarray,
    test: str = "randomization",
    *,
    n_permutations: int = DEFAULT_STATS.n_permutations,
    seed: int = DEFAULT_STATS.seed,
    confidence: float = DEFAULT_STATS.confidence,
) -> PairedTestResult:
    """Run ``test`` on every column of ``diffs``; the CI is the bootstrap percentile
    interval for ``test="bootstrap"`` and Student's t interval otherwise."""
    name = test_name(test)
    _generator(seed)  # a bad seed fails whatever the test
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    d = _as_matrix(diffs)
    if name == "bootstrap":
        p, low, high = bootstrap(d, n_permutations, seed, confidence)
    else:
        low, high = t_interval(d, confidence)
        if name == "t":
            p = paired_t(d)
        elif name == "wilcoxon":
            p = wilcoxon(d)
        else:
            p = randomization(d, n_permutations, seed)
    return PairedTestResult(name, np.asarray(p), np.asarray(low), np.asarray(high), confidence)
