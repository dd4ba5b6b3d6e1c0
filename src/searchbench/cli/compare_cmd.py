"""``searchbench compare``: paired significance tests against a baseline, and a CI gate."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path

import typer

from ..errors import ConfigError
from ._output import DECIMALS_OPTION, QUIET_OPTION, console, print_json, reported_warnings
from .main import app

DEFAULT_MEASURES = ["nDCG@10", "RR@10", "R@100"]


class CompareFormat(StrEnum):
    """Renderings of a comparison (``searchbench.report.comparison``)."""

    table = "table"
    markdown = "markdown"
    latex = "latex"
    json = "json"
    csv = "csv"


def _split(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated option values, in order, without duplicates."""
    out: list[str] = []
    for value in values or []:
        out += [v.strip() for v in value.split(",") if v.strip() and v.strip() not in out]
    return out


def _canonical(names: list[str]) -> list[str]:
    """Canonical measure names (``ndcg_cut.10`` → ``nDCG@10``), without duplicates."""
    from ..measures import parse_measure

    return list(dict.fromkeys(parse_measure(n).name for n in names))


def _baseline_name(baseline: str | None, runs: list[Path], names: list[str]) -> str | None:
    """The run name of ``--baseline``: given as one of the RUN paths or as a run name."""
    if baseline is None:
        return None
    for path, name in zip(runs, names, strict=True):
        if baseline in (str(path), name) or Path(baseline) == path:
            return name
    try:
        target = Path(baseline).resolve(strict=True)
    except OSError:
        target = None
    for path, name in zip(runs, names, strict=True):
        if target is not None and path.resolve() == target:
            return name
    raise ConfigError(f"baseline {baseline!r} is not among the runs ({', '.join(names)}); "
                      "pass one of the RUN files to --baseline")


def _check_coverage(qrels, runs, missing: str | None) -> None:
    """Runs over different query sets need an explicit ``--missing`` policy."""
    from ..stats.compare import coverage_message

    message = coverage_message(qrels, runs) if missing is None else None
    if message:
        raise ConfigError(f"{message}; choose a policy: --missing zero scores a run's missing "
                          "queries 0 (trec_eval -c), --missing skip compares on the queries "
                          "every run answers")


def _render(cmp, output_format: CompareFormat, decimals: int, per_query: bool) -> None:
    from ..report.comparison import render_terminal

    if per_query and output_format not in (CompareFormat.csv, CompareFormat.json):
        raise ConfigError("--per-query needs --format csv or --format json")
    if output_format is CompareFormat.table:
        render_terminal(cmp, console=None if not sys.stdout.isatty() else console(),
                        decimals=decimals)
    elif output_format is CompareFormat.markdown:
        sys.stdout.write(cmp.to_markdown(decimals=decimals))
    elif output_format is CompareFormat.latex:
        sys.stdout.write(cmp.to_latex(decimals=decimals))
    elif output_format is CompareFormat.csv:
        sys.stdout.write(cmp.to_csv(per_query=per_query))
    else:
        data = cmp.to_dict()
        if per_query:
            data["per_query"] = [dict(zip(("system", "query", "measure", "value"), row,
                                          strict=True)) for row in cmp.per_query_rows()]
        print_json(data)


def _gate(cmp, fail_if_worse: list[str], min_delta: float) -> None:
    """Exit 1 with one line per regression when a candidate is significantly worse."""
    worse = cmp.regressions(fail_if_worse, min_delta=min_delta)
    for r in worse:
        print(f"regression: {r.system} is significantly worse than {cmp.baseline} on "
              f"{r.measure}: Δ = {r.delta:+.4f} (min delta {min_delta:g}), adjusted "
              f"p = {r.p_adjusted:.4g} < {cmp.alpha:g} ({cmp.test}, {cmp.correction})",
              file=sys.stderr)
    if worse:
        raise typer.Exit(1)


@app.command("compare")
def compare_command(
    qrels: Path = typer.Argument(..., help="Qrels file: TREC or BEIR .tsv; .gz ok."),
    runs: list[Path] = typer.Argument(..., help="Two or more TREC run files; .gz ok."),
    baseline: str | None = typer.Option(
        None, "--baseline", "-b", help="The run the others are tested against (one of the "
                                       "RUN files; default: the first)."),
    measure: list[str] = typer.Option(
        None, "--measure", "-m", help="Measure(s), repeated or comma-separated "
                                      f"(default: {' '.join(DEFAULT_MEASURES)})."),
    test: str = typer.Option("randomization", "--test", "-t",
                             help="Paired test: randomization, t, wilcoxon or bootstrap."),
    correction: str = typer.Option(
        "holm", "--correction", "-c",
        help="Multiple-comparison correction over all (system, measure) pairs: holm, "
             "bonferroni, bh or none."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level after correction."),
    permutations: int = typer.Option(
        10_000, "--permutations", "-n", min=1,
        help="Sign flips (randomization) or resamples (bootstrap)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the resampling tests."),
    missing: str | None = typer.Option(
        None, "--missing",
        help="Runs that lack qrels queries: 'zero' scores them 0 (trec_eval -c), 'skip' "
             "compares on the queries every run answers. Required when the runs cover "
             "different query sets; default otherwise: zero."),
    depth: int | None = typer.Option(None, "--depth", "-M", min=1,
                                     help="Evaluate only the top N of each query."),
    keep: str | None = typer.Option(None, "--keep",
                                    help="Duplicate (query, doc) lines: 'max' or 'first'."),
    fail_if_worse: list[str] = typer.Option(
        None, "--fail-if-worse", help="Exit 1 if a candidate is significantly worse than the "
                                      "baseline on any of these measures (comma-separated)."),
    min_delta: float = typer.Option(
        0.0, "--min-delta", min=0.0,
        help="With --fail-if-worse: a significant drop smaller than this still passes."),
    per_query: bool = typer.Option(
        False, "--per-query", help="csv/json: the long per-query format "
                                   "(system, query, measure, value)."),
    output_format: CompareFormat = typer.Option(CompareFormat.table, "--format", "-f",
                                                help="Output format."),
    decimals: int = DECIMALS_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Compare runs against a baseline with paired significance tests.

    Example: searchbench compare qrels.txt bm25.trec dense.trec --baseline bm25.trec
    -m nDCG@10 -m RR@10 --test randomization --correction holm
    """
    from ..data.qrels import Qrels
    from ..data.run import Run
    from ..stats.compare import compare
    from ..stats.corrections import correction_name
    from ..stats.paired import test_name
    from ._output import run_name

    test, correction = test_name(test), correction_name(correction)  # fail before loading
    gate = _canonical(_split(fail_if_worse))
    measures = _canonical(_split(measure) or DEFAULT_MEASURES)
    measures += [m for m in gate if m not in measures]  # the gate's measures are compared too
    names = list(dict.fromkeys(run_name(p, runs) for p in runs))
    if len(names) < 2:
        raise ConfigError(f"compare needs at least 2 different runs, got {len(names)}: "
                          f"{', '.join(names)}; pass the baseline and at least one candidate")
    base = _baseline_name(baseline, runs, names)
    with reported_warnings(quiet):
        judged = Qrels.from_file(qrels, keep=keep)
        loaded = {n: Run.from_file(p, name=n, keep=keep) for n, p in zip(names, runs, strict=True)}
        _check_coverage(judged, loaded, missing)
        cmp = compare(judged, loaded, measures, baseline=base, test=test, correction=correction,
                      alpha=alpha, seed=seed, n_permutations=permutations,
                      missing=missing or "zero", depth=depth)
    _render(cmp, output_format, decimals, per_query)
    if cmp.notes and not quiet and output_format in (CompareFormat.csv, CompareFormat.latex):
        for note in cmp.notes:
            print(f"note: {note}", file=sys.stderr)
    if gate:
        _gate(cmp, gate, min_delta)
