"""Validate an evaluation set (``check_evalset``) and describe it (``evalset_stats``).

Errors (``evalset check`` exits 1): judgments for documents not in the corpus, judgments
for unknown queries, queries without judgments (unless marked ``no_answer``), duplicate
ids or judgments, empty texts, evidence quotes not found in their document. An anomaly
that a loader declares part of the published collection (``provenance["known_issues"]``,
e.g. CISI's unjudged queries, which are excluded from evaluation) is reported as a
warning instead.

Warnings: judged queries without any relevant document (every rank measure scores them
0, as trec_eval does; mark them ``"no_answer": true`` if no document answers them);
queries marked ``no_answer`` that have relevant judgments; every query synthetic;
exactly one relevant document for every query (P@k can then never exceed 1/k); fewer
than 50 judged queries, with the smallest nDCG@10 difference such a set can detect
(paired t-test, see :func:`detectable_difference`; a single judged query can show no
difference at all); evidence quotes for unjudged pairs or with another grade than the
judgment; *partial evidence*, a query with quotes for some relevant documents but not
others (chunk-level judgments then leave the unquoted ones unjudged, see
:func:`searchbench.retrieval.chunk_qrels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data import EvalSet, grade_counts
from ..measures import no_relevant_ids

__all__ = ["CheckReport", "Finding", "check_evalset", "detectable_difference", "evalset_stats"]

SMALL_SET = 50
ASSUMED_SD = 0.2


@dataclass(frozen=True)
class Finding:
    """One finding: a stable ``kind`` (e.g. ``doc-not-in-corpus``) and a message."""

    kind: str
    message: str


@dataclass
class CheckReport:
    """Result of :func:`check_evalset`; ``ok`` is False when there is any error."""

    name: str
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "summary": self.summary,
                "errors": [f.__dict__ for f in self.errors],
                "warnings": [f.__dict__ for f in self.warnings]}

    def to_text(self) -> str:
        s = self.summary
        src = ", ".join(f"{k} {v}" for k, v in sorted(s["query_sources"].items()))
        lines = [f"{self.name}: {s['documents']} documents, {s['queries']} queries "
                 f"({s['judged_queries']} judged), {s['judgments']} judgments, "
                 f"{s['evidence']} evidence quotes",
                 f"queries: real {s['real_share']:.0%}, synthetic {s['synthetic_share']:.0%}, "
                 f"verified {s['verified_share']:.0%} ({src})",
                 f"content hash: {s['content_hash']}"]
        if s.get("no_answer_queries"):
            lines.insert(2, f"no_answer: {s['no_answer_queries']} queries marked (left out of "
                            "the measures; --unanswerable zero scores them)")
        lines += [f"error [{f.kind}]: {f.message}" for f in self.errors]
        lines += [f"warning [{f.kind}]: {f.message}" for f in self.warnings]
        verdict = "OK" if self.ok else "FAILED"
        lines.append(f"{verdict}: {len(self.errors)} error(s), {len(self.warnings)} warning(s)")
        return "\n".join(lines)


def detectable_difference(
    n: int, sd: float = ASSUMED_SD, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest mean difference a two-sided paired t-test detects with ``power`` over ``n``.

    ``δ = d_z · sd`` where ``d_z`` solves ``paired_t_power(d_z, n, alpha) = power``
    (:func:`searchbench.stats.effects.paired_t_power`: non-central t with ``n − 1``
    degrees of freedom), and ``sd`` is the standard deviation of the per-query differences
    between the two systems. The default 0.2 is an assumption (a typical spread of
    per-query nDCG@10 differences between two different retrieval systems), not a property
    of the set. ``inf`` when ``n < 2``: a paired test needs two queries.
    """
    from scipy.optimize import brentq  # lazy: loads scipy, numpy on first use

    from ..stats import paired_t_power  # lazy: loads stats on first use

    if n < 2:
        return float("inf")
    high = 1.0
    while paired_t_power(high, n, alpha) < power:
        high *= 2
    d_z = brentq(lambda d: paired_t_power(d, n, alpha) - power, 0.0, high, xtol=1e-12)
    return float(d_z * sd)


def _known(es: EvalSet) -> dict[str, str]:
    return dict(es.provenance.get("known_issues", {}))


def _add(report: CheckReport, known: dict[str, str], kind: str, message: str) -> None:
    if kind in known:
        report.warnings.append(Finding(kind, f"{message} (known: {known[kind]})"))
    else:
        report.errors.append(Finding(kind, message))


def _examples(items: list[str], n: int = 5) -> str:
    more = f", … {len(items) - n} more" if len(items) > n else ""
    return ", ".join(repr(i) for i in items[:n]) + more


def _judgment_errors(es: EvalSet, report: CheckReport, known: dict[str, str]) -> None:
    qrels = es.qrels
    docs = qrels.doc_vocab[qrels.doc_codes]
    qids = qrels.query_ids[qrels.query_codes()]
    corpus_ids = set(es.corpus.ids)
    missing = np.fromiter((d not in corpus_ids for d in qrels.doc_vocab.tolist()), dtype=bool,
                          count=len(qrels.doc_vocab))
    if missing.any():
        rows = missing[qrels.doc_codes]
        pairs = [f"{q}/{d}" for q, d in zip(qids[rows][:5], docs[rows][:5], strict=True)]
        _add(report, known, "doc-not-in-corpus",
             f"{int(rows.sum())} judgments name {int(missing.sum())} documents that are not in "
             f"the corpus (query/doc: {', '.join(pairs)})")
    unknown = [q for q in qrels.query_ids.tolist() if q not in es.queries]
    if unknown:
        _add(report, known, "unknown-query",
             f"judgments for {len(unknown)} queries that are not in the queries file: "
             f"{_examples(unknown)}")
    marked = set(es.queries.no_answer_ids())
    unjudged = [q for q in es.unjudged_query_ids if q not in marked]  # marked: none expected
    if unjudged:
        _add(report, known, "query-without-judgments",
             f"{len(unjudged)} of {len(es.queries)} queries have no judgments: "
             f"{_examples(unjudged)}")


def _text_errors(es: EvalSet, report: CheckReport, known: dict[str, str]) -> None:
    empty_docs = [d.id for d in es.corpus if not d.text.strip() and not d.title.strip()]
    empty_q = [q.id for q in es.queries if not q.text.strip()]
    if empty_docs:
        _add(report, known, "empty-text", f"{len(empty_docs)} documents have no text: "
                                          f"{_examples(empty_docs)}")
    if empty_q:
        _add(report, known, "empty-text", f"{len(empty_q)} queries have no text: "
                                          f"{_examples(empty_q)}")


def _warnings(es: EvalSet, report: CheckReport, sd: float) -> None:
    s = report.summary
    if s["queries"] and s["synthetic_share"] == 1.0:
        report.warnings.append(Finding(
            "all-synthetic", "every query is synthetic: scores measure how well the search "
            "matches the generator's phrasing; add real (human / logs) queries"))
    num_rel = es.qrels.num_rel()
    if len(num_rel) and (num_rel == 1).all():
        report.warnings.append(Finding(
            "one-relevant", "every query has exactly one relevant document: P@k can never "
            "exceed 1/k and Recall@k equals Success@k; judge more documents per query"))
    n = s["judged_queries"]
    if n == 1:
        report.warnings.append(Finding(
            "small-set", "only 1 judged query: a paired t-test needs at least 2, so no "
            f"difference between two systems can be shown significant; {_needed(sd)} "
            f"queries would detect an nDCG@10 difference of 0.05 (α=0.05, power 0.8, "
            f"per-query differences with SD {sd:.2f})"))
    elif 1 < n < SMALL_SET:
        delta = detectable_difference(n, sd)
        report.warnings.append(Finding(
            "small-set", f"only {n} judged queries: a paired t-test (α=0.05, power 0.8) "
            f"detects only nDCG@10 differences of about {delta:.3f} or more, assuming the "
            f"per-query differences between two systems have SD {sd:.2f}; "
            f"{_needed(sd)} queries would detect 0.05"))


def _relevance_warnings(es: EvalSet, report: CheckReport) -> None:
    """Judged queries without any relevant document (scored 0 by every rank measure, as
    trec_eval does) and queries marked ``no_answer`` that have one (a contradiction)."""
    marked = set(es.queries.no_answer_ids())
    judged = es.judged_query_ids
    none = [q for q in no_relevant_ids(es.qrels, judged) if q not in marked]
    if none:
        report.warnings.append(Finding(
            "no-relevant-document", f"{len(none)} of {len(judged)} judged queries have no "
            f"relevant document (no grade ≥ 1): {_listed(none)}; every rank measure scores "
            "them 0, as trec_eval does, which lowers every mean; judge their relevant "
            "documents, or mark them \"no_answer\": true in queries.jsonl if no document "
            "answers them (left out of the measures, --unanswerable zero keeps them)"))
    answered = sorted(marked - set(no_relevant_ids(es.qrels, judged)) & set(judged))
    if answered:
        report.warnings.append(Finding(
            "no-answer-with-relevant", f"{len(answered)} queries marked \"no_answer\": true "
            f"have relevant judgments: {_listed(answered)}; remove the mark or the judgments "
            "(marked queries are left out of the measures)"))


def _listed(ids: list[str], limit: int = 50) -> str:
    """Every id (up to ``limit``), quoted."""
    return _examples(ids, limit)


def _evidence_warnings(es: EvalSet, report: CheckReport) -> None:
    if not es.evidence:
        return
    judged = es.qrels.to_dict()
    unjudged = [e for e in es.evidence if e.doc_id not in judged.get(e.query_id, {})]
    other = [e for e in es.evidence
             if e.doc_id in judged.get(e.query_id, {}) and judged[e.query_id][e.doc_id] != e.grade]
    if unjudged:
        report.warnings.append(Finding(
            "evidence-unjudged", f"{len(unjudged)} evidence quotes are for (query, doc) pairs "
            f"without a judgment: {_examples([f'{e.query_id}/{e.doc_id}' for e in unjudged])}"))
    if other:
        report.warnings.append(Finding(
            "evidence-grade", f"{len(other)} evidence quotes have a grade other than their "
            f"judgment's: {_examples([f'{e.query_id}/{e.doc_id}' for e in other])}"))
    partial = _partial_evidence(judged, es.evidence)
    if partial:
        pairs = [f"{q}/{d}" for q, docs in partial.items() for d in docs]
        report.warnings.append(Finding(
            "partial-evidence", f"{len(partial)} queries have evidence quotes for some "
            f"relevant documents but not for {len(pairs)} others ({_examples(pairs)}): at "
            "chunk level those documents are left unjudged (their chunks count as unjudged; "
            "Judged@k shows it); quote the answer in them too, or judge them non-relevant"))


def _partial_evidence(judged: dict[str, dict[str, int]],
                      evidence: Any) -> dict[str, list[str]]:
    """Query id -> its relevant documents without quotes, for queries quoting others."""
    quoted: dict[str, set[str]] = {}
    for ev in evidence:
        quoted.setdefault(ev.query_id, set()).add(ev.doc_id)
    out: dict[str, list[str]] = {}
    for qid, docs in quoted.items():
        missing = sorted(d for d, g in judged.get(qid, {}).items() if g > 0 and d not in docs)
        if missing:
            out[qid] = missing
    return out


def _needed(sd: float, target: float = 0.05) -> int | str:
    """Queries a paired t-test (α=0.05) needs to detect ``target`` with 80 % power."""
    from ..stats import queries_for_power  # lazy: loads stats on first use

    needed = queries_for_power(target / sd, alpha=0.05, power=0.8) if sd > 0 else 2
    return "too many" if needed is None else needed


def check_evalset(es: EvalSet, *, sd: float = ASSUMED_SD) -> CheckReport:
    """Validate ``es``; load it with ``strict=False`` so load-time problems are listed too."""
    report = CheckReport(es.name, summary=es.provenance_summary())
    known = _known(es)
    for issue in es.issues:
        report.errors.append(Finding(issue.kind, issue.message))
    _judgment_errors(es, report, known)
    _text_errors(es, report, known)
    _warnings(es, report, sd)
    _relevance_warnings(es, report)
    _evidence_warnings(es, report)
    return report


def _dist(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {"n": 0}
    q = np.percentile(values, [50, 90])
    return {"n": len(values), "min": float(values.min()), "median": float(q[0]),
            "mean": float(values.mean()), "p90": float(q[1]), "max": float(values.max())}


def evalset_stats(es: EvalSet) -> dict[str, Any]:
    """Counts, grade distribution, judged/relevant docs per query, text lengths (words)."""
    per_query = np.diff(es.qrels.offsets)
    doc_len = np.fromiter((len(d.text.split()) + len(d.title.split()) for d in es.corpus),
                          dtype=np.int64, count=len(es.corpus))
    q_len = np.fromiter((len(q.text.split()) for q in es.queries), dtype=np.int64,
                        count=len(es.queries))
    return {
        **{k: v for k, v in es.provenance_summary().items() if k != "notes"},
        "grades": grade_counts(es.qrels),
        "judged_per_query": _dist(per_query),
        "relevant_per_query": _dist(es.qrels.num_rel()),
        "query_words": _dist(q_len),
        "document_words": _dist(doc_len),
        "notes": es.provenance.get("notes", []),
    }
