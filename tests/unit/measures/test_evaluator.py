"""Evaluator behaviour: missing/extra queries, depth, result types, hand-computed values."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import searchbench as sb

QRELS = sb.Qrels.from_dict({
    "q1": {"a": 2, "b": 0, "c": 1, "x": -1},
    "q2": {"d": 1},
    "q3": {"e": 0},  # judged, nothing relevant: counts with 0
})
RUN = sb.Run.from_dict({
    "q1": {"b": 3.0, "a": 2.0, "x": 1.5, "z": 1.0, "c": 0.5},
    "q3": {"e": 1.0},
    "qX": {"a": 1.0},  # not in the qrels: ignored
})


def test_hand_computed_values() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sb.evaluate(QRELS, RUN, ["P@2", "RR", "AP", "nDCG@3", "R@5", "Bpref",
                                       "Judged@3", "NumRelRet", "NumQ"])
    q1 = {m: res.per_query[m]["q1"] for m in res.measures}
    assert q1["P@2"] == 0.5
    assert q1["RR"] == 0.5
    assert q1["AP"] == pytest.approx((1 / 2 + 2 / 5) / 2)
    ideal = 2 + 1 / math.log2(3)
    assert q1["nDCG@3"] == pytest.approx((2 / math.log2(3)) / ideal)
    assert q1["R@5"] == 1.0
    # bpref: a has 1 judged non-relevant above it (b): 1 - 1/min(2, 1) = 0; c: 1 - 1/1 = 0
    assert q1["Bpref"] == 0.0
    assert q1["Judged@3"] == pytest.approx(2 / 3)  # x is judged -1: unjudged
    assert res.per_query["P@2"]["q2"] == 0.0  # missing from the run: 0
    assert res.per_query["AP"]["q3"] == 0.0
    assert res.mean["NumRelRet"] == 2.0 and res.mean["NumQ"] == 3.0
    assert res.mean["P@2"] == pytest.approx(0.5 / 3)


def test_missing_policies_and_warnings() -> None:
    with (pytest.warns(sb.SearchbenchWarning, match="1 qrels queries have no results; scored 0"),
          pytest.warns(sb.SearchbenchWarning, match="1 queries are not in the qrels")):
        zero = sb.evaluate(QRELS, RUN, ["P@2"])
    with (pytest.warns(sb.SearchbenchWarning, match="1 queries are not in the qrels"),
          pytest.warns(sb.SearchbenchWarning, match="no results; left out of the mean")):
        skip = sb.evaluate(QRELS, RUN, ["P@2"], missing="skip")
    assert zero.query_ids.tolist() == ["q1", "q2", "q3"] and zero.n_missing == 1
    assert skip.query_ids.tolist() == ["q1", "q3"] and skip.n_extra == 1
    assert skip.mean["P@2"] == pytest.approx(0.25)


def test_depth_truncates_each_query() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sb.evaluate(QRELS, RUN, ["NumRet", "R@5"], depth=2)
    assert res.per_query["NumRet"]["q1"] == 2.0
    assert res.per_query["R@5"]["q1"] == 0.5


def test_evaluator_reuse_and_result_types() -> None:
    ev = sb.Evaluator(QRELS, "nDCG@10,RR@10", missing="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = ev.evaluate(RUN), ev.evaluate(RUN)
    assert a.mean == b.mean
    assert isinstance(a.scores["nDCG@10"], np.ndarray)
    assert a.to_dict()["measures"].keys() == {"nDCG@10", "RR@10"}
    frame = a.to_frame()
    assert list(frame.columns) == ["nDCG@10", "RR@10"] and frame.index.name == "query_id"


def test_empty_run_scores_zero() -> None:
    empty = sb.Run.from_columns([], [], np.zeros(0), name="empty")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sb.evaluate(QRELS, empty, ["nDCG@10", "NumRet"])
    assert res.mean == {"nDCG@10": 0.0, "NumRet": 0.0}


@pytest.mark.parametrize(("bad", "error"), [({"missing": "drop"}, sb.ConfigError),
                                            ({"depth": 0}, sb.DataFormatError)])
def test_bad_policies(bad: dict, error: type) -> None:
    with pytest.raises(error):
        sb.Evaluator(QRELS, "P@5", **bad)


def test_unknown_measure_raises() -> None:
    with pytest.raises(sb.UnknownMeasureError):
        sb.evaluate(QRELS, RUN, ["P@0"])


def test_chunked_evaluation_equals_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Splitting the run into query chunks changes nothing."""
    from searchbench.measures import evaluator

    rng = np.random.default_rng(1)
    qrels = sb.Qrels.from_dict({f"q{i}": {f"d{j}": int(rng.integers(-1, 4))
                                          for j in rng.choice(40, 6, replace=False)}
                                for i in range(30)})
    run = sb.Run.from_dict({f"q{i}": {f"d{j}": float(rng.integers(0, 5))
                                      for j in rng.choice(40, int(rng.integers(0, 25)),
                                                          replace=False)}
                            for i in range(0, 34, 1)})
    names = ["nDCG@10", "AP", "RR", "Bpref", "NumRel", "NumQ", "R@5", "Judged@5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = sb.evaluate(qrels, run, names)
        monkeypatch.setattr(evaluator, "CHUNK_ENTRIES", 7)
        chunked = sb.evaluate(qrels, run, names)
    for name in names:
        np.testing.assert_array_equal(whole.scores[name], chunked.scores[name])


def test_warnings_point_at_the_caller() -> None:
    with pytest.warns(sb.SearchbenchWarning) as record:
        sb.evaluate(QRELS, RUN, ["P@2"])
    assert {w.filename for w in record} == {__file__}
