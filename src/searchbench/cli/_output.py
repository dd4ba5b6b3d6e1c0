"""Output options shared by every command: formats, warnings, the console."""

from __future__ import annotations

import contextlib
import json
import sys
import warnings
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

import click


class Format(StrEnum):
    """Output formats of result-printing commands."""

    table = "table"
    json = "json"
    tsv = "tsv"
    trec = "trec"


def _quiet(_ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:  # before the command imports a library that shows progress bars
        from .main import quiet_third_party_progress

        quiet_third_party_progress(force=True)
    return value


QUIET_OPTION = click.option("--quiet", "-q", is_flag=True, callback=_quiet,
                            help="No warnings or progress output.")
DECIMALS_OPTION = click.option("--decimals", default=4, type=click.IntRange(0, 12),
                               metavar="INTEGER",
                               help="Decimals shown when rendering (values are never rounded "
                                    "inside the library).")


def choice(enum: type[StrEnum]) -> click.Choice:
    """A choice among the values of ``enum``, passed on as the enum member."""
    return click.Choice(enum, case_sensitive=True)


def paths(must_exist: bool = False) -> click.Path:
    """A path option or argument, passed on as a :class:`~pathlib.Path`."""
    return click.Path(path_type=Path, exists=must_exist)


def console(stderr: bool = False) -> Any:
    """A rich console (lazily imported); plain text when not a terminal."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def reported_warnings(quiet: bool = False) -> Iterator[None]:
    """Print each distinct library warning once on stderr as ``warning: ...``, when it is
    raised (so a warning about work still to come, e.g. truncation, precedes that work)."""
    seen: set[str] = set()

    def show(message: Any, *_args: Any, **_kw: Any) -> None:
        text = str(message)
        if not quiet and text not in seen:
            seen.add(text)
            print(f"warning: {text}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield


def print_json(obj: Any) -> None:
    """One compact JSON object per line (JSON Lines)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def fmt(value: float, decimals: int, is_count: bool = False) -> str:
    """Render a value: counts as integers, others with ``decimals`` decimals."""
    return str(round(value)) if is_count else f"{value:.{decimals}f}"


def vocab_option(default: str | None, *names: str, concept: str, help: str) -> Any:
    """A click option over a :mod:`searchbench.vocab` concept: canonical values and aliases
    accepted (case-insensitive), the value passed on in its canonical spelling, an unknown
    value a usage error (exit 2, Click's convention) listing the valid values and aliases."""
    from ..errors import ConfigError
    from ..vocab import canonical, values

    def convert(ctx: Any, param: Any, value: str | None) -> str | None:
        if value is None:
            return None
        if concept in ("stemmer", "stop words") and value.strip().lower() in ("none", ""):
            return "none"
        try:
            return canonical(concept, value)
        except ConfigError as exc:
            raise click.BadParameter(str(exc)) from None

    shown = [*values(concept), *(("none",) if concept in ("stemmer", "stop words") else ())]
    metavar = "[" + "|".join(shown) + "]" if len(shown) <= 8 else "NAME"
    return click.option(*names, default=default, callback=convert, metavar=metavar,
                        help=help, show_default=default is not None)


def run_name(path: Path, runs: list[Path]) -> str:
    """Runs are named by file name (by path when two share a name)."""
    same = [p for p in runs if p.name == path.name]
    return path.name if len(same) == 1 else str(path)

