"""``searchbench judge serve|...``: judge the pool of an evaluation set (people and LLMs).

One sub-command per function; other modules add theirs to :data:`judge_app` here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ._output import paths

EVALSET_ARG = click.argument("evalset", type=paths(must_exist=True))


def server_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the web app's commands (``judge serve``, ``explore``)."""
    options = [
        click.option("--annotator", "annotators", multiple=True, metavar="NAME",
                     help="An annotator (repeatable). A new one gets a token and a URL, printed "
                          "once; a known one keeps its URL. Default: one named 'annotator'."),
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
    from ..judging.web.server import ServeOptions

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
    from ..judging.web.server import serve

    serve(serve_options(evalset, pool_path, **server))


def _register() -> None:
    from .judge_llm_cmd import llm_command

    judge_app.add_command(llm_command)


_register()
