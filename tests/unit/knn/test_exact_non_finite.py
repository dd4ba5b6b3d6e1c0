"""Exact search refuses NaN/inf vectors with a message naming the row, and never hangs.

Before the fix, a NaN distance never passed the verification step of ``_exact_top`` and the
search looped forever; each case runs in a child process so a regression fails (the child
is stopped after a generous bound) instead of hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

CASES = {
    "nan query": ("queries[2, 1] = np.nan", "query vectors: row 2"),
    "inf query": ("queries[0, 0] = np.inf", "query vectors: row 0"),
    "nan corpus row, check off": ("base[:, :] = 1.0; base[7, 3] = np.nan", "row 7"),
    "inf corpus row, check off": ("base[:, :] = 1.0; base[5] = np.inf", "row 5"),
}


@pytest.mark.parametrize("engine", ["numpy", "auto"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_non_finite_input_is_refused_not_searched_forever(case: str, engine: str) -> None:
    spoil, expected = CASES[case]
    code = textwrap.dedent(f"""
        import numpy as np
        from searchbench.knn.exact import exact_knn
        from searchbench.errors import DataFormatError
        rng = np.random.default_rng(0)
        base = rng.standard_normal((40, 8)).astype(np.float32)
        queries = rng.standard_normal((4, 8)).astype(np.float32)
        {spoil}
        try:
            exact_knn(base, queries, 39, "l2", extra=0, engine={engine!r}, check=False)
        except DataFormatError as exc:
            print("refused:", exc)
        else:
            print("accepted")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused:"), done.stdout
    assert expected in done.stdout and "finite" in done.stdout


def test_checked_corpus_names_the_row() -> None:
    import numpy as np

    from searchbench.errors import DataFormatError
    from searchbench.knn.exact import exact_knn

    base = np.ones((10, 3), dtype=np.float32)
    base[6, 2] = np.nan
    with pytest.raises(DataFormatError, match="6"):
        exact_knn(base, np.ones((2, 3), dtype=np.float32), 3, "l2")


HUGE = {  # finite values whose float32 (or float64) products overflow
    "float32 corpus rows near float32's max": ("base", np.float32, 1e38, "corpus row norm"),
    "float64 corpus rows whose squared norm overflows": ("base", np.float64, 1e300,
                                                         "row 3 holds values too large"),
    "float64 queries beyond float32": ("queries", np.float64, 1e300, "query norm inf"),
}


@pytest.mark.parametrize("engine", ["numpy", "auto"])
@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
@pytest.mark.parametrize("case", sorted(HUGE))
def test_finite_but_overflowing_vectors_are_refused_in_one_error(case, metric, engine):
    """Before the fix: an IndexError / ValueError traceback, RuntimeWarnings, or a message
    naming corpus "row -1"; now one DataFormatError naming the cause, and no warning."""
    from searchbench.errors import DataFormatError
    from searchbench.knn.exact import exact_knn

    which, dtype, value, expected = HUGE[case]
    rng = np.random.default_rng(0)
    arrays = {"base": rng.standard_normal((40, 8)).astype(dtype),
              "queries": rng.standard_normal((4, 8)).astype(dtype)}
    arrays[which][3:, :] = value
    with pytest.raises(DataFormatError, match=expected):
        exact_knn(arrays["base"], arrays["queries"], 5, metric, engine=engine)
