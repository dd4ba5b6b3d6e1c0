"""Plots of the experiment report as inline SVG strings (matplotlib, no pyplot state).

Each function takes a :class:`~searchbench.report.experiment.Group` and returns an
``<svg>`` element; text stays text so the page is searchable (the setup is
:mod:`searchbench._util.plots`, shared with the ANN report).

Names in the plots (systems, retrievers, chunkers, measures) come from configs and
evaluation sets and are untrusted: matplotlib escapes the text it writes into the SVG,
the ``aria-label`` is escaped for its attribute, mathtext is off
(a ``$`` in a name is a dollar sign, not TeX), control characters and lone surrogates are
shown as escapes (:func:`~searchbench._util.visible_text`) and legends get their labels
explicitly (a name starting with ``_`` is still shown).
"""

from __future__ import annotations

import math
from typing import Any

from .._util import visible_text
from .._util.plots import figure, legend, plain_text, save, svg_element

__all__ = ["chunking_svg", "delta_svg", "latency_svg", "main_measure_svg", "recall_svg"]

_PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
            "#8c8c8c", "#ccb974", "#64b5cd"]


def _figure(width: float, height: float) -> Any:
    return figure(width, height)


def _svg(fig: Any, label: str) -> str:
    return svg_element(save(fig, "svg"), label, fixed_size=False)


def _colours(names: list[str]) -> dict[str, str]:
    return {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(names)}


@plain_text
def main_measure_svg(group: Any) -> str:
    """Horizontal bars: mean of the main measure per system with its 95 % t interval."""
    systems = [c.system for c in group.cells]
    stats = [group.mean_ci(s) for s in systems]
    fig = _figure(7.5, 0.9 + 0.32 * len(systems))
    ax = fig.add_subplot()
    y = list(range(len(systems)))[::-1]
    means = [m for m, _, _ in stats]
    err = [[m - lo if math.isfinite(lo) else 0 for m, lo, _ in stats],
           [hi - m if math.isfinite(hi) else 0 for m, _, hi in stats]]
    base = group.comparison.baseline if group.comparison else None
    colours = ["#8c8c8c" if s == base else "#4c72b0" for s in systems]
    ax.barh(y, means, xerr=err, color=colours, capsize=3, height=0.6)
    ax.set_yticks(y, [visible_text(s) for s in systems], fontsize=8)
    ax.set_xlabel(visible_text(f"{group.main} (mean, 95 % CI; grey: baseline)"))
    ax.set_xlim(0, max(1.0, max(hi for _, _, hi in stats if math.isfinite(hi)) if any(
        math.isfinite(hi) for _, _, hi in stats) else 1.0))
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig, f"{group.main} per system")


def _recall_curve(group: Any, c: Any) -> list[float]:
    """The cell's Recall@K curve over the group's queries (``Group.recall_curve``: without
    the queries marked no_answer when the group leaves them out)."""
    curve = getattr(group, "recall_curve", None)
    return list(curve(c)) if callable(curve) else list(c.extras.get("recall_curve", []))


@plain_text
def recall_svg(group: Any) -> str:
    """Recall@K for K = 1…100, one line per system."""
    systems = [c.system for c in group.cells]
    colours = _colours(systems)
    fig = _figure(7.5, 4.2)
    ax = fig.add_subplot()
    for c in group.cells:
        curve = _recall_curve(group, c)
        style = "--" if "/" in c.system and c.chunker != group.cells[0].chunker else "-"
        ax.plot(range(1, len(curve) + 1), curve, style, color=colours[c.system],
                label=visible_text(c.system), linewidth=1.4)
    ax.set_xscale("log")
    ax.set_xlabel("K (log scale)")
    ax.set_ylabel("Recall@K (mean)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    legend(ax, fontsize=7, ncols=2 if len(systems) > 8 else 1, loc="lower right")
    return _svg(fig, "Recall@K curves")


@plain_text
def delta_svg(group: Any, system: str) -> str:
    """Per-query difference of the main measure, ``system`` − baseline, sorted."""
    base = group.comparison.baseline
    m = group.main
    b, c = group.cell(base), group.cell(system)
    deltas = sorted(c.scores[m][q] - b.scores[m][q] for q in group.query_ids)
    fig = _figure(7.5, 3.2)
    ax = fig.add_subplot()
    colours = ["#55a868" if d > 0 else "#c44e52" if d < 0 else "#8c8c8c" for d in deltas]
    ax.bar(range(len(deltas)), deltas, color=colours, width=1.0)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"queries, sorted by Δ ({len(deltas)})")
    ax.set_ylabel(visible_text(f"Δ {m}"))
    ax.set_title(visible_text(f"{system} − {base}"), fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return _svg(fig, f"per-query delta of {system} against {base}")


WORDS = "whitespace-separated words"  # the word unit of BM25 (retrieval.spec.WORDS)


def _unit(group: Any, c: Any) -> str:
    """The unit the size plotted for cell ``c`` is counted in: its token unit (context
    sizes always are; chunk sizes since they are stored as ``mean_unit_tokens``), else
    whitespace words (a cell stored by an older version)."""
    if group.level == "doc" and "mean_unit_tokens" not in c.extras:
        return WORDS
    return str(c.extras.get("token_unit") or WORDS)


def _chunk_point(group: Any, c: Any, cutoff: str) -> tuple[float, float, str]:
    """(size, mean quality, chunker label) of one cell: at doc level the mean indexed unit
    in the cell's token unit, at chunk level the mean context in the top ``cutoff``."""
    if group.level == "chunk":
        x = c.extras.get("context_tokens", {}).get(cutoff, math.nan)
    else:
        x = c.extras.get("mean_unit_tokens", c.extras.get("mean_unit_words", math.nan))
    return x, group.mean_ci(c.system)[0], c.chunker


def _chunk_units(group: Any) -> list[str]:
    """The token units of the group's cells, words first: one panel each."""
    units = list(dict.fromkeys(_unit(group, c) for c in group.cells))
    return sorted(units, key=lambda u: (u != WORDS, u))


@plain_text
def chunking_svg(group: Any, cutoff: str = "10") -> str:
    """Quality against chunk size (doc level: mean size of an indexed chunk) or against
    context size (chunk level: size of the top K), one line per retriever across chunkers,
    and one panel per token unit: BM25 counts whitespace words, a model its own tokens, and
    the two never share an axis."""
    units = _chunk_units(group)
    retrievers = list(dict.fromkeys(c.retriever for c in group.cells))
    colours = _colours(retrievers)
    fig = _figure(7.5, 0.4 + 3.8 * len(units))
    axes = fig.subplots(len(units), 1, squeeze=False)[:, 0]
    for ax, unit in zip(axes, units, strict=True):
        cells = [c for c in group.cells if _unit(group, c) == unit]
        for r in dict.fromkeys(c.retriever for c in cells):
            pts = sorted(_chunk_point(group, c, cutoff) for c in cells if c.retriever == r)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=colours[r],
                    label=visible_text(r))
            for x, y, label in pts:
                ax.annotate(visible_text(label), (x, y), fontsize=6, xytext=(3, 3),
                            textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel(visible_text(
            f"context size: {unit} in the top {cutoff} chunks (mean, log scale)"
            if group.level == "chunk" else
            f"chunk size: {unit} per indexed chunk (mean, log scale)"), fontsize=8)
        ax.set_ylabel(visible_text(f"{group.main} (mean)"))
        ax.grid(alpha=0.3)
        legend(ax, fontsize=7)
    return _svg(fig, "chunk size against quality and context size, one panel per token unit")


@plain_text
def latency_svg(group: Any) -> str:
    """Mean per-query search latency of each cell (batched search time / queries)."""
    systems = [c.system for c in group.cells]
    lat = [c.timings.get("latency_ms", 0.0) for c in group.cells]
    fig = _figure(7.5, 0.9 + 0.3 * len(systems))
    ax = fig.add_subplot()
    y = list(range(len(systems)))[::-1]
    ax.barh(y, lat, color="#8172b3", height=0.6)
    ax.set_yticks(y, [visible_text(s) for s in systems], fontsize=8)
    ax.set_xlabel("search latency per query, ms (batched; query encoding and index excluded)")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig, "latency per cell")
