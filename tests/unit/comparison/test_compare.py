"""compare(): evaluation through the measures engine, tests, corrections, exports, errors."""

from __future__ import annotations

import csv
import io
import json
import warnings

import numpy as np
import pytest
from scipy import stats

import searchbench as sb
from searchbench.comparison import compare
from searchbench.errors import ConfigError, DataFormatError
from searchbench.stats import holm

N_Q = 24
MEASURES = ["nDCG@10", "RR@10", "R@5"]


def _qrels() -> sb.Qrels:
    rng = np.random.default_rng(0)
    return sb.Qrels.from_dict({f"q{i:02d}": {f"d{j}": int(rng.integers(0, 3)) for j in range(12)}
                               for i in range(N_Q)})


def _run(name: str, seed: int, n_q: int = N_Q, boost: float = 0.0) -> sb.Run:
    rng = np.random.default_rng(seed)
    qrels = _qrels().to_dict()
    ranking = {}
    for i in range(n_q):
        qid = f"q{i:02d}"
        ranking[qid] = {d: float(rng.random() + boost * g) for d, g in qrels[qid].items()}
    return sb.Run.from_dict(ranking, name=name)


@pytest.fixture(scope="module")
def cmp() -> sb.Comparison:
    runs = [_run("bm25", 1), _run("dense", 2, boost=0.6), _run("noise", 3)]
    return compare(_qrels(), runs, ["ndcg_cut.10", "RR@10", "recall.5"], baseline="bm25",
                   test="t", correction="holm")


def test_means_and_p_values_come_from_engine_and_scipy(cmp) -> None:
    assert cmp.measures == MEASURES and cmp.systems == ["bm25", "dense", "noise"]
    res = {n: sb.evaluate(_qrels(), r, MEASURES) for n, r in
           [("bm25", _run("bm25", 1)), ("dense", _run("dense", 2, boost=0.6)),
            ("noise", _run("noise", 3))]}
    raw = []
    for s in ("dense", "noise"):
        for m in MEASURES:
            row = cmp.stat(s, m)
            assert row.mean == res[s].mean[m] and row.baseline_mean == res["bm25"].mean[m]
            d = res[s].scores[m] - res["bm25"].scores[m]
            assert row.delta == pytest.approx(d.mean())
            assert row.wins == (d > 0).sum() and row.losses == (d < 0).sum()
            expected = stats.ttest_rel(res[s].scores[m], res["bm25"].scores[m]).pvalue
            assert row.p_value == pytest.approx(expected, rel=1e-10)
            raw.append(row.p_value)
    np.testing.assert_allclose([r.p_adjusted for r in cmp.stats], holm(np.array(raw)))
    assert cmp.stat("dense", "nDCG@10").significant  # graded boost: clearly better
    assert cmp.stat("dense", "nDCG@10").direction == 1
    assert cmp.best("nDCG@10") == ["dense"]


def test_per_query_deltas_and_long_rows(cmp) -> None:
    deltas = cmp.per_query_deltas("ndcg_cut.10")
    assert set(deltas) == {"dense", "noise"} and len(deltas["dense"]) == N_Q
    base = cmp.scores["bm25"]["nDCG@10"]
    assert deltas["dense"]["q03"] == cmp.scores["dense"]["nDCG@10"][3] - base[3]
    rows = cmp.per_query_rows()
    assert len(rows) == 3 * 3 * N_Q and rows[0][:3] == ("bm25", "q00", "nDCG@10")


def test_exports_are_unrounded_and_complete(cmp) -> None:
    data = json.loads(cmp.to_json())
    assert data["baseline"] == "bm25" and data["correction"] == "holm"
    assert data["means"]["dense"]["nDCG@10"] == cmp.means["dense"]["nDCG@10"]
    assert len(data["comparisons"]) == 6
    rows = list(csv.DictReader(io.StringIO(cmp.to_csv())))
    assert len(rows) == 9 and float(rows[3]["p_value"]) == cmp.stats[0].p_value
    long = list(csv.DictReader(io.StringIO(cmp.to_csv(per_query=True))))
    assert len(long) == 3 * 3 * N_Q and set(long[0]) == {"system", "query", "measure", "value"}
    pd = pytest.importorskip("pandas")
    frame = cmp.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 9
    assert len(cmp.to_frame(per_query=True)) == 3 * 3 * N_Q


def test_regressions_and_min_delta() -> None:
    runs = {"main": _run("a", 5, boost=0.6), "pr": _run("b", 6)}
    c = compare(_qrels(), runs, ["nDCG@10"], test="t")
    worse = c.regressions(["ndcg_cut.10"])
    assert [r.system for r in worse] == ["pr"] and worse[0].delta < 0
    assert c.regressions(["nDCG@10"], min_delta=-worse[0].delta + 1e-9) == []
    with pytest.raises(ConfigError, match="not in this comparison"):
        c.regressions(["P@5"])


def test_same_seed_same_p_values_randomization() -> None:
    runs = {"a": _run("a", 1), "b": _run("b", 2, boost=0.2)}
    p1 = [r.p_value for r in compare(_qrels(), runs, MEASURES, seed=3).stats]
    p2 = [r.p_value for r in compare(_qrels(), runs, MEASURES, seed=3).stats]
    assert p1 == p2


@pytest.mark.filterwarnings("ignore::searchbench.SearchbenchWarning")
def test_bad_input_errors() -> None:
    q = _qrels()
    a, b = _run("a", 1), _run("b", 2)
    with pytest.raises(ConfigError, match="at least 2 systems"):
        compare(q, [a], MEASURES)
    with pytest.raises(ConfigError, match="baseline 'zzz' is not among the runs"):
        compare(q, [a, b], MEASURES, baseline="zzz")
    with pytest.raises(ConfigError, match="unknown test"):
        compare(q, [a, b], MEASURES, test="anova")
    with pytest.raises(ConfigError, match="unknown correction"):
        compare(q, [a, b], MEASURES, correction="sidak")
    with pytest.raises(ConfigError, match="two runs are named 'a'"):
        compare(q, [a, _run("a", 3)], MEASURES)
    one = sb.Qrels.from_dict({"q00": {"d1": 1}})
    with pytest.raises(DataFormatError, match=r"1 evaluated queries.*at least 2"):
        compare(one, [a, b], MEASURES)


def test_different_query_sets_zero_scores_0_skip_uses_common_queries() -> None:
    a, short = _run("a", 1), _run("short", 2, n_q=N_Q - 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zero = compare(_qrels(), [a, short], MEASURES, test="t")
        skip = compare(_qrels(), [a, short], MEASURES, test="t", missing="skip")
    assert len(zero.query_ids) == N_Q
    assert zero.notes == ["runs cover different query sets: short lacks 3 of 24 qrels queries "
                          "(e.g. q21, q22, q23); 21 queries are answered by every run: "
                          "scored 0 (missing='zero')"]
    assert zero.scores["short"]["nDCG@10"][-3:].tolist() == [0.0, 0.0, 0.0]
    assert skip.query_ids.tolist() == [f"q{i:02d}" for i in range(N_Q - 3)]
    assert skip.notes[0].endswith("compared on the queries every run answers (missing='skip')")
    # both sides averaged over the same 21 queries, as the engine does on them alone
    common = sb.Qrels.from_dict({q: g for q, g in _qrels().to_dict().items()
                                 if q in skip.query_ids.tolist()})
    for name, run in (("a", a), ("short", short)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = sb.evaluate(common, run, MEASURES)
        for m in MEASURES:
            assert skip.means[name][m] == pytest.approx(ref.mean[m])
            np.testing.assert_allclose(skip.scores[name][m], ref.scores[m])
    row = skip.stat("short", "nDCG@10")
    d = skip.scores["short"]["nDCG@10"] - skip.scores["a"]["nDCG@10"]
    assert row.p_value == pytest.approx(stats.ttest_1samp(d, 0).pvalue)


def test_results_over_different_queries_under_zero_are_an_error() -> None:
    from searchbench.comparison import compare_results

    qids = np.array(["q1", "q2", "q3"])
    full = sb.EvalResult("a", ["RR"], qids, {"RR": np.array([1.0, 0.5, 0.0])}, {"RR": 0.5})
    part = sb.EvalResult("b", ["RR"], qids[:2], {"RR": np.array([1.0, 1.0])}, {"RR": 1.0})
    with pytest.raises(DataFormatError, match=r"different query sets \(a: 3, b: 2; 2 in"):
        compare_results({"a": full, "b": part}, test="t")
    cmp = compare_results({"a": full, "b": part}, test="t", missing="skip")
    assert cmp.means == {"a": {"RR": 0.75}, "b": {"RR": 1.0}}


def test_count_measures_delta_is_on_the_summed_aggregate() -> None:
    q = sb.Qrels.from_dict({f"q{i}": {"d0": 1, "d1": 1, "d2": 1} for i in range(10)})
    a = sb.Run.from_dict({f"q{i}": {"d0": 2.0, "x": 1.0} for i in range(10)}, name="a")
    b = sb.Run.from_dict({f"q{i}": {"d0": 2.0, "d1": 1.0} for i in range(10)}, name="b")
    c = compare(q, {"a": a, "b": b}, ["NumRelRet", "P@2"], test="t")
    row = c.stat("b", "NumRelRet")
    assert (row.baseline_mean, row.mean) == (10.0, 20.0)
    assert row.delta == row.mean - row.baseline_mean == 10.0
    assert row.relative == 1.0  # +100 %, not 10 %
    assert row.ci_low == row.ci_high == 10.0  # every query gains exactly one
    p2 = c.stat("b", "P@2")  # a mean measure: Δ is the mean difference
    assert (p2.delta, p2.relative) == (pytest.approx(0.5), pytest.approx(1.0))
    assert c.regressions(min_delta=0.0) == []


def test_queries_needed_uses_the_comparison_alpha() -> None:
    from searchbench.stats import queries_for_power

    runs = {"a": _run("a", 1), "b": _run("b", 2, boost=0.2)}
    strict = compare(_qrels(), runs, ["nDCG@10"], test="t", alpha=0.01)
    row = strict.stat("b", "nDCG@10")
    assert row.queries_needed == queries_for_power(row.effect_size, alpha=0.01, power=0.8)
    assert row.queries_needed > queries_for_power(row.effect_size, alpha=0.05, power=0.8)


def test_engine_warnings_name_the_run_as_compare_does() -> None:
    a, short = _run("run", 1), _run("run", 2, n_q=N_Q - 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare(_qrels(), {"bm25": a, "dense": short}, ["nDCG@10"], test="t")
    texts = [str(w.message) for w in caught]
    assert any("'dense'" in t and "3 qrels queries" in t for t in texts), texts
    assert not any("'run'" in t for t in texts), texts
    assert (a.name, short.name) == ("run", "run")  # the caller's runs are not renamed
