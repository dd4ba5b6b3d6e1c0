"""Explore mode: two runs side by side per query, the per-query difference of a measure,
queries sorted by the biggest loss, unjudged documents ("holes") judged inline.

Not blind: this is analysis, so the systems are named and the set's own judgments shown.
A document's grade is the evaluation set's qrels grade if it has one, else the viewer's own
latest label from the store; the per-query values are recomputed with those labels on every
page load, so judging a hole changes the numbers at once (``judge export`` makes them part
of the set).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...data import Qrels, Run
from ...errors import SearchbenchWarning
from ...measures import evaluate
from ._requests import one_param
from .context import ExploreData, JudgingContext

if TYPE_CHECKING:
    from .app import JudgingApp, Principal

__all__ = ["explore_data", "explore_routes", "labelled_qrels", "query_rows"]


def explore_data(runs: list[Run], names: list[str], measure: str,
                 depth: int = 10) -> ExploreData:
    """The runs to compare; ``measure`` is checked now (an unknown one is an error)."""
    data = ExploreData(runs, names, measure, depth)
    _per_query(Qrels.from_dict({"q": {"d": 1}}), Run.from_dict({"q": {"d": 1.0}}), measure)
    return data


def _per_query(qrels: Qrels, run: Run, measure: str) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SearchbenchWarning)  # queries absent from one side
        result = evaluate(qrels, run, measure)
    return next(iter(result.per_query.values()))


def labelled_qrels(ctx: JudgingContext, annotator: str) -> dict[str, dict[str, tuple[int, str]]]:
    """``{query: {doc: (grade, "qrels" | "you")}}``: the set's qrels, holes filled by the
    viewer's own latest (non-skip) labels."""
    out: dict[str, dict[str, tuple[int, str]]] = {}
    for j in ctx.store.judgments(annotator=annotator, include_skips=False):
        assert j.grade is not None
        out.setdefault(j.query_id, {})[j.doc_id] = (j.grade, "you")
    if ctx.qrels is not None:
        for qid, docs in ctx.qrels.to_dict().items():
            out.setdefault(qid, {}).update({d: (g, "qrels") for d, g in docs.items()})
    return out


@dataclass(frozen=True)
class QueryRow:
    """One query of the explore table."""

    query_id: str
    text: str
    values: tuple[float | None, float | None]
    holes: int

    @property
    def delta(self) -> float | None:
        a, b = self.values
        return None if a is None or b is None else b - a


def query_rows(ctx: JudgingContext, annotator: str) -> list[QueryRow]:
    """Every query either run answers, biggest loss of the second run first (queries without
    any judgment last)."""
    ex = ctx.explore
    assert ex is not None
    labels = labelled_qrels(ctx, annotator)
    qrels = Qrels.from_dict({q: {d: g for d, (g, _) in docs.items()}
                             for q, docs in labels.items() if docs})
    values = [_per_query(qrels, run, ex.measure) if len(qrels) else {} for run in ex.runs]
    rows = []
    for qid in _query_ids(ctx):
        judged = labels.get(qid, {})
        holes = len({d for d in ctx.explore_docs(qid) if d not in judged})
        vals = tuple(v.get(qid) if judged else None for v in values)
        rows.append(QueryRow(qid, ctx.queries[qid].text, (vals[0], vals[1]), holes))
    return sorted(rows, key=lambda r: (r.delta is None, r.delta or 0.0, r.query_id))


def _query_ids(ctx: JudgingContext) -> list[str]:
    ex = ctx.explore
    assert ex is not None
    answered = {q for run in ex.runs for q in run.query_ids.tolist()}
    return [q for q in ctx.queries.ids if q in answered]


def side_by_side(ctx: JudgingContext, qid: str, annotator: str) -> list[list[dict[str, Any]]]:
    """Per run, its top documents with their grade (or none: a hole) and text."""
    ex = ctx.explore
    assert ex is not None
    judged = labelled_qrels(ctx, annotator).get(qid, {})
    tops = [[d for d, _ in run.ranking(qid)[: ex.depth]] for run in ex.runs]
    both = set(tops[0]) & set(tops[1])
    columns = []
    for top in tops:
        column = []
        for rank, did in enumerate(top, 1):
            doc = ctx.corpus.get(did)
            grade, source = judged.get(did, (None, ""))
            column.append({"rank": rank, "doc_id": did, "in_both": did in both,
                           "title": doc.title if doc else "", "known": doc is not None,
                           "text": doc.text if doc else "", "grade": grade,
                           "source": source})
        columns.append(column)
    return columns


def explore_routes(web: JudgingApp) -> list[Route]:
    """``/explore`` (the queries) and ``/explore/query?q=ID`` (one query side by side)."""

    async def queries_page(request: Request, who: Principal) -> Response:
        rows = await run_in_threadpool(query_rows, web.ctx, who.name)
        return web.render("explore.html.j2", {"rows": rows, "ex": web.ctx.explore,
                                              "annotator": who.name, "csrf": who.csrf or ""})

    async def query_page(request: Request, who: Principal) -> Response:
        qid = one_param(request, "q", "query id")
        if qid not in web.ctx.queries:  # looked up, never used as a path
            return web.render("message.html.j2", {"message": "No such query.",
                                                  "csrf": who.csrf or ""}, 404)
        columns = await run_in_threadpool(side_by_side, web.ctx, qid, who.name)
        rows = await run_in_threadpool(query_rows, web.ctx, who.name)
        row = next((r for r in rows if r.query_id == qid), None)
        return web.render("explore_query.html.j2", {
            "query": web.ctx.queries[qid], "columns": columns, "row": row,
            "ex": web.ctx.explore, "annotator": who.name, "csrf": who.csrf or "",
            "grades": (0, 1, 2, 3)})

    return [Route("/explore", web.page(queries_page)),
            Route("/explore/query", web.page(query_page))]
