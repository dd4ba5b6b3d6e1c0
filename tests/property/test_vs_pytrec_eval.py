"""Differential tests: searchbench agrees with pytrec_eval (trec_eval's C code) to 1e-9.

Generated qrels and runs have tied scores, graded and negative labels, all-zero queries,
queries missing on either side, empty result lists and doc ids whose byte-wise order
decides ties. Every measure pytrec_eval has is compared per query, at relevance levels
1–3 (pytrec_eval's ``relevance_level`` is our ``(rel=N)``; nDCG ignores it in both).

Two limits of pytrec_eval shape the generated data (see ``measure_strategies``): its
trec_eval stores scores as float32, so generated scores are float32 values (the double
comparison is tested on its own below), and it crashes on a query whose grades are all
negative, so every generated query has a grade >= 0 (that case is tested in
``test_measure_properties``).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from measure_strategies import (
    CUTOFFS,
    Qrels,
    Ranking,
    evaluate,
    judgments,
    per_query,
    rankings,
    skip_has_queries,
    truncate,
)

pytrec_eval = pytest.importorskip("pytrec_eval")

TOL = 1e-9
CUT = ",".join(map(str, CUTOFFS))
PYTREC_MEASURES = {f"P.{CUT}", f"recall.{CUT}", "recip_rank", "map", f"map_cut.{CUT}",
                   "ndcg", f"ndcg_cut.{CUT}", "Rprec", f"success.{CUT}", "bpref",
                   "num_ret", "num_rel", "num_rel_ret"}
COUNTS = {"NumRet", "NumRel", "NumRelRet"}

relevance_levels = st.sampled_from([1, 2, 3])
SETTINGS = settings(max_examples=100, deadline=None)


def our_name(family: str, cutoff: int | None, rel: int) -> str:
    """Canonical searchbench name; ``rel`` is left out where the family ignores it."""
    takes_rel = family not in ("nDCG", "NumRet")
    params = f"(rel={rel})" if takes_rel and rel != 1 else ""
    return family + params + (f"@{cutoff}" if cutoff is not None else "")


def name_map(rel: int) -> dict[str, str]:
    """pytrec_eval's per-query key -> our canonical measure name."""
    out = {"recip_rank": our_name("RR", None, rel), "map": our_name("AP", None, rel),
           "ndcg": our_name("nDCG", None, rel), "Rprec": our_name("Rprec", None, rel),
           "bpref": our_name("Bpref", None, rel), "num_ret": our_name("NumRet", None, rel),
           "num_rel": our_name("NumRel", None, rel),
           "num_rel_ret": our_name("NumRelRet", None, rel)}
    for k in CUTOFFS:
        for theirs, family in (("P", "P"), ("recall", "R"), ("map_cut", "AP"),
                               ("ndcg_cut", "nDCG"), ("success", "Success")):
            out[f"{theirs}_{k}"] = our_name(family, k, rel)
    return out


def reference(qrels: Qrels, run: Ranking, rel: int) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values, keyed by our canonical names."""
    names = name_map(rel)
    ev = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=rel)
    return {qid: {names[k]: v for k, v in values.items()}
            for qid, values in ev.evaluate(run).items()}


def assert_close(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]
                 ) -> None:
    """Same queries; every measure within TOL; the first difference in the message."""
    assert sorted(ours) == sorted(theirs)
    for qid, values in theirs.items():
        for name, expected in values.items():
            got = ours[qid][name]
            assert math.isclose(got, expected, rel_tol=0, abs_tol=TOL), (
                f"query {qid!r}, {name}: searchbench {got!r}, pytrec_eval {expected!r}")


def reference_zero(qrels: Qrels, run: Ranking, rel: int) -> dict[str, dict[str, float]]:
    """trec_eval -c: pytrec_eval for queries with results; a qrels query without results
    scores what trec_eval gives an empty result list — 0 everywhere, num_rel from the qrels.

    Written out rather than asked of pytrec_eval, which sometimes crashes (segfault) on an
    empty result list."""
    answered = {qid: docs for qid, docs in run.items() if docs}
    theirs = reference(qrels, answered, rel)
    for qid, judged in qrels.items():
        if qid not in theirs:
            n_rel = sum(grade >= rel for grade in judged.values())
            theirs[qid] = {name: (float(n_rel) if name.startswith("NumRel") and
                                  not name.startswith("NumRelRet") else 0.0)
                           for name in name_map(rel).values()}
    return theirs


@SETTINGS
@given(judgments(), rankings(allow_empty=False), relevance_levels)
def test_per_query_equals_pytrec_eval_missing_skip(qrels: Qrels, run: Ranking, rel: int
                                                   ) -> None:
    """missing="skip": the queries in both, each measure as trec_eval computes it."""
    if not skip_has_queries(qrels, run):
        return
    theirs = reference(qrels, run, rel)
    ours = per_query(evaluate(qrels, run, list(name_map(rel).values()), missing="skip"),
                     name_map(rel).values())
    assert_close(ours, theirs)


@SETTINGS
@given(judgments(), rankings(), relevance_levels)
def test_per_query_equals_pytrec_eval_missing_zero(qrels: Qrels, run: Ranking, rel: int
                                                   ) -> None:
    """missing="zero": a query without results scores as an empty result list does."""
    theirs = reference_zero(qrels, run, rel)
    ours = per_query(evaluate(qrels, run, list(name_map(rel).values()), missing="zero"),
                     name_map(rel).values())
    assert_close(ours, theirs)


@SETTINGS
@given(judgments(), rankings(allow_empty=False), relevance_levels,
       st.sampled_from(["skip", "zero"]))
def test_means_equal_pytrec_eval(qrels: Qrels, run: Ranking, rel: int, missing: str) -> None:
    """Means average over the evaluated queries; counts are summed."""
    if missing == "skip" and not skip_has_queries(qrels, run):
        return
    theirs = reference_zero(qrels, run, rel) if missing == "zero" else reference(qrels, run, rel)
    result = evaluate(qrels, run, list(name_map(rel).values()), missing=missing)
    assert result.num_q == len(theirs)
    for name in name_map(rel).values():
        column = [values[name] for values in theirs.values()]
        is_count = name.split("(")[0] in COUNTS
        expected = sum(column) if is_count else (sum(column) / len(column) if column else 0)
        assert math.isclose(result.mean[name], expected, rel_tol=0, abs_tol=TOL), name


@SETTINGS
@given(judgments(), rankings(allow_empty=False), st.integers(1, 6))
def test_depth_equals_pytrec_eval_on_truncated_run(qrels: Qrels, run: Ranking, depth: int
                                                   ) -> None:
    """``depth=d`` (trec_eval -M d) equals evaluating each query's top d documents."""
    if not skip_has_queries(qrels, run, depth=depth):
        return
    theirs = reference(qrels, truncate(run, depth), 1)
    ours = per_query(evaluate(qrels, run, list(name_map(1).values()), missing="skip",
                              depth=depth), name_map(1).values())
    assert_close(ours, theirs)


@SETTINGS
@given(judgments(), rankings(allow_empty=False))
def test_trec_eval_aliases_give_the_same_values(qrels: Qrels, run: Ranking) -> None:
    """``ndcg_cut.10``, ``P_5``, ``recip_rank``... are the canonical measures by another name."""
    if not skip_has_queries(qrels, run):
        return
    aliases = {"P_5": "P@5", "P.10": "P@10", "recall.10": "R@10", "recip_rank": "RR",
               "map": "AP", "map_cut.10": "AP@10", "ndcg": "nDCG", "ndcg_cut.10": "nDCG@10",
               "success.1": "Success@1", "bpref": "Bpref", "num_ret": "NumRet",
               "num_rel": "NumRel", "num_rel_ret": "NumRelRet", "Rprec": "Rprec"}
    by_alias = evaluate(qrels, run, list(aliases), missing="skip")
    canonical = evaluate(qrels, run, list(aliases.values()), missing="skip")
    assert by_alias.per_query == canonical.per_query


def test_ties_break_by_docid_descending_bytewise() -> None:
    """A hand-made case: equal scores (0.0 and -0.0 too) rank by doc id, byte-wise."""
    qrels = {"q": {"B": 1, "a": 0, "é": 2}}
    run = {"q": {"a": 0.0, "B": -0.0, "é": 0.0, "Z": 1.0}}
    names = name_map(1)
    ours = per_query(evaluate(qrels, run, list(names.values())), names.values())
    assert_close(ours, reference(qrels, run, 1))
    assert ours["q"]["RR"] == pytest.approx(1 / 2)  # Z, then é (0xC3 > 'a' > 'B')


def test_scores_are_compared_as_doubles() -> None:
    """Scores that differ only beyond float32 precision still rank in score order.

    trec_eval keeps scores as ``double`` since its issue #34; the trec_eval inside
    pytrec_eval-terrier still stores a C ``float``, where 1 + 1e-9 ties with 1 and the tie
    goes to the larger doc id. The generated scores above are float32 values for this reason.
    """
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0 + 1e-9, "z": 1.0}, "r": {"a": 0.0, "z": -1e-50}}
    result = evaluate({**qrels, "r": {"a": 1}}, run, ["RR"])
    assert result.per_query["RR"] == {"q": 1.0, "r": 1.0}


def _built_run(run: Ranking, how: str, order: list[int]) -> object:
    """The ranking as a Run read from TREC text (an Arrow doc vocabulary in file order)
    or from columns, its lines in the given order (not always query by query)."""
    import io

    import numpy as np

    import searchbench as sb

    items = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    items = [items[i] for i in order if i < len(items)] + items[len(order):]
    if how == "file":
        text = "".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, d, s in items)
        return sb.Run.from_file(io.BytesIO(text.encode()))
    return sb.Run.from_columns([i[0] for i in items], [i[1] for i in items],
                               np.array([i[2] for i in items], dtype=np.float64))


@pytest.mark.slow  # many hypothesis examples, each read from a file in tiny chunks
@SETTINGS
@given(judgments(), rankings(allow_empty=False), relevance_levels,
       st.sampled_from(["file", "columns"]), st.sampled_from([1, 3, 7, 1 << 22]),
       st.permutations(range(12)))
def test_file_and_column_runs_in_small_chunks_equal_pytrec_eval(
        qrels: Qrels, run: Ranking, rel: int, how: str, chunk: int, order: list[int]) -> None:
    """The filtered join, the tie repair and chunking over runs that are not built from
    dicts: read from text (Arrow vocabulary), lines shuffled, a few entries per chunk."""
    import warnings

    import searchbench as sb
    import searchbench.measures.evaluator as evaluator

    assume(any(run.values()))
    if not skip_has_queries(qrels, run):
        return
    names = name_map(rel)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setattr(evaluator, "CHUNK_ENTRIES", chunk)
        warnings.simplefilter("ignore", sb.SearchbenchWarning)
        result = sb.evaluate(sb.Qrels.from_dict(qrels), _built_run(run, how, order),
                             list(names.values()), missing="skip")
    assert_close(per_query(result, names.values()), reference(qrels, run, rel))
