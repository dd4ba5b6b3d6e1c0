"""``searchbench pool DIR --runs A B ...``: what to judge next, from the top of several runs."""

from __future__ import annotations

from pathlib import Path

import click

from ._multi import runs_option
from ._output import (
    QUIET_OPTION,
    TEXT_OR_JSON,
    evalset_argument,
    output_option,
    print_result,
    refuse_existing,
    reported_warnings,
)


@click.command("pool")
@evalset_argument(folder=True)
@runs_option("The runs to pool (TREC, Parquet or Arrow files): --runs a.trec b.trec.")
@click.option("--depth", default=20, type=click.IntRange(min=1), metavar="N",
              help="How many of each run's top documents per query enter the pool.")
@output_option("pool.jsonl to write (default EVALSET/pool.jsonl).")
@TEXT_OR_JSON
@QUIET_OPTION
def pool_command(evalset: Path, runs: tuple[Path, ...], depth: int, output: Path | None,
                 force: bool, output_format: str, quiet: bool) -> None:
    """Pool the top documents of several runs into the list of pairs to judge next.

    The pool is the union of every run's top N per query minus what is judged already
    (qrels.tsv and the judging store), ordered per query by how many runs retrieved a
    document, then its best rank, then its id. Each run's Judged@10 now and after judging
    the pool shows the holes the pool closes.

    Example: searchbench pool my-set/ --runs bm25.trec dense.trec --depth 20 -o my-set/pool.jsonl
    """
    from ..judging import pool  # lazy: cli start-up (judging, numpy)

    target = output if output is not None else Path(evalset) / "pool.jsonl"
    refuse_existing(force, target)
    with reported_warnings(quiet):
        result = pool(evalset, list(runs), depth=depth, output=target, quiet=quiet or None)
    print_result(output_format, {**result.to_dict(), "output": str(target)},
                 lambda: f"{result.to_text()}\nwrote {target} ({len(result.items)} pairs)")
