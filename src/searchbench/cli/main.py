"""Entry point of the ``searchbench`` command; each sub-command lives in its own module."""

from __future__ import annotations

import sys

import typer

from ..errors import SearchbenchError

app = typer.Typer(
    name="searchbench",
    help="Does your search bring back the right documents? trec_eval-exact IR measures, "
    "significance tests, ANN recall and evaluation sets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    """Import the command modules; each adds its commands to ``app``."""
    from . import (  # noqa: F401
        ann_cmd,
        compare_cmd,
        demo_cmd,
        eval_cmd,
        evalset_cmd,
        experiment_cmd,
        run_cmd,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code.

    A :class:`SearchbenchError` (or an OS error such as a missing file) becomes one line
    on stderr and exit code 1; usage errors exit with 2 (Click's convention).
    """
    _register()
    try:
        app(args=argv, prog_name="searchbench", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except SearchbenchError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 1
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        return 1
    return 0


def run() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
