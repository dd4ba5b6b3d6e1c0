"""Which scored queries can score nothing, and queries marked as having no answer.

A query whose judgments hold no relevant document scores 0 on every rank measure (R, AP,
nDCG, RR, P, Success, Rprec, Bpref) whatever the system returns, as in trec_eval, which
evaluates every query that has judgments: ``qrels.comment.test`` of trec_eval's own test
suite holds such a query (36 judgments, none relevant), and trec_eval's ``num_q`` counts it.
That treatment is kept — the numbers stay trec_eval's — but it silently lowers every mean,
so every table and report says how many such queries were scored (:func:`scored_queries`,
:meth:`ScoredQueries.notes`). A query the qrels do not hold at all is not scored (trec_eval
ignores it; under ``missing="zero"`` only the *qrels'* queries a run lacks count 0).

An evaluation set can mark a query ``"no_answer": true`` (ARCHITECTURE §5.1): its authors
expect no document to answer it. The policy (:data:`searchbench.vocab.UnanswerablePolicy`)
says what happens to a marked query that would be scored: ``skip`` (the default) leaves it
out of every measure (:func:`apply_unanswerable`: its values dropped, the means recomputed
on the other queries), ``zero`` keeps trec_eval's treatment. Either way the count is printed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..vocab import UnanswerablePolicy, canonical_unanswerable
from .evaluator import EvalResult, aggregate
from .spec import parse_measure

if TYPE_CHECKING:
    from ..data import Qrels

__all__ = ["ScoredQueries", "apply_unanswerable", "no_answer_ids", "no_relevant_ids",
           "scored_queries"]

SHOWN = 5


def no_relevant_ids(qrels: Qrels, query_ids: Iterable[str] | np.ndarray,
                    rel: int = 1) -> list[str]:
    """The ids among ``query_ids`` (in their order) that the qrels hold and whose
    judgments have no grade ≥ ``rel`` (ids the qrels do not hold are not scored at all and
    are not listed)."""
    wanted = _id_array(query_ids)
    known = np.asarray(qrels.query_ids)  # sorted
    if not len(wanted) or not len(known):
        return []
    has = np.zeros(qrels.n_queries, dtype=bool)
    has[qrels.query_codes()[qrels.grades >= rel]] = True
    if len(wanted) == len(known) and (wanted is known or np.array_equal(wanted, known)):
        return known[~has].tolist()  # every qrels query scored (as with missing="zero")
    wanted, known = wanted.astype(str), known.astype(str)
    at = np.minimum(np.searchsorted(known, wanted), len(known) - 1)
    held = known[at] == wanted
    return [str(q) for q in wanted[held & ~has[at]]]


def _id_array(ids: Iterable[Any] | np.ndarray) -> np.ndarray:
    """``ids`` as a numpy array (an array as given)."""
    return ids if isinstance(ids, np.ndarray) else np.asarray(list(ids), dtype=object)


def no_answer_ids(queries: Any) -> list[str]:
    """Ids of the queries marked ``no_answer`` in ``queries`` (a
    :class:`~searchbench.data.Queries`; anything else marks none)."""
    found = getattr(queries, "no_answer_ids", None)
    return list(found()) if callable(found) else []


def _some(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN])
    return shown + (f", … {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def _queries(n: int) -> str:
    return f"{n} {'query' if n == 1 else 'queries'}"


@dataclass(frozen=True)
class ScoredQueries:
    """What a table or report says about the scored queries: how many there are, those
    with no relevant document (``no_relevant``, and per higher threshold a measure uses in
    ``no_relevant_at``), and the queries marked ``no_answer`` that ``policy`` left out
    (``skip``) or scored (``zero``)."""

    n_scored: int
    no_relevant: tuple[str, ...] = ()
    unanswerable: tuple[str, ...] = ()
    policy: UnanswerablePolicy = "skip"
    no_relevant_at: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def notes(self) -> list[str]:
        """One sentence per fact worth a reader's attention (none when all is plain)."""
        out = []
        n = len(self.no_relevant)
        if n:
            verb = "has" if n == 1 else "have"
            out.append(f"{_queries(n)} {verb} no relevant document: scored 0, as trec_eval "
                       f"does ({_some(self.no_relevant)}); mark a query \"no_answer\": true "
                       "in queries.jsonl to leave it out")
        for rel, ids in sorted(self.no_relevant_at.items()):
            if len(ids) > n:
                out.append(f"{_queries(len(ids))} {'has' if len(ids) == 1 else 'have'} no "
                           f"document of grade ≥ {rel}: measures with rel={rel} score "
                           f"{'it' if len(ids) == 1 else 'them'} 0, as trec_eval does")
        m = len(self.unanswerable)
        if m and self.policy == "skip":
            out.append(f"{_queries(m)} marked no_answer {'is' if m == 1 else 'are'} left out "
                       f"of the measures ({_some(self.unanswerable)}); --unanswerable zero "
                       f"scores {'it' if m == 1 else 'them'} as trec_eval does")
        elif m:
            out.append(f"{_queries(m)} marked no_answer {'is' if m == 1 else 'are'} scored "
                       f"as trec_eval does (--unanswerable zero; {_some(self.unanswerable)})")
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: counts and ids (counts 0 included: a reader need not guess)."""
        return {"scored": self.n_scored,
                "no_relevant": {"count": len(self.no_relevant),
                                "query_ids": list(self.no_relevant),
                                "treatment": "scored 0, as trec_eval does",
                                **({"by_grade": {str(r): list(v) for r, v in
                                                 sorted(self.no_relevant_at.items())}}
                                   if self.no_relevant_at else {})},
                "no_answer": {"count": len(self.unanswerable),
                              "query_ids": list(self.unanswerable), "policy": self.policy,
                              "treatment": ("left out of the measures" if self.policy == "skip"
                                            else "scored as trec_eval does")}}


def _thresholds(measures: Iterable[Any]) -> list[int]:
    """The relevance thresholds above 1 that ``measures`` (names or parsed) use."""
    found = set()
    for m in measures:
        parsed = parse_measure(m) if isinstance(m, str) else m
        rel = getattr(parsed, "rel", 1) or 1
        if rel > 1:
            found.add(int(rel))
    return sorted(found)


def scored_queries(qrels: Qrels, query_ids: Iterable[str] | np.ndarray,
                   measures: Iterable[Any] = (), marked: Collection[str] = (),
                   policy: str = "skip", kept: Iterable[str] | None = None) -> ScoredQueries:
    """The :class:`ScoredQueries` of queries ``query_ids`` scored against ``qrels`` with
    ``measures``. ``marked``: the ids marked ``no_answer``; ``query_ids`` are the queries
    that were scored (after :func:`apply_unanswerable`), ``kept`` those that would have been
    without the marks (default: ``query_ids`` and the marked ids the qrels hold)."""
    how = canonical_unanswerable(policy)
    scored = _id_array(query_ids)
    return ScoredQueries(
        n_scored=len(scored), no_relevant=tuple(no_relevant_ids(qrels, scored)),
        unanswerable=_unanswerable(qrels, scored, set(marked), kept), policy=how,
        no_relevant_at={rel: tuple(no_relevant_ids(qrels, scored, rel))
                        for rel in _thresholds(measures)})


def _unanswerable(qrels: Qrels, scored: np.ndarray, marks: set[str],
                  kept: Iterable[str] | None) -> tuple[str, ...]:
    """The marked ids among the queries kept (default: ``scored`` and the marked ids the
    qrels hold), in that order."""
    if not marks:
        return ()
    ids = [str(q) for q in scored.tolist()]
    if kept is None:
        held, seen = set(np.asarray(qrels.query_ids).tolist()), set(ids)
        candidates = ids + sorted(q for q in marks if q in held and q not in seen)
    else:
        candidates = [str(q) for q in kept]
    return tuple(q for q in candidates if q in marks)


def apply_unanswerable(result: EvalResult, marked: Collection[str],
                       policy: str = "skip") -> EvalResult:
    """``result`` without the queries in ``marked`` under ``skip`` (means recomputed on the
    other queries, counts summed over them), unchanged under ``zero``."""
    if canonical_unanswerable(policy) == "zero" or not marked:
        return result
    keep = ~np.isin(np.asarray(result.query_ids, dtype=object), list(marked))
    if keep.all():
        return result
    scores = {m: v[keep] for m, v in result.scores.items()}
    mean = {m: aggregate(scores[m], parse_measure(m)) for m in result.measures}
    return replace(result, query_ids=result.query_ids[keep], scores=scores, mean=mean,
                   _per_query=None)
