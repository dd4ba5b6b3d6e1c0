"""``searchbench judge serve|...``: judge the pool of an evaluation set (people and LLMs).

One sub-command per function; other modules add theirs to :data:`judge_app` here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..errors import DataFormatError
from ._multi import runs_option
from ._output import (
    TEXT_OR_JSON,
    evalset_argument,
    output_option,
    paths,
    print_result,
    refuse_existing,
    reported_warnings,
)
from .judge_llm_cmd import llm_command

EVALSET_ARG = evalset_argument(folder=True)


def server_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the web app's commands (``judge serve``, ``explore``)."""
    options = [
        click.option("--annotator", "annotators", multiple=True, metavar="NAME",
                     help="An annotator (repeatable). A new one gets a token and a URL, printed "
                          "once; a known one keeps its token. Default: one named 'annotator'."),
        click.option("--new-tokens", is_flag=True,
                     help="Give every listed annotator a new token and URL (old URLs stop "
                          "working)."),
        click.option("--host", default="127.0.0.1",
                     help="Address to bind; a non-loopback address needs --allow-remote."),
        click.option("--port", default=0, type=click.IntRange(0, 65535), metavar="PORT",
                     help="Port to bind (0: a free port)."),
        click.option("--allow-remote", is_flag=True,
                     help="Allow a non-loopback --host (use TLS: --certfile/--keyfile)."),
        click.option("--certfile", type=paths(must_exist=True), help="TLS certificate (PEM)."),
        click.option("--keyfile", type=paths(must_exist=True), help="TLS private key (PEM)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def serve_options(evalset: Path, pool: Path | None, **kw: Any) -> Any:
    """:class:`ServeOptions` from the parsed :func:`server_options`."""
    from ..judging.web import ServeOptions  # lazy: cli start-up (judging, numpy)

    kw["annotators"] = kw.get("annotators") or ("annotator",)
    return ServeOptions(evalset=evalset, pool=pool, **kw)


@click.group("judge", no_args_is_help=True)
def judge_app() -> None:
    """Judge the pool of an evaluation set: web app, LLM judge, agreement, export."""


@judge_app.command("serve")
@EVALSET_ARG
@click.option("--pool", "pool_path", type=paths(must_exist=True), required=True,
              help="pool.jsonl to judge (from `searchbench pool`).")
@server_options
def serve_command(evalset: Path, pool_path: Path, **server: Any) -> None:
    """Serve the blind judging web app for POOL and print one URL per annotator."""
    from ..judging.web import serve  # lazy: cli start-up (judging, numpy)

    serve(serve_options(evalset, pool_path, **server))


@judge_app.command("agreement")
@EVALSET_ARG
@runs_option("Runs to rank under people's and each LLM judge's labels (Kendall's τ).")
@click.option("--measure", default="nDCG@10", show_default=True,
              help="The measure that orders the runs.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True,
              type=click.IntRange(min=0), metavar="N",
              help="Bootstrap resamples (over items) for the 95 % intervals; 0: none.")
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@output_option("Write the items to adjudicate as a pool.jsonl, to judge again in the app "
               "(judge serve --pool POOL --annotator adjudicator) and export with "
               "--adjudicate annotator:adjudicator.", aliases=("--to-adjudicate",))
@TEXT_OR_JSON
def agreement_command(evalset: Path, runs: tuple[Path, ...], measure: str, n_boot: int,
                      seed: int, output: Path | None, force: bool,
                      output_format: str) -> None:
    """Agreement between annotators (Cohen, Fleiss, Krippendorff) and LLM judges vs people.

    Reads EVALSET/judging.sqlite. People: Cohen's kappa per pair (unweighted, linear,
    quadratic), Fleiss' kappa (3 or more), Krippendorff's alpha (ordinal), each with a
    bootstrap interval. Each LLM judge against the people's majority label, and with
    --runs the Kendall tau between the system orderings under the two label sets. Ends
    with the items to adjudicate (grades 2 or more apart, or a tied majority), which
    -o/--output writes as a pool for the judging app.

    Example: searchbench judge agreement my-set/ --runs bm25.trec dense.trec
    """
    from ..data import Run  # lazy: cli start-up (data, numpy)
    from ..judging import agreement, store_judgments  # lazy: cli start-up (judging, numpy)

    refuse_existing(force, output)
    labels = store_judgments(evalset)
    if not labels:
        raise DataFormatError(f"{evalset}: no judging store with labels (judging.sqlite); "
                              "judge first (searchbench judge serve / judge llm)")
    with reported_warnings():
        loaded = [Run.from_file(p, name=p.name) for p in runs]
        if loaded:  # runs of another corpus would rank on nothing
            from ..judging import check_runs  # lazy: cli start-up (judging, numpy)
            from ..judging.web import load_texts  # lazy: cli start-up (judging, numpy)

            corpus, queries, _ = load_texts(evalset)
            check_runs(loaded, corpus.ids, queries.ids)
        report = agreement(labels, runs=loaded, measure=measure, n_boot=n_boot, seed=seed)
    if output is not None:
        from ..judging import write_pool  # lazy: cli start-up (judging, numpy)

        write_pool(output, report.adjudication_pool())
    print_result(output_format, report.to_dict(), report.to_text)


@judge_app.command("export")
@EVALSET_ARG
@click.option("--adjudicate", "policy", default="majority", show_default=True,
              metavar="POLICY",
              help="majority | mean | annotator:NAME | humans-over-llm (majority and mean use "
                   "people's labels only).")
@click.option("--min-annotators", default=1, show_default=True, type=click.IntRange(min=1),
              metavar="N", help="Leave out pairs resting on fewer than N labels.")
@TEXT_OR_JSON
def export_command(evalset: Path, policy: str, min_annotators: int,
                   output_format: str) -> None:
    """Write the adjudicated labels into the set: qrels.tsv, evidence.jsonl, provenance.

    Every exported pair's provenance (qrels.provenance.jsonl) names the rule and the labels
    behind its grade; queries a person judged become verified; the files replaced are kept
    in EVALSET/history/ and provenance.json gets the new content hash.

    Example: searchbench judge export my-set/ --min-annotators 1 --adjudicate majority
    """
    from ..judging import export  # lazy: cli start-up (judging, numpy)

    with reported_warnings():
        report = export(evalset, policy=policy, min_annotators=min_annotators)
    print_result(output_format, report.to_dict(), report.to_text)


def _register() -> None:
    judge_app.add_command(llm_command)


_register()
