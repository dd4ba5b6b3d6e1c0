"""``searchbench compare``: paired significance tests against a baseline, and a CI gate."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import click

from ..errors import ConfigError
from ..vocab import DEFAULT_MEASURES, DEFAULT_STATS, MAX_RESAMPLES
from ._output import (
    DECIMALS_OPTION,
    QUIET_OPTION,
    UNANSWERABLE_OPTION,
    UsageError,
    console,
    format_option,
    load_queries,
    paths,
    print_json,
    reported_warnings,
    run_name,
    unanswerable_marks,
    vocab_option,
)


def _measure_names(values: Sequence[str] | None) -> list[str]:
    """Canonical names of repeated / comma-separated measures, trec_eval's ``P.5,10``
    included (``ndcg_cut.10`` → ``nDCG@10``), in order, without duplicates."""
    from ..measures import parse_measures  # lazy: cli start-up (measures, numpy)

    return [m.name for m in parse_measures(values)] if values else []


def _run_names(runs: list[Path]) -> list[str]:
    """A name per RUN file; a file given twice is an error."""
    if len(runs) < 2:
        raise UsageError(f"compare needs at least 2 different runs, got {len(runs)}: "
                          f"{', '.join(map(str, runs))}; pass the baseline and at least "
                          "one candidate")
    seen: dict[Path, Path] = {}
    for path in runs:
        key = path.resolve()
        if key in seen:
            raise UsageError(f"run file {str(path)!r} is given twice"
                              + (f" (as {str(seen[key])!r})" if seen[key] != path else "")
                              + "; pass each run once")
        seen[key] = path
    return [run_name(p, runs) for p in runs]


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
    raise UsageError(f"baseline {baseline!r} is not among the runs ({', '.join(names)}); "
                      "pass one of the RUN files to --baseline")


def _check_coverage(qrels, runs, missing: str | None) -> None:
    """Runs over different query sets need an explicit ``--missing`` policy."""
    from ..comparison import coverage_message  # lazy: cli start-up (comparison, numpy)

    message = coverage_message(qrels, runs) if missing is None else None
    if message:
        raise ConfigError(f"{message}; choose a policy: --missing zero scores a run's missing "
                          "queries 0 (trec_eval -c), --missing skip compares on the queries "
                          "every run answers")


def _compare(qrels: Path, files: dict[str, Path], measures: list[str], *,
             missing: str | None, keep: str | None, quiet: bool,
             queries: Path | None = None, unanswerable: str | None = None, **settings):
    """Load the qrels and runs, check their query coverage, and compare them."""
    from ..comparison import compare  # lazy: cli start-up (comparison, numpy)
    from ..data import Qrels, Run  # lazy: cli start-up (data, numpy)

    policy = keep
    with reported_warnings(quiet):
        found = load_queries(queries)
        unanswerable_marks(found, unanswerable)  # --unanswerable needs --queries
        judged = Qrels.from_file(qrels, keep=policy)
        loaded = {n: Run.from_file(p, name=n, keep=policy) for n, p in files.items()}
        _check_coverage(judged, loaded, missing)
        return compare(judged, loaded, measures, missing=missing or "zero", queries=found,
                       unanswerable=unanswerable or "skip", **settings)


def _render(cmp, output_format: str, decimals: int, per_query: bool,
            quiet: bool) -> None:
    from ..comparison import render_terminal  # lazy: cli start-up (comparison, numpy)

    if output_format == "table":
        render_terminal(cmp, console=None if not sys.stdout.isatty() else console(),
                        decimals=decimals)
    elif output_format == "markdown":
        sys.stdout.write(cmp.to_markdown(decimals=decimals))
    elif output_format == "latex":
        sys.stdout.write(cmp.to_latex(decimals=decimals))
    elif output_format == "csv":
        sys.stdout.write(cmp.to_csv(per_query=per_query))
    else:
        data = cmp.to_dict()
        if per_query:
            data["per_query"] = [dict(zip(("system", "query", "measure", "value"), row,
                                          strict=True)) for row in cmp.per_query_rows()]
        print_json(data)
    if cmp.notes and not quiet and output_format in ("csv", "latex"):
        for note in cmp.notes:  # the other formats show the notes themselves
            print(f"note: {note}", file=sys.stderr)


def _gate(cmp, fail_if_worse: list[str], min_delta: float) -> None:
    """Exit 1 with one line per regression when a candidate is significantly worse."""
    worse = cmp.regressions(fail_if_worse, min_delta=min_delta)
    for r in worse:
        print(f"regression: {r.system} is significantly worse than {cmp.baseline} on "
              f"{r.measure}: Δ = {r.delta:+.4f} (min delta {min_delta:g}), adjusted "
              f"p = {r.p_adjusted:.4g} < {cmp.alpha:g} ({cmp.test}, {cmp.correction})",
              file=sys.stderr)
    if worse:
        raise SystemExit(1)


QRELS_ARGUMENT = click.argument("qrels", type=paths(),
                                help="Qrels file: TREC or BEIR .tsv; .gz ok.")
RUNS_ARGUMENT = click.argument("runs", nargs=-1, required=True, type=paths(),
                               help="Two or more TREC run files; .gz ok.")
BASELINE_OPTION = click.option(
    "--baseline", "-b",
    help="The run the others are tested against (one of the RUN files; default: the first).")
MEASURE_OPTION = click.option(
    "--measure", "-m", multiple=True, metavar="MEASURE",
    help="Measure(s), repeated or comma-separated, trec_eval names and cutoff lists (P.5,10) "
         f"included (default: {' '.join(DEFAULT_MEASURES)}).")
TEST_OPTION = vocab_option(DEFAULT_STATS.test, "--test", "-t", concept="test",
                           help="Paired test.")
CORRECTION_OPTION = vocab_option(
    DEFAULT_STATS.correction, "--correction", "-c", concept="correction",
    help="Multiple-comparison correction over all (system, measure) pairs.")
ALPHA_OPTION = click.option("--alpha", default=DEFAULT_STATS.alpha,
                            help="Significance level after correction, in (0, 1).")
PERMUTATIONS_OPTION = click.option(
    "--permutations", "-n", default=DEFAULT_STATS.n_permutations,
    type=click.IntRange(1, MAX_RESAMPLES), metavar="INTEGER",
    help="Sign flips (randomization) or resamples (bootstrap).")
SEED_OPTION = click.option("--seed", default=DEFAULT_STATS.seed, type=click.IntRange(min=0),
                           metavar="INTEGER", help="Seed of the resampling tests.")
MISSING_OPTION = vocab_option(
    None, "--missing", concept="missing policy",
    help="Runs that lack qrels queries: 'zero' scores them 0 (trec_eval -c), 'skip' compares "
         "on the queries every run answers. Required when the runs cover different query "
         "sets; default otherwise: zero.")
DEPTH_OPTION = click.option("--depth", "-M", type=click.IntRange(min=1), metavar="INTEGER",
                            help="Evaluate only the top N of each query.")
KEEP_OPTION = vocab_option(None, "--keep", concept="keep policy",
                           help="Duplicate (query, doc) lines: keep 'max' or 'first' instead "
                                "of failing.")
FAIL_IF_WORSE_OPTION = click.option(
    "--fail-if-worse", multiple=True, metavar="MEASURES",
    help="Exit 1 if a candidate is significantly worse than the baseline on any of these "
         "measures (comma-separated).")
MIN_DELTA_OPTION = click.option(
    "--min-delta", default=0.0, type=click.FloatRange(min=0.0), metavar="FLOAT",
    help="With --fail-if-worse: a significant drop smaller than this still passes.")
PER_QUERY_OPTION = click.option(
    "--per-query", is_flag=True,
    help="csv/json: the long per-query format (system, query, measure, value).")
QUERIES_OPTION = click.option(
    "--queries", type=paths(must_exist=True), default=None,
    help="queries.jsonl (or a native set folder): show the shares of real, synthetic and "
         "verified queries and the first measure split by them; queries marked "
         "\"no_answer\": true are left out of the measures (see --unanswerable).")
FORMAT_OPTION = format_option("table", "markdown", "latex", "json", "csv", default="table")


@click.command("compare")
@QRELS_ARGUMENT
@RUNS_ARGUMENT
@BASELINE_OPTION
@MEASURE_OPTION
@TEST_OPTION
@CORRECTION_OPTION
@ALPHA_OPTION
@PERMUTATIONS_OPTION
@SEED_OPTION
@MISSING_OPTION
@DEPTH_OPTION
@KEEP_OPTION
@FAIL_IF_WORSE_OPTION
@MIN_DELTA_OPTION
@PER_QUERY_OPTION
@QUERIES_OPTION
@UNANSWERABLE_OPTION
@FORMAT_OPTION
@DECIMALS_OPTION
@QUIET_OPTION
def compare_command(
    qrels: Path,
    runs: tuple[Path, ...],
    baseline: str | None,
    measure: tuple[str, ...],
    test: str,
    correction: str,
    alpha: float,
    permutations: int,
    seed: int,
    missing: str | None,
    depth: int | None,
    keep: str | None,
    fail_if_worse: tuple[str, ...],
    min_delta: float,
    per_query: bool,
    queries: Path | None,
    unanswerable: str | None,
    output_format: str,
    decimals: int,
    quiet: bool,
) -> None:
    """Compare runs against a baseline with paired significance tests.

    Example: searchbench compare qrels.txt bm25.trec dense.trec --baseline bm25.trec
    -m nDCG@10 -m RR@10 --test randomization --correction holm
    """
    if per_query and output_format not in ("csv", "json"):
        raise UsageError("--per-query needs --format csv or --format json")
    gate = _measure_names(list(fail_if_worse))
    measures = _measure_names(list(measure) or list(DEFAULT_MEASURES))
    measures += [m for m in gate if m not in measures]  # the gate's measures are compared too
    files = list(runs)
    names = _run_names(files)
    cmp = _compare(qrels, dict(zip(names, files, strict=True)), measures, missing=missing,
                   keep=keep, quiet=quiet, queries=queries, unanswerable=unanswerable,
                   baseline=_baseline_name(baseline, files, names),
                   test=test, correction=correction, alpha=alpha, seed=seed,
                   n_permutations=permutations, depth=depth)
    _render(cmp, output_format, decimals, per_query, quiet)
    if gate:
        _gate(cmp, gate, min_delta)
