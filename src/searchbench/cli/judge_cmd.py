"""``searchbench judge serve|...``: judge the pool of an evaluation set (people and LLMs).

One sub-command per function; other modules add theirs to :data:`judge_app` here.
"""

from __future__ import annotations

from pathlib import Path

import click

from ._output import paths

EVALSET_ARG = click.argument("evalset", type=paths(must_exist=True))


@click.group("judge", no_args_is_help=True)
def judge_app() -> None:
    """Judge the pool of an evaluation set: web app, LLM judge, agreement, export."""


@judge_app.command("serve")
@EVALSET_ARG
@click.option("--pool", "pool_path", type=paths(must_exist=True), required=True,
              help="pool.jsonl to judge (from `searchbench pool`).")
@click.option("--annotator", "annotators", multiple=True, metavar="NAME",
              help="An annotator (repeatable); each gets a new token and URL at every start. "
                   "Default: one annotator named 'annotator'.")
@click.option("--host", default="127.0.0.1",
              help="Address to bind; a non-loopback address needs --allow-remote.")
@click.option("--port", default=0, type=click.IntRange(0, 65535), metavar="PORT",
              help="Port to bind (0: a free port).")
@click.option("--allow-remote", is_flag=True,
              help="Allow a non-loopback --host (use TLS: --certfile/--keyfile).")
@click.option("--certfile", type=paths(must_exist=True), help="TLS certificate (PEM).")
@click.option("--keyfile", type=paths(must_exist=True), help="TLS private key (PEM).")
def serve_command(evalset: Path, pool_path: Path, annotators: tuple[str, ...], host: str,
                  port: int, allow_remote: bool, certfile: Path | None,
                  keyfile: Path | None) -> None:
    """Serve the blind judging web app for POOL and print one URL per annotator."""
    from ..judging.web.server import ServeOptions, serve

    serve(ServeOptions(evalset=evalset, pool=pool_path, annotators=annotators or ("annotator",),
                       host=host, port=port, allow_remote=allow_remote, certfile=certfile,
                       keyfile=keyfile))
