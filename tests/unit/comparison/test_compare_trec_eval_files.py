"""compare() on trec_eval's own test files: per-query values and means from trec_eval's
expected outputs, p-values from scipy and from enumerating sign flips of those values."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import searchbench as sb

TREC_NAMES = {"AP": "map", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank"}


def _per_query(path: Path, name: str) -> dict[str, float]:
    rows = [line.split() for line in path.read_text().splitlines()]
    return {q: float(v) for m, q, v in rows if m == name}


@pytest.fixture(scope="module")
def cmp(trec_eval_dir: Path) -> sb.Comparison:
    qrels = sb.Qrels.from_file(trec_eval_dir / "qrels.test")
    with pytest.warns(sb.SearchbenchWarning, match="5 line.s. have more than six fields"):
        runs = {"test": sb.Run.from_file(trec_eval_dir / "results.test"),
                "trunc": sb.Run.from_file(trec_eval_dir / "results.trunc")}
    # results.trunc lacks query 302: scored 0 (-c)
    with pytest.warns(sb.SearchbenchWarning, match="'trunc': 1 qrels queries have no results"):
        return sb.compare(qrels, runs, list(TREC_NAMES), baseline="test", test="t",
                          correction="none")


@pytest.mark.data
def test_scores_and_means_match_trec_eval(cmp, trec_eval_dir: Path) -> None:
    expected = {"test": trec_eval_dir / "out.test.aq", "trunc": trec_eval_dir / "out.test.aqc"}
    for system, path in expected.items():
        for measure, trec in TREC_NAMES.items():
            ref = _per_query(path, trec)
            got = dict(zip(cmp.query_ids.tolist(), cmp.scores[system][measure], strict=True))
            for qid in ("301", "302", "303"):
                assert got[qid] == pytest.approx(ref[qid], abs=5e-5)
            assert cmp.means[system][measure] == pytest.approx(ref["all"], abs=5e-5)
    assert cmp.notes and "trunc lacks 1 of 3 qrels queries" in cmp.notes[0]


@pytest.mark.data
def test_p_values_from_trec_eval_values(cmp, trec_eval_dir: Path) -> None:
    for measure, trec in TREC_NAMES.items():
        a = _per_query(trec_eval_dir / "out.test.aq", trec)
        b = _per_query(trec_eval_dir / "out.test.aqc", trec)
        x = np.array([a[q] for q in ("301", "302", "303")])
        y = np.array([b[q] for q in ("301", "302", "303")])
        row = cmp.stat("trunc", measure)
        assert row.p_value == pytest.approx(stats.ttest_rel(y, x).pvalue, abs=1e-3)
        d = y - x
        flips = [abs(np.dot(s, d)) >= abs(d.sum()) - 1e-9
                 for s in itertools.product((1, -1), repeat=3)]
        exact = sb.stats.randomization(cmp.scores["trunc"][measure]
                                       - cmp.scores["test"][measure])
        assert exact == pytest.approx(np.mean(flips))
