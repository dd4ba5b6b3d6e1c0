"""``searchbench eval``: evaluate TREC runs against qrels."""

from __future__ import annotations

from pathlib import Path

import typer

from ._output import (
    DECIMALS_OPTION,
    QUIET_OPTION,
    Format,
    console,
    fmt,
    print_json,
    reported_warnings,
    run_name,
)
from .main import app

DEFAULT_MEASURES = ["nDCG@10", "RR@10", "R@10", "R@100", "AP", "P@10"]


@app.command("eval")
def eval_command(
    qrels: Path = typer.Argument(
        ..., help="Qrels file: TREC (qid iter docid grade) or BEIR .tsv; .gz ok."),
    runs: list[Path] = typer.Argument(..., help="One or more TREC run files; .gz ok."),
    measure: list[str] = typer.Option(
        None, "--measure", "-m",
        help="Measure(s), repeated or comma-separated: nDCG@10, RR@10, R@100, AP, P@5, "
             "AP(rel=2)@100, nDCG(gain=exp)@10, or trec_eval names (ndcg_cut.10, recip_rank). "
             f"Default: {' '.join(DEFAULT_MEASURES)}.",
    ),
    per_query: bool = typer.Option(False, "--per-query", help="Also print per-query values."),
    missing: str = typer.Option(
        "zero", "--missing",
        help="Qrels queries absent from a run: 'zero' counts them as 0 (trec_eval -c); "
             "'skip' averages over queries in both (trec_eval's default).",
    ),
    depth: int | None = typer.Option(
        None, "--depth", "-M", min=1, help="Evaluate only the top N of each query (trec_eval -M)."
    ),
    keep: str | None = typer.Option(
        None, "--keep", help="Duplicate (query, doc) lines: keep 'max' or 'first' instead of "
                             "failing."),
    output_format: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    trec_names: bool = typer.Option(False, "--trec-names",
                                    help="Print trec_eval's measure names (ndcg_cut_10, P_5)."),
    decimals: int = DECIMALS_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Evaluate runs against qrels, exactly as trec_eval computes the measures.

    Example: searchbench eval qrels.txt bm25.trec dense.trec -m nDCG@10 -m RR@10 -m R@100
    """
    from ..data.qrels import Qrels
    from ..data.run import Run
    from ..measures import Evaluator
    from ..measures.spec import trec_name

    with reported_warnings(quiet):
        evaluator = Evaluator(Qrels.from_file(qrels, keep=keep), measure or DEFAULT_MEASURES,
                              missing=missing, depth=depth)
        results = [evaluator.evaluate(Run.from_file(path, name=run_name(path, runs), keep=keep))
                   for path in runs]
    label = {m.name: (trec_name(m) if trec_names else m.name) for m in evaluator.measures}
    if output_format is Format.json:
        for res in results:
            obj = res.to_dict(per_query=per_query)
            obj["measures"] = {label[k]: v for k, v in obj["measures"].items()}
            if per_query:
                obj["per_query"] = {label[k]: v for k, v in obj["per_query"].items()}
            print_json(obj)
    elif output_format is Format.trec:
        _print_trec(results, label, per_query, decimals)
    elif output_format is Format.tsv:
        _print_tsv(results, label, per_query, decimals)
    else:
        _print_table(results, label, per_query, decimals)


def _rows(results, label, per_query: bool):
    """``(run, query or 'all', measure label, value, is_mean)`` in output order."""
    for res in results:
        for name in res.measures:
            if per_query:
                for qid, value in zip(res.query_ids.tolist(), res.scores[name].tolist(),
                                      strict=True):
                    yield res.run_name, qid, label[name], value, False
            yield res.run_name, "all", label[name], res.mean[name], True


def _print_trec(results, label, per_query: bool, decimals: int) -> None:
    current = None
    for run, qid, name, value, is_mean in _rows(results, label, per_query):
        if run != current:
            print(f"{'runid':<22}\tall\t{run}")
            current = run
        text = fmt(value, decimals) if is_mean else f"{value:.{decimals}f}"
        print(f"{name:<22}\t{qid}\t{text}")


def _print_tsv(results, label, per_query: bool, decimals: int) -> None:
    print("run\tquery\tmeasure\tvalue")
    for run, qid, name, value, is_mean in _rows(results, label, per_query):
        text = fmt(value, decimals) if is_mean else f"{value:.{decimals}f}"
        print(f"{run}\t{qid}\t{name}\t{text}")


def _print_table(results, label, per_query: bool, decimals: int) -> None:
    from rich.table import Table

    out = console()
    names = results[0].measures
    table = Table(title=f"{results[0].num_q} queries", title_justify="left")
    table.add_column("run")
    for name in names:
        table.add_column(label[name], justify="right")
    for res in results:
        table.add_row(res.run_name, *[fmt(res.mean[n], decimals) for n in names])
    out.print(table)
    if per_query:
        for res in results:
            pq = Table(title=f"{res.run_name}: per query", title_justify="left")
            pq.add_column("query")
            for name in names:
                pq.add_column(label[name], justify="right")
            for i, qid in enumerate(res.query_ids.tolist()):
                pq.add_row(qid, *[f"{res.scores[n][i]:.{decimals}f}" for n in names])
            out.print(pq)
