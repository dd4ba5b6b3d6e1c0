"""Renderers of a :class:`~searchbench.comparison.Comparison`.

One table with a row per system and a column per measure: the baseline is marked, each
candidate cell shows its mean followed by ``▲`` (significantly better than the baseline
after correction) or ``▼`` (significantly worse), and the best mean per column is
highlighted (bold). A second table gives, per (candidate, measure): Δ, relative change,
the confidence interval of Δ, raw and corrected p-values, wins/ties/losses, Cohen's d_z
and the queries a paired t-test needs for 80 % power. Values are rounded here only.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._util import md_table, md_text

if TYPE_CHECKING:
    from ._compare import Comparison, PairStat

UP, DOWN = "▲", "▼"
DETAIL_HEADER = ["system", "measure", "Δ", "Δ %", "CI", "p", "p adj", "W/T/L", "d_z", "n80"]


# -- shared pieces --------------------------------------------------------------------------
def format_number(value: float | None, decimals: int) -> str:
    """``value`` rounded to ``decimals``; ``–`` for None/NaN, ``±∞`` for infinities."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–" if value is None or math.isnan(value) else ("∞" if value > 0 else "−∞")
    return f"{value:.{decimals}f}"


def _p(value: float, decimals: int) -> str:
    if math.isnan(value):
        return "–"
    floor = 10.0 ** -decimals
    return f"<{floor:.{decimals}f}" if value < floor else f"{value:.{decimals}f}"


def significance_mark(cmp: Comparison, system: str, measure: str) -> str:
    """``▲``/``▼`` when ``system`` is significantly better/worse than the baseline, else ``""``."""
    if system == cmp.baseline:
        return ""
    return {1: UP, -1: DOWN, 0: ""}[cmp.stat(system, measure).direction]


def _label(cmp: Comparison, system: str) -> str:
    return _label_of(system, system == cmp.baseline)


def _label_of(system: str, baseline: bool) -> str:
    return f"{system} (baseline)" if baseline else system


def judged_header(cmp: Comparison) -> list[str]:
    """``["Judged@10"]`` when the comparison knows its judged coverage, else ``[]``."""
    return [cmp.judged_label] if cmp.judged_label else []


def judged_cells(cmp: Comparison, system: str, decimals: int) -> list[str]:
    """The judged-coverage cell of ``system`` (mean Judged@k), or ``[]`` when unknown."""
    if not cmp.judged_label:
        return []
    return [format_number(cmp.judged.get(system, math.nan), decimals)]


@dataclass(frozen=True)
class MeanCell:
    """One mean of the means table as every renderer shows it."""

    text: str  # the mean, rounded (:func:`format_number`)
    mark: str  # ▲, ▼ or "" (:func:`significance_mark`)
    best: bool  # the best mean of its measure (shown in bold)


@dataclass(frozen=True)
class MeansRow:
    """One system's row of the means table: its label, a cell per measure and its judged
    coverage (empty when unknown) - the one reading of a :class:`Comparison` that the
    Markdown, LaTeX, terminal and HTML tables draw each in their own way."""

    system: str
    baseline: bool
    cells: list[MeanCell]
    judged: list[str]

    @property
    def label(self) -> str:
        return _label_of(self.system, self.baseline)


def means_rows(cmp: Comparison, decimals: int,
               systems: Sequence[str] | None = None) -> list[MeansRow]:
    """The means table's rows of ``systems`` (default: every system, in order)."""
    return [MeansRow(s, s == cmp.baseline,
                     [MeanCell(format_number(cmp.means[s][m], decimals),
                               significance_mark(cmp, s, m), s in cmp.best(m))
                      for m in cmp.measures],
                     judged_cells(cmp, s, decimals))
            for s in (cmp.systems if systems is None else systems)]


def legend(cmp: Comparison) -> str:
    """One sentence saying what the marks mean and how they were obtained."""
    test = {"randomization": f"Fisher randomisation test, {cmp.n_permutations} permutations",
            "bootstrap": f"paired bootstrap, {cmp.n_permutations} resamples",
            "t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test"}[cmp.test]
    return (f"{UP}/{DOWN}: significantly better/worse than {cmp.baseline} "
            f"({test}, {cmp.correction} correction, α = {cmp.alpha:g}, seed {cmp.seed}); "
            f"{len(cmp.query_ids)} queries, missing queries: {cmp.missing}; "
            f"CI: {interval(cmp)}; n80: queries for 80 % power"
            + (f"; {cmp.judged_label}: share of the top {cmp.judged_k} that is judged "
               "(unjudged results count as non-relevant)." if cmp.judged_label else "."))


def interval(cmp: Comparison) -> str:
    """How the CI column was computed (``stats.paired_tests``): the bootstrap's own percentile
    interval, else Student's t interval, which for the randomisation and Wilcoxon tests is a
    different procedure from the test (near α an interval may exclude 0 where p > α)."""
    level = f"{cmp.confidence:.0%}"
    if cmp.test == "bootstrap":
        return f"{level} bootstrap percentile interval of Δ (the test's resamples)"
    if cmp.test == "t":
        return f"{level} Student's t interval of Δ (the test's procedure)"
    return (f"{level} Student's t interval of Δ, uncorrected and not from the test: near α "
            "it may exclude 0 where p > α (the t test uses the same procedure)")


def detail_cells(row: PairStat, decimals: int) -> list[str]:
    """The cells of one row of the details table (unescaped text)."""
    rel = (format_number(100 * row.relative, max(decimals - 2, 1))
           if math.isfinite(row.relative) else "–")
    ci = f"[{format_number(row.ci_low, decimals)}, {format_number(row.ci_high, decimals)}]"
    n80 = "–" if row.queries_needed is None else str(row.queries_needed)
    return [row.system, row.measure, f"{row.delta:+.{decimals}f}", rel, ci,
            _p(row.p_value, decimals), _p(row.p_adjusted, decimals),
            f"{row.wins}/{row.ties}/{row.losses}", format_number(row.effect_size, 2), n80]


def provenance_sentence(cmp: Comparison) -> str:
    """``Queries: 40 real (80 %), 10 synthetic (20 %); 30 verified (60 %).`` ("" when the
    query provenance is unknown)."""
    shares = cmp.provenance_shares()
    if not shares or not shares["total"]:
        return ""
    total = shares["total"]

    def part(group: str) -> str:
        return f"{shares[group]} {group} ({shares[group] / total:.0%})"

    return (f"Queries: {part('real')}, {part('synthetic')}; {part('verified')}, "
            f"{part('unverified')}.")


def provenance_table(cmp: Comparison, decimals: int) -> tuple[list[str], list[list[str]]]:
    """Header and rows (unescaped text) of the main measure by query provenance; no rows
    when the split says nothing new."""
    rows = cmp.provenance_split()
    header = [f"{cmp.measures[0]} by query provenance", "queries",
              *(_label(cmp, s) for s in cmp.systems)]
    return header, [[r.group, str(r.queries),
                     *(format_number(r.means[s], decimals) for s in cmp.systems)]
                    for r in rows]


@dataclass(frozen=True)
class Tables:
    """A comparison read into what its renderers draw (unescaped text): the means table
    (:class:`MeansRow`), the details table (:data:`DETAIL_HEADER`, a row per candidate and
    measure), the legend, the main measure by query provenance (a sentence, a table with no
    rows when it says nothing new) and the notes."""

    measures: list[str]
    judged_header: list[str]
    means: list[MeansRow]
    details: list[list[str]]
    legend: str
    provenance: str
    split_header: list[str]
    split_rows: list[list[str]]
    notes: list[str]


def tables(cmp: Comparison, decimals: int) -> Tables:
    """:class:`Tables` of ``cmp``, values rounded to ``decimals``."""
    split_header, split_rows = provenance_table(cmp, decimals)
    return Tables(list(cmp.measures), judged_header(cmp), means_rows(cmp, decimals),
                  _all_details(cmp, decimals), legend(cmp), provenance_sentence(cmp),
                  split_header, split_rows, list(cmp.notes))


# -- markdown -------------------------------------------------------------------------------
def render_markdown(cmp: Comparison, decimals: int = 4) -> str:
    """GitHub Markdown: the means table, the details table, the legend and notes. Run and
    measure names and notes are inert text (:func:`~searchbench._util.md_text`)."""
    t = tables(cmp, decimals)
    means = [[md_text(row.label),
              *((f"**{c.text}**" if c.best else c.text) + c.mark for c in row.cells),
              *row.judged] for row in t.means]
    header = ["system", *(md_text(m) for m in t.measures), *t.judged_header]
    details = [[md_text(c) if i < 2 else c for i, c in enumerate(cells)] for cells in t.details]
    align = "l" + "r" * (len(t.measures) + len(t.judged_header))
    lines = [md_table(header, means, align, escape=False), "",
             md_table(DETAIL_HEADER, details, "ll" + "r" * 8, escape=False), "",
             md_text(t.legend)]
    if t.provenance:
        lines += ["", md_text(t.provenance)]
    if t.split_rows:
        lines += ["", md_table([md_text(h) for h in t.split_header], t.split_rows,
                               "lr" + "r" * len(cmp.systems), escape=False)]
    lines += [f"Note: {md_text(n)}" for n in t.notes]
    return "\n".join(lines) + "\n"


# -- LaTeX ----------------------------------------------------------------------------------
_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """Escape LaTeX's special characters."""
    return "".join(_TEX.get(c, c) for c in text)


def _tex_cell(cell: MeanCell) -> str:
    text = rf"\textbf{{{cell.text}}}" if cell.best else cell.text
    if cell.mark:
        text += r"$^{\uparrow}$" if cell.mark == UP else r"$^{\downarrow}$"
    return text


def render_latex(cmp: Comparison, decimals: int = 4) -> str:
    """A booktabs ``table``: means per system and measure, best in bold, ↑/↓ marks."""
    caption = tex_escape(legend(cmp))
    for text, tex in ((f"{UP}/{DOWN}", r"$\uparrow$/$\downarrow$"), ("α", r"$\alpha$"),
                      ("Δ", r"$\Delta$")):
        caption = caption.replace(text, tex)
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{caption}}}",
             r"\begin{tabular}{l" + "r" * (len(cmp.measures) + len(judged_header(cmp))) + "}",
             r"\toprule",
             " & ".join(["System", *(tex_escape(m) for m in cmp.measures),
                         *(tex_escape(h) for h in judged_header(cmp))]) + r" \\",
             r"\midrule"]
    for row in means_rows(cmp, decimals):
        cells = [tex_escape(row.label), *(_tex_cell(c) for c in row.cells), *row.judged]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


# -- CSV / JSON -----------------------------------------------------------------------------
def summary_rows(cmp: Comparison) -> list[dict[str, Any]]:
    """A row per (system, measure); the baseline's rows carry no test statistics."""
    rows: list[dict[str, Any]] = []
    label = cmp.judged_label
    for s in cmp.systems:
        for m in cmp.measures:
            row: dict[str, Any] = {"system": s, "measure": m, "mean": cmp.means[s][m],
                                   "baseline": s == cmp.baseline}
            if label:
                row[label] = cmp.judged.get(s, math.nan)
            if s != cmp.baseline:
                stat = cmp.stat(s, m).to_dict()
                stat.pop("system"), stat.pop("measure"), stat.pop("mean")
                row.update(stat)
            rows.append(row)
    return rows


def render_csv(cmp: Comparison, per_query: bool = False) -> str:
    """CSV, unrounded: a row per (system, measure) with its statistics, or the long
    per-query format ``system,query,measure,value``."""
    buf = io.StringIO()
    if per_query:
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["system", "query", "measure", "value"])
        writer.writerows((s, q, m, repr(v)) for s, q, m, v in cmp.per_query_rows())
        return buf.getvalue()
    rows = summary_rows(cmp)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    dict_writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    dict_writer.writeheader()
    dict_writer.writerows({k: _csv_value(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def _csv_value(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return "" if value is None else value


def render_json(cmp: Comparison, indent: int | None = 2) -> str:
    return cmp.to_json(indent=indent)


# -- terminal -------------------------------------------------------------------------------
def _all_details(cmp: Comparison, decimals: int) -> list[list[str]]:
    return [detail_cells(r, decimals) for r in cmp.stats]


def _natural_width(rows: list[list[str]]) -> int:
    """Width of the details table without wrapping: widest cell per column + borders."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(DETAIL_HEADER)]
    return sum(widths) + 3 * len(widths) + 1

def render_terminal(cmp: Comparison, console: Any = None, decimals: int = 4) -> None:
    """Print both tables with rich: baseline dimmed and marked, best per column bold green,
    significant gains green ▲, significant losses red ▼. Run names, measure names and notes
    are escaped: a ``[`` in a file name is text, not rich markup."""
    from rich.console import Console  # lazy: loads rich on first use
    from rich.markup import escape  # lazy: loads rich on first use
    from rich.table import Table  # lazy: loads rich on first use

    if console is None:
        console = Console(highlight=False)
        if not console.is_terminal:  # piped: never wrap numbers; a terminal keeps its width
            width = max(console.width, _natural_width(_all_details(cmp, decimals)))
            console = Console(highlight=False, width=width)
    means = Table(title="Comparison", title_justify="left")
    means.add_column("system")
    for m in cmp.measures:
        means.add_column(escape(m), justify="right")
    for h in judged_header(cmp):
        means.add_column(escape(h), justify="right")
    for system in means_rows(cmp, decimals):
        label = escape(system.label)
        cells = [f"[dim]{label}[/dim]" if system.baseline else label]
        for c in system.cells:
            text = f"[bold green]{c.text}[/bold green]" if c.best else c.text
            colour = "green" if c.mark == UP else "red"
            cells.append(text + (f"[{colour}]{c.mark}[/{colour}]" if c.mark else " "))
        means.add_row(*cells, *system.judged)
    details = Table(title=f"vs {escape(cmp.baseline)}", title_justify="left")
    for i, h in enumerate(DETAIL_HEADER):
        details.add_column(h, justify="left" if i < 2 else "right")
    rows = [[escape(c) for c in cells] for cells in _all_details(cmp, decimals)]
    for r, cells in zip(cmp.stats, rows, strict=True):
        details.add_row(*([*cells[:6], f"[bold]{cells[6]}[/bold]", *cells[7:]]
                          if r.significant else cells))
    console.print(means)
    console.print(details)
    console.print(escape(legend(cmp)), style="dim")
    header, rows = provenance_table(cmp, decimals)
    if provenance_sentence(cmp):
        console.print(escape(provenance_sentence(cmp)))
    if rows:
        split = Table()
        for i, h in enumerate(header):
            split.add_column(escape(h), justify="left" if i == 0 else "right")
        for row in rows:
            split.add_row(*row)
        console.print(split)
    for note in cmp.notes:
        console.print(f"note: {escape(note)}", style="yellow")
