"""stats layer (see ARCHITECTURE §1): paired tests, resampling, corrections, effect sizes.

Comparing runs (evaluate, then test) is :mod:`searchbench.comparison`, one layer up.

Imports numpy and scipy only (scipy lazily, inside the functions that need it).
"""

from .corrections import CORRECTIONS, benjamini_hochberg, bonferroni, correct, correction_name, holm
from .effects import effect_size, paired_t_power, queries_for_power, wins_ties_losses
from .paired import (
    TESTS,
    PairedTestResult,
    bootstrap,
    paired_t,
    paired_test,
    randomization,
    t_interval,
    test_name,
    wilcoxon,
)

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "PairedTestResult",
    "benjamini_hochberg",
    "bonferroni",
    "bootstrap",
    "correct",
    "correction_name",
    "effect_size",
    "holm",
    "paired_t",
    "paired_t_power",
    "paired_test",
    "queries_for_power",
    "randomization",
    "t_interval",
    "test_name",
    "wilcoxon",
    "wins_ties_losses",
]
