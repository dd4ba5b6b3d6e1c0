"""Queries without a relevant document are counted (scored 0, as trec_eval does); queries
marked no_answer are left out of the measures under ``skip`` and kept under ``zero``.

References: pytrec_eval (trec_eval's own code) for which queries have no relevant document
(``num_rel`` 0) and for the means over the queries left; trec_eval's vendored test output
for the query of ``qrels.comment.test`` whose 36 judgments are all non-relevant.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from searchbench.data import Qrels, Run
from searchbench.measures import (
    Evaluator,
    apply_unanswerable,
    no_relevant_ids,
    scored_queries,
)

pytrec_eval = pytest.importorskip("pytrec_eval")

# qrels payloads: only non-relevant grades, a judged-unjudged (-2) grade (pytrec_eval crashes
# on a query holding only those), a grade under
# rel=2, several relevance levels, Unicode and numeric-looking ids, a query whose only
# relevant document is never retrieved
QRELS = [
    {"q1": {"a": 1, "b": 0}, "q2": {"c": 0, "d": 0}, "q36": {"x": 0}},
    {"t1": {"a": 2}, "t2": {"b": -2, "c": 0}, "t3": {"d": 0, "e": 0}, "t4": {"f": 1}},
    {"10": {"a": 1}, "9": {"b": 1, "c": 3}, "100": {"z": 0}, "π": {"y": 0, "a": 0}},
    {"only": {"never": 1}, "none": {"a": 0}},
]
RUNS = [
    {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 3.0, "a": 1.0}, "q36": {"x": 1.0, "y": 0.5}},
    {"t1": {"a": 1.0, "b": 0.5}, "t2": {"b": 2.0}, "t3": {"d": 1.0, "e": 0.9},
     "t4": {"g": 1.0}},
    {"10": {"a": 0.1}, "9": {"c": 0.9, "a": 0.8}, "100": {"z": 0.5}, "π": {"a": 1.0}},
    {"only": {"a": 1.0}, "none": {"a": 1.0, "b": 0.5}},
]
PAIRS = list(zip(QRELS, RUNS, strict=True))


def _reference_no_relevant(qrels: dict, run: dict) -> set[str]:
    """Queries trec_eval evaluates (in both) whose num_rel is 0."""
    found = pytrec_eval.RelevanceEvaluator(qrels, {"num_rel"}).evaluate(run)
    return {q for q, v in found.items() if v["num_rel"] == 0}


@pytest.mark.parametrize("qrels, run", PAIRS)
def test_no_relevant_ids_are_the_queries_trec_eval_counts_with_num_rel_0(qrels, run):
    judged = Qrels.from_dict(qrels)
    scored = Evaluator(judged, ["AP"]).evaluate(Run.from_dict(run)).query_ids
    assert set(no_relevant_ids(judged, scored)) == _reference_no_relevant(qrels, run)
    assert "extra" not in no_relevant_ids(judged, ["extra", *scored])  # not held: not scored


@pytest.mark.parametrize("qrels, run", PAIRS)
def test_such_queries_score_0_on_every_rank_measure_as_in_trec_eval(qrels, run):
    judged = Qrels.from_dict(qrels)
    result = Evaluator(judged, ["AP", "nDCG@10", "RR", "R@10", "P@5", "Rprec"]).evaluate(
        Run.from_dict(run))
    ref = pytrec_eval.RelevanceEvaluator(
        qrels, {"map", "ndcg_cut.10", "recip_rank", "recall.10", "P.5", "Rprec"}).evaluate(run)
    for q in no_relevant_ids(judged, result.query_ids):
        i = result.query_ids.tolist().index(q)
        assert all(result.scores[m][i] == 0 for m in result.measures), q
        assert all(v == 0 for v in ref[q].values()), q


@pytest.mark.parametrize("qrels, run", PAIRS)
def test_skip_leaves_marked_queries_out_with_means_as_trec_eval_computes_them(qrels, run):
    judged = Qrels.from_dict(qrels)
    result = Evaluator(judged, ["AP", "nDCG@10", "NumQ", "NumRel"]).evaluate(
        Run.from_dict(run))
    marked = sorted(no_relevant_ids(judged, result.query_ids))
    skipped = apply_unanswerable(result, marked, "skip")
    left = {q: d for q, d in qrels.items() if q not in marked}
    ref = pytrec_eval.RelevanceEvaluator(left, {"map", "ndcg_cut.10"}).evaluate(
        {q: r for q, r in run.items() if q in left})
    assert sorted(skipped.query_ids.tolist()) == sorted(ref)
    assert math.isclose(skipped.mean["AP"], np.mean([v["map"] for v in ref.values()]))
    assert math.isclose(skipped.mean["nDCG@10"],
                        np.mean([v["ndcg_cut_10"] for v in ref.values()]))
    assert skipped.mean["NumQ"] == len(ref)  # counts are summed over the queries left
    assert apply_unanswerable(result, marked, "zero") is result  # trec_eval's treatment


def test_a_query_marked_but_answered_is_left_out_too():
    judged = Qrels.from_dict(QRELS[2])
    result = Evaluator(judged, ["AP"]).evaluate(Run.from_dict(RUNS[2]))
    skipped = apply_unanswerable(result, {"9", "not-a-query"}, "skip")
    assert skipped.query_ids.tolist() == ["10", "100", "π"]
    assert skipped.per_query["AP"] == {q: v for q, v in result.per_query["AP"].items()
                                       if q != "9"}


def test_notes_and_counts_say_what_was_scored():
    judged = Qrels.from_dict(QRELS[0])
    scored = scored_queries(judged, ["q1", "q2", "q36"], ["AP", "AP(rel=2)"])
    assert scored.notes()[0].startswith(
        "2 queries have no relevant document: scored 0, as trec_eval does (q2, q36)")
    assert "3 queries have no document of grade ≥ 2" in scored.notes()[1]
    one = scored_queries(judged, ["q1", "q2"], ["AP"], marked={"q36"})
    assert one.notes()[0].startswith(
        "1 query has no relevant document: scored 0, as trec_eval does (q2)")
    assert one.notes()[1].startswith("1 query marked no_answer is left out of the measures "
                                     "(q36)")
    data = one.to_dict()
    assert data["no_relevant"] == {"count": 1, "query_ids": ["q2"],
                                   "treatment": "scored 0, as trec_eval does"}
    assert data["no_answer"]["count"] == 1 and data["no_answer"]["policy"] == "skip"
    kept = scored_queries(judged, ["q1", "q2", "q36"], ["AP"], marked={"q36"}, policy="zero")
    assert "scored as trec_eval does (--unanswerable zero; q36)" in kept.notes()[-1]
    assert scored_queries(Qrels.from_dict(QRELS[3]), ["only"], ["AP"]).notes() == []
    many = scored_queries(Qrels.from_dict({f"q{i}": {"a": 0} for i in range(9)}),
                          [f"q{i}" for i in range(9)], ["AP"])
    assert re.search(r"^9 queries .*\(q0, q1, q2, q3, q4, … 4 more\)", many.notes()[0])


def test_trec_eval_counts_the_comment_test_query_without_relevant_documents(trec_eval_dir):
    """trec_eval 10 evaluates query 2024-36302 (36 judgments, none relevant): num_q 31 in
    its output; searchbench scores it too, and says so."""
    qrels = Qrels.from_file(trec_eval_dir / "qrels.comment.test")
    run = Run.from_file(trec_eval_dir / "results.comment.test")
    with pytest.warns(Warning):  # run queries absent from the qrels are ignored
        result = Evaluator(qrels, ["AP", "NumQ"]).evaluate(run)
    expected = re.search(r"num_q\s+all\s+(\d+)",
                         (trec_eval_dir / "out.comment.test").read_text()).group(1)
    assert result.mean["NumQ"] == int(expected) == 31
    assert no_relevant_ids(qrels, result.query_ids) == ["2024-36302"]
    note = scored_queries(qrels, result.query_ids, ["AP"]).notes()[0]
    assert note.startswith("1 query has no relevant document: scored 0, as trec_eval does "
                           "(2024-36302)")
