"""Output options shared by every command: formats, warnings, the console."""

from __future__ import annotations

import contextlib
import json
import sys
import warnings
from collections.abc import Iterator, Sequence
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
    raised (so a warning about work still to come, e.g. truncation, precedes that work),
    redacted for every secret the command holds."""
    from .._util.secrets import redact

    seen: set[str] = set()

    def show(message: Any, *_args: Any, **_kw: Any) -> None:
        text = redact(str(message))
        if not quiet and text not in seen:
            seen.add(text)
            from .._util import one_line

            print(f"warning: {one_line(text)}", file=sys.stderr, flush=True)

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


def load_queries(path: Path | None) -> Any:
    """The queries (provenance and ``no_answer`` marks) of a queries.jsonl or a native set
    folder given to ``--queries``; None without one."""
    if path is None:
        return None
    from ..data import read_queries_jsonl
    from ..errors import ConfigError

    if path.is_dir():
        found = [path / n for n in ("queries.jsonl", "queries.jsonl.gz") if (path / n).is_file()]
        if not found:
            raise ConfigError(f"--queries {path}: the folder holds no queries.jsonl; expected "
                              "a native evaluation set folder or a queries.jsonl file")
        path = found[0]
    return read_queries_jsonl(path)


UNANSWERABLE_OPTION = vocab_option(
    None, "--unanswerable", concept="unanswerable policy",
    help="Queries marked \"no_answer\": true in --queries: 'skip' leaves them out of every "
         "measure (default), 'zero' scores them as trec_eval does (0 where no document is "
         "relevant). The count is printed either way.")


def unanswerable_marks(queries: Any, policy: str | None) -> tuple[list[str], str]:
    """``(ids marked no_answer, policy)`` of ``--queries`` and ``--unanswerable``; the
    policy without a queries file is an error (nothing would be marked)."""
    from ..errors import ConfigError
    from ..measures import no_answer_ids

    if queries is None and policy is not None:
        raise ConfigError("--unanswerable needs --queries: the queries.jsonl (or native set "
                          "folder) whose \"no_answer\": true marks say which queries have no "
                          "answer")
    return no_answer_ids(queries), policy or "skip"


def print_notes(notes: Sequence[str], *, stderr: bool) -> None:
    """``note: …`` lines, once each, on stdout (below a table) or stderr (beside data)."""
    for note in dict.fromkeys(notes):
        print(f"note: {note}", file=sys.stderr if stderr else sys.stdout)


def run_name(path: Path, runs: Sequence[Path]) -> str:
    """Runs are named by file name (by path when two share a name)."""
    same = [p for p in runs if p.name == path.name]
    return path.name if len(same) == 1 else str(path)



def stdout_is_terminal() -> bool:
    return bool(getattr(sys.stdout, "isatty", lambda: False)())


def _cells(text: str) -> int:
    """Terminal columns of ``text`` (wide East Asian characters take two, combining marks
    none), as rich measures it."""
    import unicodedata

    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _printable(text: str) -> str:
    """Hidden characters (ANSI escapes, bidi overrides, zero-width…) shown as ``\\uXXXX``:
    the one rule of :func:`searchbench._util.visible_name`."""
    from .._util import visible_name

    return visible_name(text)


def box_table(header: list[str], rows: list[list[str]], right: list[bool],
              title: str | None = None) -> str:
    """The table rich draws by default (heavy head box, one space of padding), at its natural
    width: for output that is not a terminal, where rich would squeeze it into 80 columns
    and cut names short - and without importing rich."""
    grid = [[_printable(c) for c in row] for row in [header, *rows]]
    widths = [max(_cells(row[i]) for row in grid) for i in range(len(header))]

    def line(row: list[str], bar: str) -> str:
        cells = [(" " * (w - _cells(c)) + c if r else c + " " * (w - _cells(c)))
                 for c, w, r in zip(row, widths, right, strict=True)]
        return bar + bar.join(f" {c} " for c in cells) + bar

    def rule(left: str, fill: str, mid: str, end: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + end

    out = [_printable(title)] if title else []
    out += [rule("┏", "━", "┳", "┓"), line(grid[0], "┃"), rule("┡", "━", "╇", "┩")]
    out += [line(row, "│") for row in grid[1:]]
    out.append(rule("└", "─", "┴", "┘"))
    return "\n".join(out) + "\n"
