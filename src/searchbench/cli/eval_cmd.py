"""``searchbench eval``: evaluate TREC runs against qrels."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from ..vocab import DEFAULT_MEASURES as _DEFAULTS
from ._output import (
    DECIMALS_OPTION,
    QUIET_OPTION,
    UNANSWERABLE_OPTION,
    UsageError,
    box_table,
    console,
    fmt,
    format_option,
    load_queries,
    paths,
    print_json,
    print_notes,
    printable,
    reported_warnings,
    stdout_is_terminal,
    unanswerable_marks,
    vocab_option,
)

DEFAULT_MEASURES = list(_DEFAULTS)
BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """Ask numpy's OpenBLAS for one thread, unless the user chose a number or numpy is
    loaded already. Evaluation multiplies no matrices, and the threads OpenBLAS starts when
    numpy is imported spin for a while on the core the run file is being scanned on (at
    10⁶ run lines the scan took 245 ms with them, 136 ms without: ``benchmarks/README.md``,
    issue 26, fourth round)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(BLAS_THREADS, "1")


@click.command("eval")
@click.argument("qrels", type=paths(),
                help="Qrels file: TREC (qid iter docid grade), BEIR .tsv, Parquet or "
                     "Arrow; .gz ok.")
@click.argument("runs", nargs=-1, required=True, type=paths(),
                help="One or more run files: TREC (.gz ok), Parquet or Arrow.")
@click.option("--measure", "-m", multiple=True, metavar="MEASURE",
              help="Measure(s), repeated or comma-separated: nDCG@10, RR@10, R@100, AP, P@5, "
                   "AP(rel=2)@100, nDCG(gain=exp)@10, or trec_eval names (ndcg_cut.10, "
                   f"recip_rank). Default: {' '.join(DEFAULT_MEASURES)}.")
@click.option("--per-query", is_flag=True, help="Also print per-query values.")
@vocab_option("zero", "--missing", concept="missing policy",
              help="Qrels queries absent from a run: 'zero' counts them as 0 (trec_eval -c); "
                   "'skip' averages over queries in both (trec_eval 9's default; a run sharing "
                   "no query with the qrels is an error, as in trec_eval 10).")
@click.option("--depth", "-M", type=click.IntRange(min=1), metavar="INTEGER",
              help="Evaluate only the top N of each query (trec_eval -M).")
@vocab_option(None, "--keep", concept="keep policy",
              help="Duplicate (query, doc) lines: keep 'max' or 'first' instead of failing.")
@format_option("table", "json", "tsv", "trec", default="table")
@click.option("--trec-names", is_flag=True,
              help="Print trec_eval's measure names (ndcg_cut_10, P_5).")
@click.option("--stream", is_flag=True,
              help="Read each run query group by query group (TREC text, .gz, Parquet, "
                   "Arrow): memory bounded by the qrels and the largest query group, the "
                   "same numbers. Each query's lines must be together (any query order).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              help="'ray': evaluate the runs as Ray tasks partitioned by query (needs "
                   "searchbench[ray]); the same numbers.")
@click.option("--address", metavar="ADDRESS",
              help="With --engine ray: the Ray cluster to join ('auto', ray://host:10001); "
                   "default: a local Ray started for this command.")
@click.option("--partitions", type=click.IntRange(min=1), metavar="INTEGER",
              help="With --engine ray: query partitions per run (default: twice the CPUs).")
@click.option("--queries", type=paths(must_exist=True), default=None,
              help="queries.jsonl (or a native set folder): queries marked \"no_answer\": "
                   "true are left out of the measures (see --unanswerable).")
@UNANSWERABLE_OPTION
@DECIMALS_OPTION
@QUIET_OPTION
def eval_command(
    qrels: Path,
    runs: tuple[Path, ...],
    measure: tuple[str, ...],
    per_query: bool,
    missing: str,
    depth: int | None,
    keep: str | None,
    output_format: str,
    trec_names: bool,
    stream: bool,
    engine: str,
    address: str | None,
    partitions: int | None,
    queries: Path | None,
    unanswerable: str | None,
    decimals: int,
    quiet: bool,
) -> None:
    """Evaluate runs against qrels, exactly as trec_eval computes the measures.

    Warns when a run's top k (k: the first measure's cutoff, else 10) is almost entirely
    unjudged (mean Judged@k below 0.1), naming the likely cause (e.g. chunk ids), and says
    how many scored queries have no relevant document (scored 0, as trec_eval does).
    Queries marked "no_answer": true in --queries are left out (--unanswerable zero keeps
    them).

    Example: searchbench eval qrels.txt bm25.trec dense.trec -m nDCG@10 -m RR@10 -m R@100

    Large runs: --stream (one process, bounded memory) or --engine ray (a Ray cluster).
    """
    one_blas_thread()
    # evaluate_files starts reading the runs before it imports numpy (and the measures)
    from ..distributed import evaluate_files  # lazy: cli start-up (distributed._files)

    if stream and engine == "ray":
        raise UsageError("--stream and --engine ray are two ways to evaluate a large run; "
                         "choose one")
    with reported_warnings(quiet):
        marked, policy = unanswerable_marks(load_queries(queries), unanswerable)
        done = evaluate_files(qrels, runs, measure or DEFAULT_MEASURES, missing=missing,
                              depth=depth, keep=keep, stream=stream, engine=engine,
                              address=address, partitions=partitions, no_answer=marked,
                              unanswerable=policy, quiet=quiet)
    from ..measures import trec_name  # lazy: cli start-up (measures, numpy)

    results, scored, evaluator = done.results, done.scored, done.evaluator
    wanted = done.scorer.wanted
    out = _Output(
        label={m.name: (trec_name(m) if trec_names else m.name) for m in evaluator.measures},
        counts={m.name for m in evaluator.measures if m.is_count and m.name in wanted},
        per_query=per_query, decimals=decimals,
    )
    if output_format == "json":
        _print_json(results, out, scored)
    elif output_format == "trec":
        tags = [run.metadata.get("tag") or run.name for run in done.runs]
        _print_trec(results, tags, out)
        if not quiet:
            _note_num_rel_all(evaluator)
    elif output_format == "tsv":
        _print_tsv(results, out)
    else:
        _print_table(results, out)
    if output_format != "json" and not (quiet and output_format != "table"):
        print_notes(_scored_notes(results, scored), stderr=output_format != "table")


def _scored_notes(results, scored) -> list[str]:
    """The notes of :class:`~searchbench.measures.ScoredQueries`: once when every run has
    the same, else per run."""
    per_run = [s.notes() for s in scored]
    if all(n == per_run[0] for n in per_run):
        return per_run[0]
    return [f"run {printable(r.run_name)}: {n}" for r, notes in zip(results, per_run,
                                                                      strict=True)
            for n in notes]


def _note_num_rel_all(evaluator) -> None:
    """Say where ``-f trec`` output knowingly differs from trec_eval's (see NumRel)."""
    if evaluator.missing != "zero":
        return
    for m in evaluator.measures:
        if m.family == "NumRel" and m.rel >= 2:
            print(f"note: {m.name} 'all' is the sum of the per-query values; trec_eval -c "
                  f"-l{m.rel} prints num_rel 'all' recounted from the qrels with grade > 0 "
                  f"(it ignores -l there), which can be larger", file=sys.stderr)


@dataclass(frozen=True)
class _Output:
    label: dict[str, str]
    counts: set[str]
    per_query: bool
    decimals: int

    def text(self, name: str, value: float) -> str:
        return fmt(value, self.decimals, name in self.counts)


def _print_json(results, out: _Output, scored) -> None:
    for res, queries in zip(results, scored, strict=True):
        obj = res.to_dict(per_query=out.per_query)
        obj["queries"] = queries.to_dict()
        obj["measures"] = {out.label[k]: v for k, v in obj["measures"].items()}
        if out.per_query:
            obj["per_query"] = {out.label[k]: v for k, v in obj["per_query"].items()}
        print_json(obj)


def _query_rows(res, out: _Output):
    """``(query, measure name, value)`` in trec_eval's order: query by query, then 'all'."""
    if out.per_query:
        for i, qid in enumerate(res.query_ids.tolist()):
            for name in res.measures:
                if name != "NumQ":  # trec_eval prints num_q only for 'all'
                    yield qid, name, float(res.scores[name][i])
    for name in res.measures:
        yield "all", name, res.mean[name]


def _print_trec(results, tags: list[str], out: _Output) -> None:
    for res, tag in zip(results, tags, strict=True):
        header = True
        for qid, name, value in _query_rows(res, out):
            if qid == "all" and header:  # trec_eval opens the summary with the run tag
                print(f"{'runid':<22}\tall\t{printable(tag)}")
                header = False
            print(f"{out.label[name]:<22}\t{qid}\t{out.text(name, value)}")


def _print_tsv(results, out: _Output) -> None:
    """One row per value; a run name's tabs, newlines and other control characters are
    shown as ``\\uXXXX`` so that they cannot split a row or a column."""
    print("run\tquery\tmeasure\tvalue")
    for res in results:
        name_shown = printable(res.run_name)
        for qid, name, value in _query_rows(res, out):
            print(f"{name_shown}\t{qid}\t{out.label[name]}\t{out.text(name, value)}")


def _print_table(results, out: _Output) -> None:
    """Means (and per-query values): a rich table on a terminal, the same box table at its
    natural width otherwise (never cut to 80 columns; rich is not even imported)."""
    names = results[0].measures
    header = ["run", "queries", *(out.label[n] for n in names)]
    right = [False, True, *(True for _ in names)]
    tables: list[tuple[str | None, list[str], list[bool], list[list[str]]]] = [(
        None, header, right,
               [[res.run_name, str(res.num_q), *[out.text(n, res.mean[n]) for n in names]]
                for res in results])]
    if out.per_query:
        tables += [(f"{res.run_name}: per query", ["query", *header[2:]], [False, *right[2:]],
                    [[qid, *[out.text(n, res.scores[n][i]) for n in names]]
                     for i, qid in enumerate(res.query_ids.tolist())]) for res in results]
    if not stdout_is_terminal():
        for title, head, align, rows in tables:
            sys.stdout.write(box_table(head, rows, align, title))
        return
    from rich.markup import escape  # lazy: cli start-up (rich)
    from rich.table import Table  # lazy: cli start-up (rich)

    console_out = console()
    for title, head, align, rows in tables:
        table = Table(title=escape(title), title_justify="left") if title else Table()
        for name, at_right in zip(head, align, strict=True):
            table.add_column(escape(name), justify="right" if at_right else "left")
        for row in rows:
            table.add_row(*map(escape, row))
        console_out.print(table)
