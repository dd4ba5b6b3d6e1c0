"""``searchbench evalset check|convert|stats|chunk-qrels SPEC`` and
``searchbench datasets list``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from ._output import QUIET_OPTION, print_json, reported_warnings
from .main import app

evalset_app = typer.Typer(help="Check, convert and describe evaluation sets.",
                          no_args_is_help=True)
datasets_app = typer.Typer(help="Built-in, folder and downloadable evaluation sets.",
                           no_args_is_help=True)
app.add_typer(evalset_app, name="evalset")
app.add_typer(datasets_app, name="datasets")

SPEC_ARG = typer.Argument(
    ..., help="pyref | DIR | native:DIR | beir:DIR | beir-download:NAME | cranfield:DIR | "
              "cisi:DIR | med:DIR | cacm:DIR | vaswani:DIR | trec:DOCS,TOPICS,QRELS")
SPLIT_OPTION = typer.Option("test", "--split", help="BEIR split (qrels/<split>.tsv).")
JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object instead of text.")
DATA_DIR_OPTION = typer.Option(
    None, "--data-dir", help="Offline copies for beir-download: a folder holding NAME.zip or "
                             "NAME/ (also $SEARCHBENCH_DATA_DIR).")
CACHE_OPTION = typer.Option(None, "--cache-dir",
                            help="Download cache (default $SEARCHBENCH_CACHE or "
                                 "~/.cache/searchbench).")


class OutFormat(StrEnum):
    native = "native"
    beir = "beir"


def _load(spec: str, split: str, data_dir: Path | None, cache_dir: Path | None,
          strict: bool = True, quiet: bool = False) -> Any:
    from .._util import safe_component
    from ..collections.registry import load_evalset

    safe_component(split, "split")  # it names qrels/<split>.tsv: no '/', '..', NUL…

    return load_evalset(spec, split, strict=strict, data_dir=data_dir, cache_dir=cache_dir,
                        quiet=quiet)


@evalset_app.command("check")
def check_command(
    spec: str = SPEC_ARG,
    split: str = SPLIT_OPTION,
    sd: float = typer.Option(0.2, "--sd", min=0.0,
                             help="Assumed SD of per-query nDCG@10 differences between two "
                                  "systems, for the detectable-difference estimate."),
    as_json: bool = JSON_OPTION,
    data_dir: Path | None = DATA_DIR_OPTION,
    cache_dir: Path | None = CACHE_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Validate an evaluation set; exit 1 when it has errors.

    Example: searchbench evalset check my-set/
    """
    from ..collections.check import check_evalset

    with reported_warnings(quiet=True):
        es = _load(spec, split, data_dir, cache_dir, strict=False, quiet=quiet)
    report = check_evalset(es, sd=sd)
    if as_json:
        print_json(report.to_dict())
    else:
        typer.echo(report.to_text())
    if not report.ok:
        raise typer.Exit(1)


@evalset_app.command("convert")
def convert_command(
    spec: str = SPEC_ARG,
    to: Path = typer.Option(..., "--to", help="Output folder: new or empty (or --force)."),
    out_format: OutFormat = typer.Option(OutFormat.native, "--format",
                                         help="native (ARCHITECTURE §5.1) or beir."),
    split: str = SPLIT_OPTION,
    compress: bool = typer.Option(False, "--compress", help="Native: write corpus.jsonl.gz."),
    force: bool = typer.Option(False, "--force",
                               help="Replace a non-empty --to folder as a whole (never the "
                                    "source set)."),
    data_dir: Path | None = DATA_DIR_OPTION,
    cache_dir: Path | None = CACHE_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Write an evaluation set in the native or BEIR format, as a whole folder.

    BEIR has no place for evidence quotes: they go to a side file evidence.jsonl in the
    folder, which beir:DIR reads back.

    The set is written into a temporary folder next to --to that then takes its place: a
    non-empty --to is refused unless --force (then replaced entirely, never mixed), and
    the source set is never written into.

    Example: searchbench evalset convert beir:scifact --to my-set/ --format native
    """
    from ..data.beir import write_beir

    with reported_warnings(quiet):
        es = _load(spec, split, data_dir, cache_dir, quiet=quiet)
    if out_format is OutFormat.beir:
        write_beir(es, to, split, overwrite=force)
    else:
        es.write(to, compress=compress, overwrite=force)
    where = (" (in the side file evidence.jsonl: BEIR has no place for them; searchbench "
             "reads them back, BEIR's own tools ignore them)"
             if out_format is OutFormat.beir and es.evidence else "")
    typer.echo(f"wrote {to} ({out_format.value}): {len(es.corpus)} documents, "
               f"{len(es.queries)} queries, {len(es.qrels)} judgments, "
               f"{len(es.evidence)} evidence quotes{where}")


@evalset_app.command("chunk-qrels")
def chunk_qrels_command(
    spec: str = SPEC_ARG,
    chunk: str = typer.Option(..., "--chunk", help="The chunker of the run: "
                              "tokens:SIZE[:OVERLAP], sentences:N[:OVERLAP] or "
                              "recursive:MAX_TOKENS."),
    model: str | None = typer.Option(None, "--model", help="The run's dense model (for -r "
                                     "dense or hybrid): tokens are then its model tokens; "
                                     "without it, whitespace words (-r bm25)."),
    output: Path = typer.Option(..., "-o", "--output", help="Qrels file to write."),
    qrels_format: str = typer.Option("trec", "--format", help="trec (qid 0 docid grade) or "
                                     "beir (tsv with header)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing OUTPUT."),
    split: str = SPLIT_OPTION,
    data_dir: Path | None = DATA_DIR_OPTION,
    cache_dir: Path | None = CACHE_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Write the chunk-level qrels of a chunking, to score a `run --level chunk` later.

    The chunk ids are exactly those `searchbench run SPEC --level chunk --chunk CHUNK
    [--model M]` returns (the same chunker, counting the same token unit); each chunk is
    judged by overlap with the evidence quotes (see docs: chunk-level judgments).

    Example: searchbench evalset chunk-qrels my-set/ --chunk tokens:256:32 --model minilm
    -o chunk-qrels.txt
    """
    import os

    from ..errors import ConfigError, OutputError
    from ..retrieval.chunking import parse_chunker
    from ..retrieval.spec import DenseSpec, chunking_label, encoder_for, evalset_chunk_qrels

    if qrels_format not in ("trec", "beir"):
        raise ConfigError(f"--format {qrels_format!r}: expected trec or beir")
    if parse_chunker(chunk) is None:  # a bad --chunk fails before any loading
        raise ConfigError(f"--chunk {chunk!r}: chunk-level judgments need a chunker such as "
                          "tokens:256:32, sentences:5 or recursive:512")
    if not force and os.path.lexists(output):
        raise OutputError(f"cannot write {output}: it exists already (use --force, or "
                          "another name)")
    with reported_warnings(quiet):
        es = _load(spec, split, data_dir, cache_dir, quiet=quiet)
        enc = (encoder_for(DenseSpec(model=model), {}, quiet or None) if model is not None
               else None)
        if not quiet:
            typer.echo(f"chunks: {chunking_label(chunk, encoder=enc)}", err=True)
        qrels = evalset_chunk_qrels(es, chunk, enc, quiet=quiet or None)
    qrels.to_file(output, format=qrels_format)
    relevant = int((qrels.grades > 0).sum())
    typer.echo(f"wrote {output}: {len(qrels)} chunk judgments ({relevant} relevant) for "
               f"{qrels.n_queries} queries, chunks {chunking_label(chunk, encoder=enc)}")


def _dist_text(d: dict[str, Any]) -> str:
    if not d.get("n"):
        return "-"
    return (f"min {d['min']:g}  median {d['median']:g}  mean {d['mean']:.1f}  "
            f"p90 {d['p90']:g}  max {d['max']:g}")


@evalset_app.command("stats")
def stats_command(
    spec: str = SPEC_ARG,
    split: str = SPLIT_OPTION,
    as_json: bool = JSON_OPTION,
    data_dir: Path | None = DATA_DIR_OPTION,
    cache_dir: Path | None = CACHE_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Counts, grades, judged documents per query, query and document lengths.

    Example: searchbench evalset stats cranfield:../shared/data/cranfield
    """
    from ..collections.check import evalset_stats

    with reported_warnings(quiet):
        es = _load(spec, split, data_dir, cache_dir, quiet=quiet)
    st = evalset_stats(es)
    if as_json:
        print_json(st)
        return
    src = ", ".join(f"{k} {v}" for k, v in sorted(st["query_sources"].items()))
    grades = ", ".join(f"{g}: {n}" for g, n in st["grades"].items())
    rows = [
        ("set", f"{st['name']} ({st.get('format', '?')})"),
        ("documents", str(st["documents"])),
        ("queries", f"{st['queries']} ({st['judged_queries']} judged; {src}; "
                    f"{st['verified_queries']} verified)"),
        ("judgments", str(st["judgments"])),
        ("evidence quotes", str(st["evidence"])),
        ("grades", grades or "-"),
        ("judged docs / query", _dist_text(st["judged_per_query"])),
        ("relevant docs / query", _dist_text(st["relevant_per_query"])),
        ("query length (words)", _dist_text(st["query_words"])),
        ("document length (words)", _dist_text(st["document_words"])),
        ("content hash", st["content_hash"]),
    ]
    rows += [("note", n) for n in st["notes"]]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        typer.echo(f"{key:<{width}}  {value}")


@datasets_app.command("list")
def list_command(as_json: bool = JSON_OPTION) -> None:
    """Evaluation sets searchbench knows: built-in, folder loaders, downloadable BEIR sets."""
    from ..collections.registry import list_datasets

    rows = list_datasets()
    if as_json:
        print_json({"datasets": rows})
        return
    width = max(len(r["spec"]) for r in rows)
    for r in rows:
        mark = "ready" if r["available"] else ("cached: no" if r["kind"] == "download"
                                               else "missing")
        typer.echo(f"{r['spec']:<{width}}  {r['kind']:<8}  {mark:<10}  {r['description']}")
