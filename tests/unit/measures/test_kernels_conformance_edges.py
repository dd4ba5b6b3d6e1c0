"""Where searchbench and the trec_eval C program knowingly differ, or where it now refuses.

Each case is the decision recorded in the kernels' and the Evaluator's docstrings and in
the README's measures section. Expected values come from the definitions (hand-counted)
and from trec_eval's source (m_num_rel.c, ``te_calc_avg_num_rel``).
"""

from __future__ import annotations

import sys
import warnings

import pytest

import searchbench as sb
from searchbench.errors import DataFormatError, MissingDependencyError, SearchbenchError
from searchbench.measures import NoSharedQueriesError

# qrels "1 0 a 1" / "1 0 b 2" and run "1 Q0 a 1 1 t" (the case checked against trec_eval).
QRELS = {"1": {"a": 1, "b": 2}}
RUN = {"1": {"a": 1.0}}


def _evaluate(qrels: dict, run: dict, measures: list[str], **kw: object) -> sb.EvalResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sb.SearchbenchWarning)
        return sb.evaluate(sb.Qrels.from_dict(qrels), sb.Run.from_dict(run), measures, **kw)


class TestNumRelAllLine:
    """trec_eval -c -l2 prints num_rel 1 for query 1 and 2 for 'all' (it recounts grade > 0
    from the qrels and ignores -l); searchbench keeps 'all' the sum of the per-query values."""

    def test_per_query_value_counts_grades_at_or_above_rel(self) -> None:
        res = _evaluate(QRELS, RUN, ["NumRel(rel=2)", "NumRel"], missing="zero")
        assert res.per_query["NumRel(rel=2)"] == {"1": 1.0}  # only b has grade >= 2
        assert res.per_query["NumRel"] == {"1": 2.0}

    @pytest.mark.parametrize("missing", ["zero", "skip"])
    def test_all_is_the_sum_of_the_queries(self, missing: str) -> None:
        qrels = {**QRELS, "2": {"c": 2, "d": 1, "e": 0}}
        res = _evaluate(qrels, {**RUN, "2": {"x": 1.0}}, ["NumRel(rel=2)", "NumRel"],
                        missing=missing)
        assert res.mean["NumRel(rel=2)"] == 2.0  # b and c, not trec_eval -c's 4 (a, b, c, d)
        assert res.mean["NumRel"] == 4.0  # rel=1: the sum equals trec_eval's recount

    def test_the_difference_is_documented(self) -> None:
        formula = sb.measures.FAMILIES["NumRel"].formula
        assert "trec_eval ``-c``" in formula and "ignores ``-l``" in formula


class TestNoSharedQueries:
    """Under missing='skip' a run answering no qrels query is an error (trec_eval 10 too)."""

    @pytest.mark.parametrize("run", [{"7": {"a": 1.0}}, {}, {"1": {}}],
                             ids=["other-queries", "empty-run", "empty-result-list"])
    def test_skip_raises_naming_both_sides(self, run: dict) -> None:
        qrels = sb.Qrels.from_dict(QRELS)
        with pytest.raises(NoSharedQueriesError) as err:
            sb.evaluate(qrels, sb.Run.from_dict(run, name="bm25"), ["AP"], missing="skip")
        assert isinstance(err.value, DataFormatError) and isinstance(err.value, SearchbenchError)
        text = str(err.value)
        assert "run 'bm25' shares no query id with the qrels" in text
        assert "qrels: 1 query, e.g. '1'" in text and "missing='zero'" in text

    def test_zero_still_scores_every_qrels_query_zero(self) -> None:
        res = _evaluate(QRELS, {"7": {"a": 1.0}}, ["AP", "NumQ"], missing="zero")
        assert res.num_q == 1 and res.mean == {"AP": 0.0, "NumQ": 1.0}

    def test_one_shared_query_is_enough(self) -> None:
        res = _evaluate({**QRELS, "2": {"c": 1}}, {"2": {"c": 1.0}, "7": {"a": 1.0}}, ["AP"],
                        missing="skip")
        assert res.query_ids.tolist() == ["2"] and res.mean["AP"] == 1.0

    def test_evaluator_docstring_says_so(self) -> None:
        assert "NoSharedQueriesError" in (sb.Evaluator.__doc__ or "")


def test_to_frame_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _evaluate(QRELS, RUN, ["AP"])
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'searchbench\[pandas\]'"):
        result.to_frame()


def test_to_frame_with_pandas() -> None:
    pd = pytest.importorskip("pandas")
    frame = _evaluate(QRELS, RUN, ["AP", "P@1"]).to_frame()
    assert isinstance(frame, pd.DataFrame) and frame.index.name == "query_id"
    assert frame.loc["1"].to_dict() == {"AP": 0.5, "P@1": 1.0}  # a at rank 1 of 2 relevant
