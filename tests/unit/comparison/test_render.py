"""Comparison renderers: marks after correction, best per column, rounding only here."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from rich.console import Console

import searchbench as sb
from searchbench.comparison import (
    compare_results,
    render_latex,
    render_markdown,
    render_terminal,
    tex_escape,
)

QIDS = np.array([f"q{i:02d}" for i in range(20)])


def _result(name: str, values: dict[str, np.ndarray]) -> sb.EvalResult:
    return sb.EvalResult(name, list(values), QIDS, values,
                         {m: float(v.mean()) for m, v in values.items()})


def _cmp():
    base = np.linspace(0.2, 0.6, 20)
    results = {
        "base_line": _result("base_line", {"nDCG@10": base, "RR@10": base}),
        "better": _result("better", {"nDCG@10": base + 0.2, "RR@10": base + 0.001 * (
            np.arange(20) % 2 * 2 - 1)}),
        "worse": _result("worse", {"nDCG@10": base - 0.123456, "RR@10": base}),
    }
    return compare_results(results, baseline="base_line", test="t", correction="bonferroni")


def test_markdown_marks_best_and_rounding() -> None:
    md = render_markdown(_cmp())
    lines = md.splitlines()
    assert lines[0] == "| system | nDCG@10 | RR@10 |"
    assert lines[2].startswith(r"| base\_line (baseline) | 0.4000 |")  # _ is markup
    assert "| better | **0.6000**▲ |" in lines[3]
    assert "| worse | 0.2765▼ |" in lines[4]  # 0.4 − 0.123456, 4 decimals, only here
    assert "| worse | nDCG@10 | -0.1235 | -30.86 |" in md
    assert "bonferroni correction" in md
    assert "0.27654" in render_markdown(_cmp(), decimals=5)


def test_markdown_run_names_are_inert_text() -> None:
    """A run named like markup or a table cell stays one cell of plain text."""
    cmp = _cmp()
    odd = "a|b <img src=x> *c*"
    cmp.systems = [odd if s == "better" else s for s in cmp.systems]
    cmp.means[odd] = cmp.means.pop("better")
    cmp.stats = [dataclasses.replace(r, system=odd) if r.system == "better" else r
                 for r in cmp.stats]
    row = render_markdown(cmp).splitlines()[3]
    assert row.startswith(r"| a\|b &lt;img src=x&gt; \*c\* | ")
    assert row.replace("\\|", "").count("|") == len(cmp.measures) + 2


def test_ties_are_all_best_and_unmarked_when_not_significant() -> None:
    md = render_markdown(_cmp())
    rr_cells = [line.strip("| ").split(" | ")[2] for line in md.splitlines()[2:5]]
    assert rr_cells == ["**0.4000**", "**0.4000**", "**0.4000**"]  # exact tie, p = 1


def test_latex_booktabs() -> None:
    tex = render_latex(_cmp())
    for part in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrr}",
                 r"base\_line (baseline) & 0.4000", r"\textbf{0.6000}$^{\uparrow}$",
                 r"0.2765$^{\downarrow}$", r"$\alpha$"):
        assert part in tex
    assert tex_escape("a_b&c%") == r"a\_b\&c\%"


def test_terminal_output() -> None:
    buf = io.StringIO()
    render_terminal(_cmp(), Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "base_line (baseline)" in out and "0.6000▲" in out and "0.2765▼" in out
    assert "-0.1235" in out and "-30.86" in out


def test_terminal_prints_names_with_brackets_as_text() -> None:
    base = np.linspace(0.2, 0.6, 20)
    names = ["dir[/sub].trec", "[bold]y.trec", "other[/]"]
    results = {n: _result(n, {"[i]nDCG@10": base + 0.1 * k}) for k, n in enumerate(names)}
    cmp = compare_results(results, baseline=names[0], test="t",
                          notes=["run [red]x lacks 1 query"])
    buf = io.StringIO()
    render_terminal(cmp, Console(file=buf, width=300, color_system=None))
    out = buf.getvalue()
    for text in ("dir[/sub].trec (baseline)", "[bold]y.trec", "other[/]", "[i]nDCG@10",
                 "vs dir[/sub].trec", "better/worse than dir[/sub].trec",
                 "note: run [red]x lacks 1 query"):
        assert text in out, text


def test_markdown_escapes_hostile_system_names_and_notes() -> None:
    base = np.linspace(0.2, 0.6, 20)
    names = ['<img src=x onerror="alert(1)">', "a|b", "*bold* [link](javascript:x)",
             "line\nbreak\u2028sep"]
    results = {n: _result(n, {"nDCG@10": base + 0.01 * i}) for i, n in enumerate(names)}
    cmp = compare_results(results, baseline=names[0], test="t", correction="none")
    cmp.notes.append("<script>alert(2)</script>")
    md = render_markdown(cmp)
    assert "<img" not in md and "<script" not in md and "\u2028" not in md
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in md
    assert "\\*bold\\* \\[link\\](javascript:x)" in md and "a\\|b" in md
    table = md.split("\n\n")[0].splitlines()
    pipes = {line.count("|") - line.count("\\|") for line in table}
    assert len(pipes) == 1  # a '|' in a name adds no column


@pytest.mark.parametrize(("test", "says"), [
    ("randomization", "95% Student's t interval of Δ, uncorrected and not from the test"),
    ("wilcoxon", "95% Student's t interval of Δ, uncorrected and not from the test"),
    ("t", "95% Student's t interval of Δ (the test's procedure)"),
    ("bootstrap", "95% bootstrap percentile interval of Δ (the test's resamples)"),
])
def test_legend_names_the_procedure_of_the_interval(test: str, says: str) -> None:
    from scipy import stats

    from searchbench.comparison import legend

    base = np.linspace(0.2, 0.6, 20)
    diff = np.where(np.arange(20) % 3 == 0, -0.05, 0.08)
    cmp = compare_results({"a": _result("a", {"AP": base}), "b": _result("b", {"AP": base + diff})},
                          baseline="a", test=test, correction="none", n_permutations=2000)
    assert f"CI: {says}" in legend(cmp)
    row = cmp.stat("b", "AP")
    if test != "bootstrap":  # what the legend claims: scipy's t interval of the differences
        low, high = stats.t.interval(0.95, len(diff) - 1, diff.mean(), stats.sem(diff))
        assert (row.ci_low, row.ci_high) == pytest.approx((low, high), rel=1e-9)
