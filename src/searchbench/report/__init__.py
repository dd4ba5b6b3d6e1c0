"""report layer (see ARCHITECTURE §1): the experiment report as HTML, Markdown and JSON.

:func:`experiment_report` reads an experiment from the results store into an
:class:`ExperimentReport` (one :class:`Group` per evaluation set and level, each with its
:class:`~searchbench.comparison.Comparison`); :meth:`ExperimentReport.write` renders it.
:mod:`.html` (jinja2, inline SVG from :mod:`.plots`) and :mod:`.experiment_md` are the
renderers. Comparisons alone are rendered by :mod:`searchbench.comparison`.
"""

from __future__ import annotations

from .experiment import ExperimentReport, Group, experiment_report
from .experiment_md import TIMING_HEADER, render_markdown, timing_rows
from .html import SECTIONS, render_html

__all__ = [
    "SECTIONS",
    "TIMING_HEADER",
    "ExperimentReport",
    "Group",
    "experiment_report",
    "render_html",
    "render_markdown",
    "timing_rows",
]
