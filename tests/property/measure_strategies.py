"""Hypothesis strategies and small helpers shared by the measure property tests.

Qrels and runs are drawn as pytrec_eval's dict-of-dicts. The pools are small on purpose:
queries and documents repeat, scores come mostly from a tiny set (ties, including
``-0.0`` against ``0.0``), grades run from -2 (judged-unjudged) to 3, and doc ids mix
lengths, cases, digits and a non-ASCII letter so that byte-wise tie breaking matters.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import strategies as st

import searchbench as sb

QUERY_POOL = ["q1", "q2", "q10", "Q3", "7"]
DOC_POOL = ["d1", "d10", "d2", "D1", "D10", "a", "A", "b", "B1", "10", "9", "01", "d01",
            "z", "Z", "é", "ab", "aB", "zz9", "ä1"]
TIE_SCORES = [0.0, -0.0, 0.5, 1.0, -1.0, 2.25]
CUTOFFS = [1, 2, 3, 5, 10, 30]

Qrels = dict[str, dict[str, int]]
Ranking = dict[str, dict[str, float]]

# Other scores are float32 values: pytrec_eval's bundled trec_eval keeps scores as C
# ``float`` (trec_eval issue #34, since made ``double``), so scores that differ only beyond
# float32 precision tie there and not here; see test_vs_pytrec_eval for that case.
scores = st.one_of(
    st.sampled_from(TIE_SCORES),
    st.sampled_from(TIE_SCORES),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32),
)


@st.composite
def judgments(draw: st.DrawFn, min_grade: int = -2, max_grade: int = 3) -> Qrels:
    """Non-empty qrels; some queries have no relevant grade (all 0, or 0 and negatives).

    Every query keeps at least one grade >= 0: trec_eval's ``form_res_rels.c`` sizes an
    array by the query's largest grade + 1, so a query with only negative grades crashes
    pytrec_eval (segfault or hang). Such queries are tested without it.
    """
    qids = draw(st.lists(st.sampled_from(QUERY_POOL), min_size=1, unique=True))
    grades = st.integers(min_grade, max_grade)
    zero_query = draw(st.booleans())
    out: Qrels = {}
    for i, qid in enumerate(qids):
        docs = draw(st.dictionaries(st.sampled_from(DOC_POOL), grades, min_size=1))
        if zero_query and i == 0:  # an all-zero query: judged, nothing relevant
            docs = dict.fromkeys(docs, 0)
        if max(docs.values()) < 0:  # trec_eval crashes on a query with only negative grades
            docs[next(iter(docs))] = 0
        out[qid] = docs
    return out


@st.composite
def rankings(draw: st.DrawFn, allow_empty: bool = True) -> Ranking:
    """A run: any subset of the query pool (missing and extra queries), varying lengths.

    With ``allow_empty``, some queries map to ``{}``: an empty result list, which
    searchbench treats as a missing query and pytrec_eval evaluates as retrieving nothing.
    """
    qids = draw(st.lists(st.sampled_from(QUERY_POOL), unique=True))
    min_size = 0 if allow_empty else 1
    return {
        qid: draw(st.dictionaries(st.sampled_from(DOC_POOL), scores, min_size=min_size))
        for qid in qids
    }


def ranked(docs: dict[str, float]) -> list[str]:
    """Doc ids in trec_eval's order: score descending, then doc id descending byte-wise."""
    items = sorted(docs.items(), key=lambda kv: (kv[1], kv[0].encode()), reverse=True)
    return [doc for doc, _ in items]


def truncate(run: Ranking, depth: int) -> Ranking:
    """Each query's top ``depth`` documents in trec_eval's order (trec_eval ``-M``)."""
    return {qid: {d: docs[d] for d in ranked(docs)[:depth]} for qid, docs in run.items()}


def evaluate(qrels: Qrels, run: Ranking, measures: Sequence[str], **kw: object
             ) -> sb.EvalResult:
    """searchbench's result for dict inputs, with its missing/extra-query warnings muted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sb.SearchbenchWarning)
        return sb.evaluate(sb.Qrels.from_dict(qrels), sb.Run.from_dict(run), list(measures),
                           **kw)


def skip_has_queries(qrels: Qrels, run: Ranking, **kw: object) -> bool:
    """Whether ``missing="skip"`` has a query to evaluate (one in the qrels with results).

    When it has none, evaluating must raise ``NoSharedQueriesError`` (trec_eval 10 refuses
    such a run; trec_eval 9 printed ``num_q 0``): that is asserted here, and the caller
    has nothing more to compare.
    """
    if any(docs and qid in qrels for qid, docs in run.items()):
        return True
    with pytest.raises(sb.measures.NoSharedQueriesError, match="shares no query id"):
        evaluate(qrels, run, ["AP"], missing="skip", **kw)
    return False


def per_query(result: sb.EvalResult, names: Iterable[str]) -> dict[str, dict[str, float]]:
    """``{query_id: {measure: value}}`` (pytrec_eval's layout) for the given measures."""
    table = result.per_query
    return {qid: {name: table[name][qid] for name in names} for qid in result.query_ids}
