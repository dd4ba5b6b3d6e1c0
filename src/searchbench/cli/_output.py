"""Output options shared by every command: formats, warnings, the console."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import unicodedata
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from .._util import one_line, visible_name, visible_text
from ..errors import ConfigError, OutputError
from ..vocab import canonical, values
from .main import quiet_third_party_progress


def _quiet(_ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:  # before the command imports a library that shows progress bars

        quiet_third_party_progress(force=True)
    return value


QUIET_OPTION = click.option("--quiet", "-q", is_flag=True, callback=_quiet,
                            help="No warnings or progress output.")
DECIMALS_OPTION = click.option("--decimals", default=4, type=click.IntRange(0, 12),
                               metavar="INTEGER",
                               help="Decimals shown when rendering (values are never rounded "
                                    "inside the library).")


def paths(must_exist: bool = False) -> click.Path:
    """A path option or argument, passed on as a :class:`~pathlib.Path`."""
    return click.Path(path_type=Path, exists=must_exist)


def console(stderr: bool = False) -> Any:
    """A rich console (lazily imported); plain text when not a terminal."""
    from rich.console import Console  # lazy: cli start-up (rich)

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def reported_warnings(quiet: bool = False) -> Iterator[None]:
    """Print each distinct library warning once on stderr as ``warning: ...``, when it is
    raised (so a warning about work still to come, e.g. truncation, precedes that work),
    redacted for every secret the command holds."""
    seen: set[str] = set()

    def show(message: Any, *_args: Any, **_kw: Any) -> None:
        from .._util.secrets import redact  # lazy: html and urllib, only once a warning comes

        text = redact(str(message))
        if not quiet and text not in seen:
            seen.add(text)

            print(f"warning: {one_line(text)}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield


def print_json(obj: Any) -> None:
    """One compact JSON object per line (JSON Lines)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def print_result(output_format: str, data: Any, text: str | Callable[[], str]) -> None:
    """What a :data:`TEXT_OR_JSON` command prints: ``data`` as one JSON object, or ``text``
    (a string, or a function making it, called only for text) with hidden characters shown
    as ``\\uXXXX`` (ids, names and file names in it are untrusted)."""
    if output_format == "json":
        print_json(data)
    else:
        click.echo(visible_text(text if isinstance(text, str) else text()))


def fmt(value: float, decimals: int, is_count: bool = False) -> str:
    """Render a value: counts as integers, others with ``decimals`` decimals."""
    return str(round(value)) if is_count else f"{value:.{decimals}f}"


def vocab_option(default: str | None, *names: str, concept: str, help: str) -> Any:
    """A click option over a :mod:`searchbench.vocab` concept: canonical values and aliases
    accepted (case-insensitive), the value passed on in its canonical spelling, an unknown
    value a usage error (exit 2, Click's convention) listing the valid values and aliases."""
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
    from ..data import read_queries_jsonl  # lazy: cli start-up (data, numpy)

    if path.is_dir():
        found = [path / n for n in ("queries.jsonl", "queries.jsonl.gz") if (path / n).is_file()]
        if not found:
            raise ConfigError(f"--queries {path}: the folder holds no queries.jsonl; expected "
                              "a native evaluation set folder or a queries.jsonl file")
        path = found[0]
    return read_queries_jsonl(path)


METRIC_OPTION = vocab_option("cosine", "--metric", concept="metric",
                             help="cosine, ip or l2 (squared); aliases cos, dot, "
                                  "inner_product, …")
UNANSWERABLE_OPTION = vocab_option(
    None, "--unanswerable", concept="unanswerable policy",
    help="Queries marked \"no_answer\": true in --queries: 'skip' leaves them out of every "
         "measure (default), 'zero' scores them as trec_eval does (0 where no document is "
         "relevant). The count is printed either way.")


def unanswerable_marks(queries: Any, policy: str | None) -> tuple[list[str], str]:
    """``(ids marked no_answer, policy)`` of ``--queries`` and ``--unanswerable``; the
    policy without a queries file is an error (nothing would be marked)."""
    if queries is None:
        if policy is not None:
            raise UsageError("--unanswerable needs --queries: the queries.jsonl (or native "
                             "set folder) whose \"no_answer\": true marks say which queries "
                             "have no answer")
        return [], "skip"
    from ..measures import no_answer_ids  # lazy: cli start-up (measures, numpy)

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
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def printable(text: str) -> str:
    """Hidden characters (ANSI escapes, bidi overrides, zero-width…) shown as ``\\uXXXX``:
    the one rule of :func:`searchbench._util.visible_name`."""
    return visible_name(text)


def box_table(header: list[str], rows: list[list[str]], right: list[bool],
              title: str | None = None) -> str:
    """The table rich draws by default (heavy head box, one space of padding), at its natural
    width: for output that is not a terminal, where rich would squeeze it into 80 columns
    and cut names short - and without importing rich."""
    grid = [[printable(c) for c in row] for row in [header, *rows]]
    widths = [max(_cells(row[i]) for row in grid) for i in range(len(header))]

    def line(row: list[str], bar: str) -> str:
        cells = [(" " * (w - _cells(c)) + c if r else c + " " * (w - _cells(c)))
                 for c, w, r in zip(row, widths, right, strict=True)]
        return bar + bar.join(f" {c} " for c in cells) + bar

    def rule(left: str, fill: str, mid: str, end: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + end

    out = [printable(title)] if title else []
    out += [rule("┏", "━", "┳", "┓"), line(grid[0], "┃"), rule("┡", "━", "╇", "┩")]
    out += [line(row, "│") for row in grid[1:]]
    out.append(rule("└", "─", "┴", "┘"))
    return "\n".join(out) + "\n"


# -- the CLI convention (ARCHITECTURE §9.1): one declaration per shared option ------------------
class UsageError(click.UsageError):
    """A command line that cannot work as given, found by searchbench rather than Click:
    options that conflict or an option that needs another. ONE ``error:`` line, exit 2
    (Click's own usage errors exit 2 too; data and runtime errors exit 1)."""

    def show(self, file: Any = None) -> None:
        click.echo("error: " + one_line(self.format_message()), err=True)


EVALSET_HELP = ("Evaluation set: pyref | DIR | native:DIR | beir:DIR | beir-download:NAME | "
                "cranfield:DIR | cisi:DIR | med:DIR | cacm:DIR | vaswani:DIR | "
                "trec:DOCS,TOPICS,QRELS")
FOLDER_HELP = "Evaluation-set folder (native: corpus.jsonl, queries.jsonl, qrels.tsv)."


def evalset_argument(name: str = "evalset", *, folder: bool = False, exists: bool = True,
                     required: bool = True) -> Any:
    """The evaluation set, first positional argument of every command that takes one, shown
    as ``EVALSET``: a native folder (``folder``; one that ``exists`` unless the command
    creates it) or any spec :func:`~searchbench.load_evalset` reads. ``name`` is the Python
    parameter name only."""
    return click.argument(name, metavar="EVALSET", required=required,
                          type=paths(must_exist=exists) if folder else str,
                          help=FOLDER_HELP if folder else EVALSET_HELP)


class AliasOption(click.Option):
    """An option that still accepts old spellings (``aliases``) so that scripts keep working:
    hidden from ``--help`` and the docs (``opts`` holds the documented names only), one
    ``warning:`` line on stderr when used."""

    def __init__(self, *args: Any, aliases: Sequence[str] = (), **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.aliases = tuple(aliases)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        documented = self.opts
        self.opts = [*documented, *self.aliases]
        try:
            super().add_to_parser(parser, ctx)
        finally:
            self.opts = documented

        for old in self.aliases:
            table = parser._long_opt if old.startswith("--") else parser._short_opt
            option = copy.copy(table[old])  # its own entry: only the old spelling warns
            process = option.process

            def warned(value: Any, state: Any, process: Any = process, old: str = old) -> None:
                deprecated(old, "/".join(documented))
                process(value, state)

            option.process = warned
            table[old] = option


def deprecated(old: str, new: str) -> None:
    """The one line an old spelling prints (it is accepted, not documented)."""
    click.echo(f"warning: {old} is deprecated; use {new}", err=True)


class EvalsetFirst(click.Command):
    """A command whose evaluation set was once an option (``--evalset SET``): that old form
    still works, moved to the first argument with a ``warning:`` line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = list(args)
        for i, word in enumerate(args):
            if word == "--":
                break
            if word == "--evalset" and i + 1 < len(args):
                value = args.pop(i + 1)
            elif word.startswith("--evalset="):
                value = word.split("=", 1)[1]
            else:
                continue
            del args[i]
            deprecated("--evalset SET", f"{ctx.command_path} SET ...")
            args.insert(0, value)
            break
        return super().parse_args(ctx, args)


class HiddenArgument(click.Argument):
    """An optional positional argument kept for an old command form: not in the usage line,
    the help (with :class:`HidingCommand`) or the docs."""

    hidden = True

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


class HidingCommand(click.Command):
    """A command whose help leaves out its hidden arguments (:class:`HiddenArgument`)."""

    def format_arguments(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        args = [p for p in self.get_params(ctx)
                if isinstance(p, click.Argument) and not getattr(p, "hidden", False)]
        if any(arg.help is not None for arg in args):
            with formatter.section("Positional arguments"):
                formatter.write_dl([arg.get_help_record(ctx) for arg in args])


FORCE_OPTION = click.option("--force", is_flag=True,
                            help="Replace an existing output instead of refusing it.")


class OutputOption(AliasOption):
    """``-o/--output``: every file or folder a command writes. ``replaces_own`` marks a report
    re-rendered from a store, which may replace its own earlier files (and says so); every
    other output comes with ``--force`` and is refused when it exists
    (:func:`refuse_existing`)."""

    def __init__(self, *args: Any, replaces_own: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.replaces_own = replaces_own


def output_option(help: str, *, required: bool = False, default: Any = None,
                  aliases: Sequence[str] = (), replaces_own: bool = False) -> Any:
    """``-o/--output`` (a :class:`~pathlib.Path`) and, for a data output, ``--force``."""
    option = click.option("-o", "--output", "output", cls=OutputOption, type=paths(),
                          required=required, default=default, aliases=aliases,
                          replaces_own=replaces_own, help=help)
    if replaces_own:
        return option

    def both(f: Any) -> Any:
        return option(FORCE_OPTION(f))

    return both


def refuse_existing(force: bool, *outputs: Path | None) -> None:
    """The one rule for data outputs (a run, vectors, a sweep, a pool, an evaluation set):
    an existing file, or a folder that is not empty, is refused unless ``--force``."""
    if force:
        return

    for path in outputs:
        if path is None or not os.path.lexists(path):
            continue
        if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
            continue  # an empty folder holds nothing to lose
        raise OutputError(f"cannot write {path}: it exists already; pass --force to replace "
                          "it, or choose another -o/--output")


_FLAG_GIVEN = "searchbench.format flag"


def format_option(*allowed: str, default: str | tuple[str, ...] | None,
                  help: str = "Output format.", json_alias: bool = True, multiple: bool = False,
                  aliases: Sequence[str] = (), flag_aliases: dict[str, str] | None = None
                  ) -> Any:
    """``--format/-f`` over the ``format`` vocabulary of :mod:`searchbench.vocab` (aliases
    such as ``md`` accepted), limited to the formats ``allowed`` for this command; a value
    outside them is a usage error (exit 2). With ``json`` among them, ``--json`` is its
    documented alias. ``aliases``: old option spellings (hidden); ``flag_aliases``: old
    flags meaning one format (hidden). A flag and a different ``--format`` is a usage
    error."""
    def one(value: str) -> str:
        try:
            found = canonical("format", value)
        except ConfigError as exc:
            raise click.BadParameter(str(exc)) from None
        if found not in allowed:
            raise click.BadParameter(f"{value!r} is not a format this command writes; "
                                     f"expected one of {', '.join(allowed)}")
        return found

    def convert(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        flag = ctx.meta.get(_FLAG_GIVEN)  # the flags are eager: seen before --format
        given = ctx.get_parameter_source("output_format") is ParameterSource.COMMANDLINE
        if flag is not None:
            name, wanted = flag
            if given and wanted not in ((value,) if isinstance(value, str) else value):
                raise UsageError(f"{name} and --format {_shown(value)} ask for "
                                       "different formats; give one")
            value = (wanted,) if multiple else wanted
        if value is None or (multiple and not value):
            return value
        if multiple and any(v.strip().lower() == "all" for v in value):
            deprecated("--format all", "no --format (every format) or a --format per file")
            return tuple(allowed)
        return tuple(one(v) for v in value) if multiple else one(value)

    options = [click.option("--format", "-f", "output_format", cls=AliasOption,
                            aliases=aliases, default=default, callback=convert,
                            metavar="[" + "|".join(allowed) + "]", multiple=multiple,
                            show_default=True, help=help)]
    flags = {**({"--json": "json"} if json_alias and "json" in allowed else {}),
             **(flag_aliases or {})}
    for flag, value in flags.items():
        documented = flag == "--json" and json_alias
        options.append(click.option(flag, is_flag=True, expose_value=False, is_eager=True,
                                    callback=_flag_given(flag, value, documented),
                                    hidden=not documented,
                                    help="Same as --format json." if documented else None))

    def apply(f: Any) -> Any:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else ",".join(value)


def _flag_given(flag: str, value: str, documented: bool) -> Any:
    """Remember a format flag given on the command line for ``--format`` to take."""
    def callback(ctx: click.Context, _param: click.Parameter, given: bool) -> None:
        if not given:
            return
        if not documented:
            deprecated(flag, f"--format {value}")
        ctx.meta[_FLAG_GIVEN] = (flag, value)

    return callback


TEXT_OR_JSON = format_option("text", "json", default="text", help="text, or one JSON object.")
