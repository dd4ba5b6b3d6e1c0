"""Markdown rendering of an :class:`~searchbench.report.experiment.ExperimentReport`."""

from __future__ import annotations

from typing import Any

from .._util import md_table, md_text
from ..comparison import render_markdown as comparison_markdown

__all__ = ["render_markdown", "timing_rows", "truncation_notes"]


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A pipe table and a blank line; cells are escaped by the caller (names, texts and ids
    with :func:`md_text`), numbers are used as they are."""
    return [md_table(header, rows, escape=False), ""]


def timing_rows(group: Any, decimals: int = 1) -> list[list[str]]:
    """``system, index s, query encoding s (cache), search s, search ms/query, queries/s,
    context tokens@10`` per cell (tokens in the cell's unit: model tokens, or words for
    BM25). Search excludes the query encoding, which is shown apart
    with how many query embeddings came from the cache (cache reads are not model speed)."""
    rows = []
    for c in group.cells:
        t = c.timings
        ctx = c.extras.get("context_tokens", {}).get("10")
        rows.append([c.system, f"{t.get('index_s', 0):.{decimals}f}", _encoding(c, decimals),
                     f"{t.get('search_s', 0) + t.get('fuse_s', 0):.{decimals + 1}f}",
                     f"{t.get('latency_ms', 0):.{decimals + 1}f}", f"{t.get('qps', 0):.0f}",
                     "–" if ctx is None else
                     f"{ctx:.0f} ({c.extras.get('token_unit', 'whitespace-separated words')})"])
    return rows


TIMING_HEADER = ["system", "index s", "query encoding s (cache)", "search s",
                 "search ms/query", "queries/s (search)", "context tokens@10"]


def _retriever_parts(cell: Any) -> list[dict[str, Any]]:
    """The run metadata of a cell's retriever, or of each component of a hybrid."""
    described = cell.provenance.get("retriever", {}) or {}
    return list(described.get("components") or [described])


def _encoding(cell: Any, decimals: int) -> str:
    """Query encoding seconds and cache use, e.g. ``0.01 (38/38 cached)``; ``–`` if none."""
    parts = [p["query_encoding"] for p in _retriever_parts(cell) if p.get("query_encoding")]
    if not parts:
        return "–"
    seconds = cell.timings.get("encode_s", sum(p["seconds"] for p in parts))
    cached = sum(p["cached"] for p in parts)
    total = sum(p["queries"] for p in parts)
    return f"{seconds:.{decimals + 1}f} ({cached}/{total} cached)"


def truncation_notes(group: Any) -> list[str]:
    """One sentence per cell whose model truncated units (``LengthReport.message``)."""
    from ..retrieval import LengthReport  # lazy: loads retrieval on first use

    notes = []
    for c in group.cells:
        for part in _retriever_parts(c):
            info = part.get("truncation")
            if info and info.get("truncated"):
                fields = {k: info[k] for k in LengthReport.__dataclass_fields__ if k in info}
                notes.append(f"{c.system}: {LengthReport(**fields).message()}")
    return notes


def _wins_losses(group: Any, decimals: int) -> list[str]:
    best = group.best_candidate()
    if best is None:
        return []
    wl = group.wins_losses(best)
    out = [f"Biggest differences of **{md_text(best)}** against "
           f"**{md_text(group.comparison.baseline)}** on {md_text(group.main)} "
           "(rank of the first relevant result in each):", ""]
    header = ["query", "text", "Δ", "rank (baseline)", f"rank ({best})"]
    for kind in ("wins", "losses"):
        rows = [[md_text(r["query_id"]), md_text(r["text"]), f"{r['delta']:+.{decimals}f}",
                 r["baseline_rank"] or "–", r["system_rank"] or "–"] for r in wl[kind]]
        out += [f"*{kind}*", "", *_table(header, rows)]
    return out


def _provenance(report: Any) -> list[str]:
    out = ["## Evaluation set and provenance", ""]
    for spec, ev in report.provenance.get("evalsets", {}).items():
        s = ev["summary"]
        out.append(f"- **{md_text(spec)}** ({md_text(s['name'])}): {s['documents']} documents, "
                   f"{s['queries']} queries ({s['judged_queries']} judged), "
                   f"{s['judgments']} judgments, {s['evidence']} evidence quotes; "
                   f"real {s['real_share']:.0%}, synthetic {s['synthetic_share']:.0%}, "
                   f"verified {s['verified_share']:.0%}; hash {md_text(s['content_hash'])}")
        for f in ev["errors"]:
            out.append(f"  - error \\[{md_text(f['kind'])}\\]: {md_text(f['message'])}")
        for f in ev["warnings"]:
            out.append(f"  - warning \\[{md_text(f['kind'])}\\]: {md_text(f['message'])}")
        if not ev["errors"] and not ev["warnings"]:
            out.append("  - evalset check: no errors, no pitfall warnings")
    libs = report.provenance.get("libraries", {})
    out.append("- libraries: " + md_text(", ".join(f"{k} {v}" for k, v in libs.items() if v)))
    git = report.provenance.get("git")
    out.append(f"- git: {md_text(git['commit'])}{' (dirty)' if git['dirty'] else ''}" if git
               else "- git: the config is not in a git repository")
    models = sorted({c.provenance.get("retriever", {}).get("identity", "")
                     for g in report.groups for c in g.cells} - {""})
    if models:
        out.append("- models: " + ", ".join(md_text(m) for m in models))
    return [*out, ""]


def render_markdown(report: Any, decimals: int = 4) -> str:
    """The whole report as GitHub Markdown (the plots are in the HTML report)."""
    cfg = report.config
    lines = [f"# Experiment: {md_text(report.name)}", "",
             md_text(f"Store {report.store_path} · generated {report.created} · measures "
                     f"{', '.join(cfg['measures'])} · k={cfg['k']} · test {cfg['test']}, "
                     f"correction {cfg['correction']}, seed {cfg['seed']}"), ""]
    if report.missing:
        lines += [f"**Incomplete:** {len(report.missing)} cells of the config are not in "
                  f"the store yet: {md_text(', '.join(report.missing))}", ""]
    for g in report.groups:
        lines += [f"## {md_text(g.title)}", ""]
        lines += [f"**Truncated:** {md_text(n)}" for n in truncation_notes(g)]
        lines += [""] if truncation_notes(g) else []
        if g.comparison is not None:  # its notes include the group's
            lines += [comparison_markdown(g.comparison, decimals), ""]
            lines += _wins_losses(g, decimals)
        else:
            lines += [*(f"Note: {md_text(n)}" for n in g.notes), *([""] if g.notes else [])]
        lines += ["### Latency, throughput and context size", ""]
        timings = [[md_text(r[0]), *r[1:-1], md_text(r[-1])] for r in timing_rows(g)]
        lines += _table(TIMING_HEADER, timings)
    lines += _provenance(report)
    return "\n".join(lines)
