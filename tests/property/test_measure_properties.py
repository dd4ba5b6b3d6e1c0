"""Property tests of the measures (ARCHITECTURE §4, §10).

Bounds, ideal rankings, invariance to query and line order, and — for the measures
pytrec_eval lacks (``RR@k``, ``Judged@k``, ``nDCG(gain=exp)@k``) and a few it has — plain
per-query reference implementations written here from the formulas, one loop per query.
"""

from __future__ import annotations

import math
import random
import tempfile
import warnings
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from measure_strategies import (
    CUTOFFS,
    Qrels,
    Ranking,
    evaluate,
    judgments,
    ranked,
    rankings,
    skip_has_queries,
)

import searchbench as sb

SETTINGS = settings(max_examples=60, deadline=None)
TOL = 1e-9
NORMALISED = ["P@3", "R@5", "RR", "RR@3", "AP", "AP@5", "nDCG", "nDCG@3", "nDCG(gain=exp)@5",
              "Rprec", "Success@2", "Bpref", "Judged@3", "P(rel=2)@5", "RR(rel=3)@10"]
cutoffs = st.sampled_from(CUTOFFS)
relevance_levels = st.sampled_from([1, 2, 3])


# -- reference implementations: one query, straight from the formula --------------------
def is_relevant(grades: dict[str, int], doc: str, rel: int) -> bool:
    """``grade >= rel``; a doc absent from the qrels is not relevant."""
    return doc in grades and grades[doc] >= rel


def ref_precision(ranking: list[str], grades: dict[str, int], k: int, rel: int) -> float:
    """P@k = relevant in top k / k."""
    return sum(is_relevant(grades, d, rel) for d in ranking[:k]) / k


def ref_rr(ranking: list[str], grades: dict[str, int], k: int, rel: int) -> float:
    """RR@k = 1 / rank of the first relevant document within k, 0 if none."""
    for i, doc in enumerate(ranking[:k]):
        if is_relevant(grades, doc, rel):
            return 1.0 / (i + 1)
    return 0.0


def ref_ap(ranking: list[str], grades: dict[str, int], k: int, rel: int) -> float:
    """AP@k = Σ P@rank over relevant within k / all relevant in the qrels (0 if none)."""
    n_rel = sum(g >= rel for g in grades.values())
    hits, total = 0, 0.0
    for i, doc in enumerate(ranking[:k]):
        if is_relevant(grades, doc, rel):
            hits += 1
            total += hits / (i + 1)
    return total / n_rel if n_rel else 0.0


def ref_ndcg_exp(ranking: list[str], grades: dict[str, int], k: int) -> float:
    """nDCG(gain=exp)@k: gain 2^grade − 1 for positive grades, discount log2(rank + 1);
    the ideal DCG from all positive grades in the qrels, truncated at k; 0 if it is 0."""
    def gain(g: int) -> float:
        return 2.0**g - 1 if g > 0 else 0.0

    dcg = sum(gain(grades.get(d, 0)) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(gain(g) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def ref_judged(ranking: list[str], grades: dict[str, int], k: int) -> float:
    """Judged@k = judged docs in top k / min(k, retrieved); 0 if nothing retrieved.

    Judged means in the qrels with a grade >= 0: a negative grade is "judged-unjudged",
    neither relevant nor non-relevant (ARCHITECTURE §2.3, trec_eval's RELVALUE_UNJUDGED).
    """
    top = ranking[:k]
    judged = sum(d in grades and grades[d] >= 0 for d in top)
    return judged / len(top) if top else 0.0


def check_against(qrels: Qrels, run: Ranking, measure: str, reference) -> None:
    """Every qrels query (missing ones rank nothing) equals ``reference(ranking, grades)``."""
    result = evaluate(qrels, run, [measure], missing="zero")
    assert sorted(result.query_ids.tolist()) == sorted(qrels)
    for qid, grades in qrels.items():
        expected = reference(ranked(run.get(qid, {})), grades)
        got = result.per_query[measure][qid]
        assert math.isclose(got, expected, rel_tol=0, abs_tol=TOL), (
            f"{measure}, query {qid!r}: searchbench {got!r}, reference {expected!r}")


def with_rel(family: str, rel: int, k: int) -> str:
    """Canonical name ``Family(rel=N)@k`` (``rel`` left out when it is the default 1)."""
    return f"{family}{f'(rel={rel})' if rel != 1 else ''}@{k}"


# -- measures pytrec_eval lacks, and P@k = hits / k -------------------------------------
@SETTINGS
@given(judgments(), rankings(), cutoffs, relevance_levels)
def test_rr_at_k_equals_reference(qrels: Qrels, run: Ranking, k: int, rel: int) -> None:
    check_against(qrels, run, with_rel("RR", rel, k), lambda r, g: ref_rr(r, g, k, rel))


@SETTINGS
@given(judgments(), rankings(), cutoffs, relevance_levels)
def test_ap_at_k_equals_reference(qrels: Qrels, run: Ranking, k: int, rel: int) -> None:
    check_against(qrels, run, with_rel("AP", rel, k), lambda r, g: ref_ap(r, g, k, rel))


@SETTINGS
@given(judgments(), rankings(), cutoffs)
def test_ndcg_exp_gain_equals_reference(qrels: Qrels, run: Ranking, k: int) -> None:
    check_against(qrels, run, f"nDCG(gain=exp)@{k}", lambda r, g: ref_ndcg_exp(r, g, k))


@SETTINGS
@given(judgments(), rankings(), cutoffs)
def test_judged_at_k_equals_reference(qrels: Qrels, run: Ranking, k: int) -> None:
    check_against(qrels, run, f"Judged@{k}", lambda r, g: ref_judged(r, g, k))


@SETTINGS
@given(judgments(), rankings(), cutoffs, relevance_levels)
def test_precision_is_hits_over_k(qrels: Qrels, run: Ranking, k: int, rel: int) -> None:
    check_against(qrels, run, with_rel("P", rel, k),
                  lambda r, g: ref_precision(r, g, k, rel))


# -- bounds, ideal rankings, aggregation --------------------------------------------------
@SETTINGS
@given(judgments(), rankings())
def test_normalised_measures_lie_between_0_and_1(qrels: Qrels, run: Ranking) -> None:
    result = evaluate(qrels, run, NORMALISED)
    for name in NORMALISED:
        values = result.scores[name]
        assert ((values >= 0) & (values <= 1)).all(), (name, values)
        assert 0 <= result.mean[name] <= 1


def ideal_run(qrels: Qrels) -> Ranking:
    """Each query's positively graded docs, scored by grade: an ideal ranking."""
    return {qid: {d: float(g) for d, g in docs.items() if g > 0} for qid, docs in qrels.items()}


@SETTINGS
@given(judgments(), cutoffs)
def test_ideal_ranking_scores_one(qrels: Qrels, k: int) -> None:
    """nDCG (both gains, any cutoff), AP, RR and Rprec are 1 when the ranking is ideal."""
    measures = ["nDCG", f"nDCG@{k}", f"nDCG(gain=exp)@{k}", "AP", "RR", "Rprec"]
    result = evaluate(qrels, ideal_run(qrels), measures)
    for qid, docs in qrels.items():
        expected = 1.0 if any(g > 0 for g in docs.values()) else 0.0
        for name in measures:
            assert math.isclose(result.per_query[name][qid], expected, abs_tol=TOL), (qid, name)


@SETTINGS
@given(judgments(), rankings(), st.sampled_from(["zero", "skip"]))
def test_means_average_and_counts_sum(qrels: Qrels, run: Ranking, missing: str) -> None:
    """``mean`` is the plain mean over ``query_ids``; counts and NumQ are summed."""
    if missing == "skip" and not skip_has_queries(qrels, run):
        return
    counts = ["NumRet", "NumRel", "NumRelRet", "NumQ"]
    result = evaluate(qrels, run, ["nDCG@10", "AP", *counts], missing=missing)
    n = len(result.query_ids)
    for name in ["nDCG@10", "AP"]:
        expected = sum(result.scores[name]) / n if n else 0.0
        assert math.isclose(result.mean[name], expected, abs_tol=TOL)
    for name in counts:
        assert result.mean[name] == sum(result.scores[name])
    assert result.mean["NumQ"] == n == result.num_q


def test_query_with_only_negative_grades_scores_zero() -> None:
    """Judged-unjudged docs (grade < 0) are neither relevant nor judged.

    trec_eval itself cannot run this case (form_res_rels.c sizes an array by the largest
    grade + 1, so pytrec_eval crashes); the expected values follow from the formulas.
    """
    qrels = {"q": {"a": -1, "b": -2}, "r": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 0.5, "c": 0.2}, "r": {"a": 1.0}}
    result = evaluate(qrels, run, [*NORMALISED, "NumRet", "NumRel", "NumRelRet"])
    for name in NORMALISED:
        assert result.per_query[name]["q"] == 0.0, name
    assert [result.per_query[n]["q"] for n in ("NumRet", "NumRel", "NumRelRet")] == [3, 0, 0]


# -- invariance to query order and line order ---------------------------------------------
def shuffled_columns(table: dict[str, dict[str, float]], rng: random.Random
                     ) -> tuple[list[str], list[str], list[float]]:
    """The (query, doc, value) rows of a dict-of-dicts in a random order."""
    rows = [(q, d, v) for q, docs in table.items() for d, v in docs.items()]
    rng.shuffle(rows)
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def evaluate_objects(qrels: sb.Qrels, run: sb.Run, measures: list[str]) -> sb.EvalResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sb.SearchbenchWarning)
        return sb.evaluate(qrels, run, measures)


@SETTINGS
@given(judgments(), rankings(allow_empty=False), st.randoms(use_true_random=False))
def test_invariant_to_query_and_row_order(qrels: Qrels, run: Ranking, rng: random.Random
                                          ) -> None:
    baseline = evaluate(qrels, run, NORMALISED)
    q_cols = shuffled_columns(qrels, rng)  # type: ignore[arg-type]
    r_cols = shuffled_columns(run, rng)
    shuffled = evaluate_objects(sb.Qrels.from_columns(*q_cols), sb.Run.from_columns(*r_cols),
                                NORMALISED)
    assert shuffled.per_query == baseline.per_query
    assert shuffled.mean == baseline.mean


def write_trec(folder: Path, qrels: Qrels, run: Ranking, rng: random.Random
               ) -> tuple[Path, Path]:
    """TREC files with lines in random order and a meaningless rank column."""
    q_rows = zip(*shuffled_columns(qrels, rng), strict=True)  # type: ignore[arg-type]
    q_lines = [f"{q} 0 {d} {g}" for q, d, g in q_rows]
    r_lines = [f"{q} Q0 {d} {rng.randint(1, 99)} {s!r} tag"
               for q, d, s in zip(*shuffled_columns(run, rng), strict=True)]
    qrels_path, run_path = folder / "qrels.txt", folder / "run.trec"
    qrels_path.write_text("\n".join(q_lines) + "\n", encoding="utf-8")
    run_path.write_text("\n".join(r_lines) + "\n", encoding="utf-8")
    return qrels_path, run_path


@settings(max_examples=30, deadline=None)
@given(judgments(), rankings(allow_empty=False).filter(bool), st.randoms(use_true_random=False))
def test_files_in_any_line_order_give_the_same_result(qrels: Qrels, run: Ranking,
                                                      rng: random.Random) -> None:
    """Reading TREC files ignores line order and the rank column (ARCHITECTURE §3)."""
    baseline = evaluate(qrels, run, NORMALISED)
    with tempfile.TemporaryDirectory() as tmp:
        qrels_path, run_path = write_trec(Path(tmp), qrels, run, rng)
        from_files = evaluate_objects(sb.Qrels.from_file(qrels_path),
                                      sb.Run.from_file(run_path), NORMALISED)
    assert from_files.per_query == baseline.per_query
