"""Compare systems against a baseline: evaluate every run, then test every pair.

:func:`compare` (qrels + runs) and :func:`compare_results` (already evaluated runs) return a
:class:`Comparison`: means, per-query scores and one :class:`PairStat` per (candidate,
measure), as plain public data. :mod:`.render` draws it as Markdown, LaTeX, CSV, JSON or a
rich terminal table. This layer sits above ``measures`` (it evaluates) and ``stats`` (it
tests); ``stats`` knows nothing of runs or renderers.
"""

from __future__ import annotations

from ._compare import (
    Comparison,
    PairStat,
    compare,
    compare_results,
    coverage_message,
    query_coverage,
)
from .render import (
    DETAIL_HEADER,
    DOWN,
    UP,
    MeanCell,
    MeansRow,
    Tables,
    detail_cells,
    format_number,
    judged_header,
    legend,
    means_rows,
    provenance_sentence,
    provenance_table,
    render_csv,
    render_json,
    render_latex,
    render_markdown,
    render_terminal,
    summary_rows,
    tables,
    tex_escape,
)

__all__ = [
    "DETAIL_HEADER",
    "DOWN",
    "UP",
    "Comparison",
    "MeanCell",
    "MeansRow",
    "PairStat",
    "Tables",
    "compare",
    "compare_results",
    "coverage_message",
    "detail_cells",
    "format_number",
    "judged_header",
    "legend",
    "means_rows",
    "provenance_sentence",
    "provenance_table",
    "query_coverage",
    "render_csv",
    "render_json",
    "render_latex",
    "render_markdown",
    "render_terminal",
    "summary_rows",
    "tables",
    "tex_escape",
]
