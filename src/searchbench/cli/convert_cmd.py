"""``searchbench convert``: qrels and runs between TREC, BEIR, Parquet and Arrow IPC."""

from __future__ import annotations

from pathlib import Path

import click

from ._output import paths

FORMATS = ("trec", "beir", "parquet", "arrow")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
             ".ipc": "arrow", ".tsv": "beir"}


def format_of(path: Path) -> str:
    """The output format a file name asks for (``.gz`` looked through; default: trec)."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return _SUFFIXES.get(Path(name).suffix.lower(), "trec")


@click.command("convert")
@click.argument("source", type=paths(), help="Qrels or run: TREC, BEIR .tsv, Parquet or Arrow.")
@click.argument("target", type=paths(), help="File to write (refused if it exists, unless "
                "--force).")
@click.option("--to", "to_format", type=click.Choice(FORMATS), default=None,
              help="Output format. Default: from TARGET's suffix (.parquet, .arrow/.feather/"
                   ".ipc, .tsv = BEIR qrels, anything else TREC).")
@click.option("--kind", type=click.Choice(("auto", "qrels", "run")), default="auto",
              help="What SOURCE holds; auto: a run has 6 fields or a score column.")
@click.option("--force", is_flag=True, help="Replace TARGET if it exists.")
def convert_command(source: Path, target: Path, to_format: str | None, kind: str,
                    force: bool) -> None:
    """Convert qrels or a run between TREC, BEIR, Parquet and Arrow IPC files.

    Values are checked as when evaluating (ids, grades, finite scores, duplicates). Example:
    searchbench convert bm25.trec bm25.parquet
    """
    from ..data import Qrels, Run, detect_kind, write_columnar_qrels, write_columnar_run
    from ..errors import DataFormatError, OutputError

    fmt = to_format or format_of(target)
    if target.exists() and not force:
        raise OutputError(f"cannot write {target}: it exists already (use --force, or another "
                          "name)")
    what = detect_kind(source) if kind == "auto" else kind
    if what == "run":
        if fmt == "beir":
            raise DataFormatError(f"{source}: is a run; BEIR files hold qrels: expected "
                                  "--to trec, parquet or arrow for a run")
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
