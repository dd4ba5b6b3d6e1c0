"""``searchbench convert``: qrels and runs between TREC, BEIR, Parquet and Arrow IPC."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import DataFormatError
from ._output import (
    HiddenArgument,
    HidingCommand,
    UsageError,
    deprecated,
    format_option,
    output_option,
    paths,
    refuse_existing,
)

FORMATS = ("trec", "beir", "parquet", "arrow")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
             ".ipc": "arrow", ".tsv": "beir"}


def format_of(path: Path) -> str:
    """The output format a file name asks for (``.gz`` looked through; default: trec)."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return _SUFFIXES.get(Path(name).suffix.lower(), "trec")


@click.command("convert", cls=HidingCommand)
@click.argument("source", type=paths(), help="Qrels or run: TREC, BEIR .tsv, Parquet or Arrow.")
@click.argument("target", cls=HiddenArgument, type=paths(), required=False)
@output_option("File to write (required; refused if it exists, unless --force).")
@format_option(*FORMATS, default=None, json_alias=False, aliases=("--to",),
               help="Output format. Default: from OUTPUT's suffix (.parquet, .arrow/.feather/"
                    ".ipc, .tsv = BEIR qrels, anything else TREC).")
@click.option("--kind", type=click.Choice(("auto", "qrels", "run")), default="auto",
              help="What SOURCE holds; auto: a run has 6 fields or a score column.")
def convert_command(source: Path, target: Path | None, output: Path | None, force: bool,
                    output_format: str | None, kind: str) -> None:
    """Convert qrels or a run between TREC, BEIR, Parquet and Arrow IPC files.

    Values are checked as when evaluating (ids, grades, finite scores, duplicates). Example:
    searchbench convert bm25.trec -o bm25.parquet
    """
    # lazy: cli start-up (data, pyarrow, numpy)
    from ..data import Qrels, Run, detect_kind, write_columnar_qrels, write_columnar_run

    target = _output(target, output)
    fmt = output_format or format_of(target)
    refuse_existing(force, target)
    what = detect_kind(source) if kind == "auto" else kind
    if what == "run":
        if fmt == "beir":
            raise DataFormatError(f"{source}: is a run; BEIR files hold qrels: expected "
                                  "--format trec, parquet or arrow for a run")
        run = Run.from_file(source)
        if fmt == "trec":
            run.to_file(target)
        else:
            write_columnar_run(run, target, "parquet" if fmt == "parquet" else "arrow")
    else:
        qrels = Qrels.from_file(source)
        if fmt in ("trec", "beir"):
            qrels.to_file(target, format=fmt)
        else:
            write_columnar_qrels(qrels, target, "parquet" if fmt == "parquet" else "arrow")
    click.echo(f"wrote {target} ({fmt} {what})", err=True)


def _output(target: Path | None, output: Path | None) -> Path:
    """The file to write: ``-o/--output``, or the old second argument (deprecated)."""
    if target is not None and output is not None:
        raise UsageError(f"two files to write ({target} and -o {output}); give -o only")
    if target is not None:
        deprecated("convert SOURCE TARGET", "convert SOURCE -o TARGET")
        return target
    if output is None:
        raise UsageError("convert needs -o/--output FILE, the file to write")
    return output
