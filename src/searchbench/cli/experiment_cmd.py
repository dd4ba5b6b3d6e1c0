"""``searchbench experiment init|run|report|list``: the config grid, the store, the report."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._util import visible_name, write_text
from ..errors import ConfigError
from ._output import (
    DECIMALS_OPTION,
    FORCE_OPTION,
    QUIET_OPTION,
    format_option,
    output_option,
    paths,
    refuse_existing,
    reported_warnings,
    vocab_option,
)

if TYPE_CHECKING:
    from ..report import ExperimentReport

@click.group("experiment", no_args_is_help=True)
def experiment_app() -> None:
    """Run a grid of retrievers × models × chunkers on an evaluation set, store the results,
    report them."""


STORE_OPTION = click.option("--store", "-s", type=paths(), help="Results store (SQLite); "
                                                              "default: the config's path "
                                                              "with .sqlite.")
CONFIG_ARG = click.argument("config", type=paths(), help="Experiment config (.toml).")
REPORT_FORMATS = ("html", "markdown", "json")


def _log(quiet: bool):
    return None if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))


@experiment_app.command("init")
@click.argument("path", metavar="CONFIG", type=paths(),
                help="Where to write the example config (.toml).")
@FORCE_OPTION
def init_command(path: Path, force: bool) -> None:
    """Write a commented example config to start from."""
    from ..experiment import example_config  # lazy: cli start-up (experiment, numpy)

    refuse_existing(force, path)
    text = example_config().replace("THIS_FILE", str(path))
    write_text(path, text, overwrite=force)
    print(f"wrote {path}; edit it, then: searchbench experiment run {path}")


@experiment_app.command("run")
@CONFIG_ARG
@STORE_OPTION
@QUIET_OPTION
def run_command(config: Path, store: Path | None, quiet: bool) -> None:
    """Run every cell of the grid not yet in the store (resumes after an interruption)."""
    from ..experiment import load_config, run_experiment  # lazy: cli start-up (experiment, numpy)

    cfg = load_config(config)  # every config error before any work
    with reported_warnings(quiet):
        summary = run_experiment(cfg, store, quiet=quiet or None, log=_log(quiet))
    print(f"{cfg.name}: {len(summary.computed)} cells run, {len(summary.skipped)} already in "
          f"the store ({summary.seconds:.1f} s); store: {summary.store_path}")
    if summary.reused:
        print(f"{len(summary.reused)} of the cells run reused the run file and scores of an "
              "identical stored cell (same settings, other names): nothing retrieved again")
    if summary.redone:
        print(f"{len(summary.redone)} cells were computed again: their run file was missing "
              "or had changed")
    print(f"next: searchbench experiment report {config}"
          + (f" --store {store}" if store else ""))


def means_table(group, decimals: int, systems=None, title_note: str = "",
                legend_text: str | None = None) -> None:
    """A compact rich table: a row per system (``systems``, default all, in that order), a
    column per measure, ▲/▼ marks; then the legend (``legend_text`` replaces the standard
    one) and every note of the comparison (low judged coverage …)."""
    from rich.console import Console  # lazy: cli start-up (rich)
    from rich.markup import escape  # lazy: cli start-up (rich)
    from rich.table import Table  # lazy: cli start-up (rich)

    from ..comparison import (  # lazy: cli start-up (comparison, numpy)
        judged_header,
        legend,
        means_rows,
    )

    cmp = group.comparison
    table = Table(title=f"{group.title} · {len(group.query_ids)} queries{title_note}",
                  title_justify="left")
    table.add_column("system")
    for m in [*cmp.measures, *judged_header(cmp)]:
        table.add_column(escape(m), justify="right")
    for row in means_rows(cmp, decimals, systems):
        table.add_row(escape(row.label),
                      *((f"[bold]{c.text}[/bold]" if c.best else c.text) + (c.mark or " ")
                        for c in row.cells), *row.judged)
    console = Console(highlight=False, emoji=False,
                      width=None if sys.stdout.isatty() else 120)
    console.print(table)
    console.print(escape(legend(cmp) if legend_text is None else legend_text), style="dim")
    for note in cmp.notes:
        console.print(f"note: {escape(note)}", style="yellow")


def print_means_tables(report, decimals: int) -> None:
    """The means table of every level of ``report`` (details are in the report files)."""
    for group in report.groups:
        if group.comparison is not None:
            means_table(group, decimals)
        else:
            for note in group.notes:
                print(f"note: {group.title}: {note}")


def build_report(config: Path, store: Path | None, out: Path | None,
                 output_format: tuple[str, ...], decimals: int,
                 unanswerable: str | None = None
                 ) -> tuple[ExperimentReport, dict[str, Path], set[str]]:
    """Read the results of ``config`` from the store and write the report files; also the
    kinds of the files that replaced earlier ones."""
    from ..experiment import default_store, load_config  # lazy: cli start-up (experiment, numpy)
    from ..report import experiment_report  # lazy: cli start-up (report, numpy)

    cfg = load_config(config)
    path = store or default_store(cfg)
    if not path.is_file():
        raise ConfigError(f"{path}: no results store; run 'searchbench experiment run "
                          f"{config}' first (or pass --store)")
    report = experiment_report(path, config=cfg, unanswerable=unanswerable)
    folder = out or cfg.base_dir / "report"
    formats = tuple(f for f in REPORT_FORMATS if f in output_format)
    before = set(folder.iterdir()) if folder.is_dir() else set()
    written = report.write(folder, decimals=decimals, formats=formats)
    return report, written, {kind for kind, p in written.items() if p in before}


@experiment_app.command("report")
@CONFIG_ARG
@STORE_OPTION
@output_option("Folder of the report files (default: report/ next to the config); files of an "
               "earlier report there are replaced, and said so.", aliases=("--out",),
               replaces_own=True)
@format_option(*REPORT_FORMATS, default=REPORT_FORMATS, multiple=True, json_alias=False,
               help="Which files to write (repeatable; default: all three).")
@click.option("--open", "open_browser", is_flag=True, help="Open the HTML report.")
@click.option("--tables/--no-tables", default=True, help="Print the comparison tables.")
@vocab_option(None, "--unanswerable", concept="unanswerable policy",
              help="Queries the evaluation set marks \"no_answer\": true: 'skip' leaves them "
                   "out of every measure, 'zero' scores them as trec_eval does (default: the "
                   "config's 'unanswerable', else skip). The count is printed either way.")
@DECIMALS_OPTION
@QUIET_OPTION
def report_command(config: Path, store: Path | None, output: Path | None,
                   output_format: tuple[str, ...], open_browser: bool, tables: bool,
                   unanswerable: str | None, decimals: int, quiet: bool) -> None:
    """Write the HTML, Markdown and JSON report of an experiment from its store."""
    with reported_warnings(quiet):
        report, written, again = build_report(config, store, output, output_format,
                                              decimals, unanswerable)
    if tables:
        print_means_tables(report, decimals)
    if report.missing:
        print(f"warning: {len(report.missing)} cells are not in the store yet; run "
              f"'searchbench experiment run {config}'", file=sys.stderr)
    for kind, p in written.items():
        print(f"{kind}: {p}" + (" (replaced)" if kind in again else ""))
    if open_browser and "html" in written:
        import webbrowser  # lazy: cli start-up (webbrowser)

        webbrowser.open(written["html"].resolve().as_uri())


@experiment_app.command("list")
@click.option("--store", "-s", multiple=True, type=paths(),
              help="Results store(s); default: every *.sqlite store in the working folder.")
def list_command(store: tuple[Path, ...]) -> None:
    """List past experiments in results stores."""
    from ..experiment import ResultsStore, StoreError  # lazy: cli start-up (experiment, numpy)

    stores = list(store) or sorted(Path.cwd().glob("*.sqlite"))
    if not stores:
        raise ConfigError("no results store in the working folder; pass --store PATH")
    rows = []
    for p in stores:
        if not p.is_file():
            raise ConfigError(f"{p}: no such results store")
        try:
            with ResultsStore(p, create=False) as db:
                rows += [(p, r) for r in db.experiments()]
        except StoreError:
            if store:
                raise
    print("store\tid\tname\tcells\tupdated\tconfig")
    for p, r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r["updated"]))
        print(f"{p}\t{r['id']}\t{_plain(r['name'])}\t{r['cells']}\t{when}\t"
              f"{_plain(r['config_path'] or '-')}")


def _plain(text: str) -> str:
    """``text`` safe for one TSV field on a terminal: control and format characters (tab,
    newline, ANSI escapes, bidi overrides) shown as ``\\uXXXX`` — a store written before
    names were validated may hold them (:func:`searchbench._util.visible_name`)."""
    return visible_name(text)
