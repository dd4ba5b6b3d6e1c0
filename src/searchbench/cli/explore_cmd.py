"""``searchbench explore EVALSET --runs A B``: two runs side by side per query (web app)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._output import paths, run_name
from .judge_cmd import EVALSET_ARG, serve_options, server_options


@click.command("explore")
@EVALSET_ARG
@click.option("--runs", "runs", type=paths(must_exist=True), nargs=2, required=True,
              metavar="BASELINE OTHER", help="The two TREC runs to compare.")
@click.option("-m", "--measure", default="nDCG@10", metavar="MEASURE",
              help="Measure compared per query (any searchbench measure).")
@click.option("--depth", default=10, type=click.IntRange(1, 100), metavar="K",
              help="Documents shown per run and query.")
@server_options
def explore_command(evalset: Path, runs: tuple[Path, Path], measure: str, depth: int,
                    **server: Any) -> None:
    """Explore two runs side by side per query in the web app and judge their holes."""
    from ..data import read_run  # lazy: cli start-up (data, numpy)
    from ..judging.web import require_web, serve  # lazy: cli start-up (judging, numpy)

    require_web()
    from ..judging.web import explore_data  # lazy: cli start-up (judging, starlette, numpy)

    loaded = [read_run(p) for p in runs]
    names = [run_name(p, list(runs)) for p in runs]
    serve(serve_options(evalset, None, **server),
          explore=explore_data(loaded, names, measure, depth))
