"""stats layer (see ARCHITECTURE §1): paired tests, resampling, corrections, comparisons.

Imports numpy and scipy only (scipy lazily, inside the functions that need it).
"""

from .compare import Comparison, PairStat, compare, compare_results
from .corrections import benjamini_hochberg, bonferroni, correct, holm
from .effects import effect_size, paired_t_power, queries_for_power, wins_ties_losses
from .paired import (
    TESTS,
    PairedTestResult,
    bootstrap,
    paired_t,
    paired_test,
    randomization,
    t_interval,
    wilcoxon,
)

__all__ = [
    "TESTS",
    "Comparison",
    "PairStat",
    "PairedTestResult",
    "benjamini_hochberg",
    "bonferroni",
    "bootstrap",
    "compare",
    "compare_results",
    "correct",
    "effect_size",
    "holm",
    "paired_t",
    "paired_t_power",
    "paired_test",
    "queries_for_power",
    "randomization",
    "t_interval",
    "wilcoxon",
    "wins_ties_losses",
]
