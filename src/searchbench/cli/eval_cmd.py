"""``searchbench eval``: evaluate TREC runs against qrels."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click

from ..vocab import DEFAULT_MEASURES as _DEFAULTS
from ._output import (
    DECIMALS_OPTION,
    QUIET_OPTION,
    UNANSWERABLE_OPTION,
    Format,
    _printable,
    box_table,
    choice,
    console,
    fmt,
    load_queries,
    paths,
    print_json,
    print_notes,
    reported_warnings,
    run_name,
    stdout_is_terminal,
    unanswerable_marks,
    vocab_option,
)

DEFAULT_MEASURES = list(_DEFAULTS)


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
@click.option("--format", "-f", "output_format", type=choice(Format), default=Format.table,
              help="Output format.")
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
    output_format: Format,
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
    from ..data import Qrels, Run
    from ..measures import (
        CoverageProbe,
        Evaluator,
        apply_unanswerable,
        parse_measures,
        scored_queries,
        trec_name,
    )

    keep_policy = keep
    wanted = [m.name for m in parse_measures(measure or DEFAULT_MEASURES)]
    probe = CoverageProbe(wanted)
    with reported_warnings(quiet):
        judgments = Qrels.from_file(qrels, keep=keep_policy)
        if stream:  # only read as Arrow strings then: no Python string per document
            from ..data import compact_qrels

            judgments = compact_qrels(judgments)
        evaluator = Evaluator(judgments, probe.all_measures, missing=missing, depth=depth)
        if stream or engine == "ray":
            loaded, results = _evaluate_large(evaluator, runs, qrels, keep_policy, quiet,
                                              stream, engine, address, partitions)
        else:
            loaded = [Run.from_file(path, name=run_name(path, runs), keep=keep_policy)
                      for path in runs]
            results = [_evaluate(evaluator, run, path, qrels)
                       for run, path in zip(loaded, runs, strict=True)]
        marked, policy = unanswerable_marks(load_queries(queries), unanswerable)
        kept = [res.query_ids for res in results]
        results = [apply_unanswerable(res, marked, policy) for res in results]
        results = [probe.finish(res, run, evaluator.qrels)[0]  # warns: measures.coverage
                   for run, res in zip(loaded, results, strict=True)]
    scored = [scored_queries(evaluator.qrels, res.query_ids, wanted, marked, policy, kept=k)
              for res, k in zip(results, kept, strict=True)]
    out = _Output(
        label={m.name: (trec_name(m) if trec_names else m.name) for m in evaluator.measures},
        counts={m.name for m in evaluator.measures if m.is_count and m.name in wanted},
        per_query=per_query, decimals=decimals,
    )
    if output_format is Format.json:
        _print_json(results, out, scored)
    elif output_format is Format.trec:
        tags = [run.metadata.get("tag") or run.name for run in loaded]
        _print_trec(results, tags, out)
        if not quiet:
            _note_num_rel_all(evaluator)
    elif output_format is Format.tsv:
        _print_tsv(results, out)
    else:
        _print_table(results, out)
    if output_format is not Format.json and not (quiet and output_format is not Format.table):
        print_notes(_scored_notes(results, scored), stderr=output_format is not Format.table)


def _scored_notes(results, scored) -> list[str]:
    """The notes of :class:`~searchbench.measures.ScoredQueries`: once when every run has
    the same, else per run."""
    per_run = [s.notes() for s in scored]
    if all(n == per_run[0] for n in per_run):
        return per_run[0]
    return [f"run {_printable(r.run_name)}: {n}" for r, notes in zip(results, per_run,
                                                                      strict=True)
            for n in notes]


def _evaluate(evaluator, run, run_path: Path, qrels_path: Path):
    """One run's result; a run sharing no query with the qrels names both files."""
    from ..measures import NoSharedQueriesError

    try:
        return evaluator.evaluate(run)
    except NoSharedQueriesError:
        raise NoSharedQueriesError.between(f"run file {run_path}", f"qrels file {qrels_path}",
                                           run.query_ids, evaluator.qrels.query_ids) from None


def _evaluate_large(evaluator, runs: tuple[Path, ...], qrels_path: Path, keep: str | None,
                    quiet: bool, stream: bool, engine: str, address: str | None,
                    partitions: int | None):
    """``(runs, results)`` by streaming or with Ray; the "runs" returned are samples (the
    first batch, with the run's name and tag) for the coverage advice and ``-f trec``."""
    from ..errors import ConfigError
    from ..measures import NoSharedQueriesError, stream_run

    if stream and engine == "ray":
        raise ConfigError("--stream and --engine ray are two ways to evaluate a large run; "
                          "choose one")
    if engine == "ray":
        from ..distributed import evaluate_runs

        found = evaluate_runs(evaluator, list(runs), names=[run_name(p, runs) for p in runs],
                              keep=keep, address=address, partitions=partitions, quiet=quiet)
        return [f.sample for f in found], [f.result for f in found]
    samples, results = [], []
    for path in runs:
        try:
            done = stream_run(evaluator, path, name=run_name(path, runs), keep=keep,
                              quiet=quiet)
        except NoSharedQueriesError as exc:
            raise NoSharedQueriesError(f"run file {path}: {exc}") from None
        if done.sample is not None:
            done.sample.name = done.result.run_name
            done.sample.metadata["tag"] = done.tag
        samples.append(done.sample)
        results.append(done.result)
    return samples, results


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
                print(f"{'runid':<22}\tall\t{_printable(tag)}")
                header = False
            print(f"{out.label[name]:<22}\t{qid}\t{out.text(name, value)}")


def _print_tsv(results, out: _Output) -> None:
    """One row per value; a run name's tabs, newlines and other control characters are
    shown as ``\\uXXXX`` so that they cannot split a row or a column."""
    print("run\tquery\tmeasure\tvalue")
    for res in results:
        name_shown = _printable(res.run_name)
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
    from rich.markup import escape
    from rich.table import Table

    console_out = console()
    for title, head, align, rows in tables:
        table = Table(title=escape(title), title_justify="left") if title else Table()
        for name, at_right in zip(head, align, strict=True):
            table.add_column(escape(name), justify="right" if at_right else "left")
        for row in rows:
            table.add_row(*map(escape, row))
        console_out.print(table)
