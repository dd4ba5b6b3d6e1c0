"""The experiment report as one self-contained HTML file (jinja2 template, inline SVG plots).

No script, stylesheet, font or image is loaded from anywhere: the file opens offline.
Every value is escaped by Jinja2's autoescaping (``autoescape=True``: the template's
``.html.j2`` name would escape nothing under ``select_autoescape``); only the SVG plots of
:mod:`.plots`, escaped there, are inserted as markup. A Content-Security-Policy forbids
every script, so an escaping mistake could still not run code.
Sections (element ids): ``overview``, ``comparison``, ``main-measure``, ``recall``,
``per-query``, ``chunking``, ``latency``, ``provenance``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..comparison import DETAIL_HEADER, DOWN, UP, format_number, tables
from ..errors import require
from . import plots
from .experiment_md import TIMING_HEADER, timing_rows, truncation_notes

__all__ = ["SECTIONS", "render_html"]

SECTIONS = ("overview", "comparison", "main-measure", "recall", "per-query", "chunking",
            "latency", "provenance")
TEMPLATES = Path(__file__).resolve().parent / "templates"


def _means_table(group: Any, decimals: int) -> dict[str, Any]:
    t = tables(group.comparison, decimals)
    rows = [{"system": row.system, "baseline": row.baseline, "judged": row.judged,
             "cells": [{"text": c.text, "mark": c.mark, "best": c.best,
                        "cls": {UP: "up", DOWN: "down"}.get(c.mark, "")} for c in row.cells]}
            for row in t.means]
    return {"measures": t.measures, "judged_header": t.judged_header, "rows": rows,
            "detail_header": DETAIL_HEADER, "details": t.details, "legend": t.legend,
            "notes": t.notes, "provenance": t.provenance,
            "split": {"header": t.split_header, "rows": t.split_rows}}


def _group_view(group: Any, decimals: int) -> dict[str, Any]:
    best = group.best_candidate()
    view: dict[str, Any] = {
        "title": group.title, "anchor": group.anchor, "main": group.main,
        "level": group.level, "n_queries": len(group.query_ids),
        "table": _means_table(group, decimals) if group.comparison else None,
        "main_svg": plots.main_measure_svg(group),
        "recall_svg": plots.recall_svg(group),
        "chunking_svg": plots.chunking_svg(group),
        "latency_svg": plots.latency_svg(group),
        "timing_header": TIMING_HEADER, "timings": timing_rows(group),
        "truncation": truncation_notes(group), "notes": group.notes,
        "best": best, "baseline": group.comparison.baseline if group.comparison else None,
        "chunkers": list(dict.fromkeys(c.chunker for c in group.cells)),
    }
    if best:
        view["delta_svg"] = plots.delta_svg(group, best)
        view["wins_losses"] = group.wins_losses(best)
    return view


def _models(report: Any) -> list[str]:
    ids = {c.provenance.get("retriever", {}).get("identity", "") for g in report.groups
           for c in g.cells}
    for g in report.groups:
        for c in g.cells:
            for comp in c.provenance.get("retriever", {}).get("components", []):
                ids.add(comp.get("identity", ""))
    return sorted(ids - {""})


def render_html(report: Any, decimals: int = 4) -> str:
    """Render ``report`` (an ExperimentReport) to a standalone HTML page."""
    jinja2 = require("jinja2", "report")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = lambda v, d=decimals: format_number(v, d)
    template = env.get_template("experiment.html.j2")
    return template.render(
        report=report, cfg=report.config, prov=report.provenance,
        groups=[_group_view(g, decimals) for g in report.groups], decimals=decimals,
        evalsets=report.provenance.get("evalsets", {}), models=_models(report),
        sections=SECTIONS)
