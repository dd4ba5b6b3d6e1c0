"""``searchbench evalset check|convert|stats|chunk-qrels|init|add-queries EVALSET`` and
``searchbench datasets list``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .._util import refuse_sources, safe_component
from ..errors import ConfigError
from ._output import (
    QUIET_OPTION,
    TEXT_OR_JSON,
    evalset_argument,
    format_option,
    output_option,
    paths,
    print_result,
    refuse_existing,
    reported_warnings,
)


@click.group("evalset", no_args_is_help=True)
def evalset_app() -> None:
    """Create, check, convert and describe evaluation sets."""


@click.group("datasets", no_args_is_help=True)
def datasets_app() -> None:
    """Built-in, folder and downloadable evaluation sets."""


SPEC_ARG = evalset_argument("spec")
SPLIT_OPTION = click.option("--split", default="test", help="BEIR split (qrels/<split>.tsv).")
DATA_DIR_OPTION = click.option(
    "--data-dir", type=paths(),
    help="Offline copies for beir-download: a folder holding NAME.zip or NAME/ (also "
         "$SEARCHBENCH_DATA_DIR).")
CACHE_OPTION = click.option("--cache-dir", type=paths(),
                            help="Download cache (default $SEARCHBENCH_CACHE or "
                                 "~/.cache/searchbench).")


def _load(spec: str, split: str, data_dir: Path | None, cache_dir: Path | None,
          strict: bool = True, quiet: bool = False) -> Any:
    from ..collections import load_evalset  # lazy: cli start-up (collections, numpy)

    safe_component(split, "split")  # it names qrels/<split>.tsv: no '/', '..', NUL…

    return load_evalset(spec, split, strict=strict, data_dir=data_dir, cache_dir=cache_dir,
                        quiet=quiet)


@evalset_app.command("check")
@SPEC_ARG
@SPLIT_OPTION
@click.option("--sd", default=0.2, type=click.FloatRange(min=0.0), metavar="FLOAT",
              help="Assumed SD of per-query nDCG@10 differences between two systems, for the "
                   "detectable-difference estimate.")
@TEXT_OR_JSON
@DATA_DIR_OPTION
@CACHE_OPTION
@QUIET_OPTION
def check_command(spec: str, split: str, sd: float, output_format: str, data_dir: Path | None,
                  cache_dir: Path | None, quiet: bool) -> None:
    """Validate an evaluation set; exit 1 when it has errors.

    Shows the shares of real, synthetic and verified queries and, for a native folder with a
    judging store (judging.sqlite), the judges' agreement.

    Example: searchbench evalset check my-set/
    """
    from ..collections import check_evalset  # lazy: cli start-up (collections, numpy)

    with reported_warnings(quiet=True):
        es = _load(spec, split, data_dir, cache_dir, strict=False, quiet=quiet)
    report = check_evalset(es, sd=sd)
    judged = _judge_agreement(es)
    print_result(output_format,
                 {**report.to_dict(), **({"agreement": judged.to_dict()} if judged else {})},
                 lambda: report.to_text() + (f"\njudge agreement: {judged.summary()}"
                                             if judged is not None else ""))
    if not report.ok:
        raise SystemExit(1)


def _judge_agreement(es: Any) -> Any:
    """The agreement report of a native set's judging store (None without one)."""
    path = es.provenance.get("path")
    if es.provenance.get("format") != "native" or not isinstance(path, str):
        return None
    from ..judging import store_judgments  # lazy: cli start-up (judging, numpy)

    labels = store_judgments(path)
    if not labels:
        return None
    from ..judging import agreement  # lazy: cli start-up (judging, numpy)

    return agreement(labels, n_boot=1000, seed=0)


@evalset_app.command("init")
@evalset_argument("folder", folder=True, exists=False)
@click.option("--docs", required=True, type=paths(must_exist=True),
              help="The folder of documents (Markdown, text, HTML; PDF with the pdf extra).")
@click.option("--glob", "pattern", default=None, metavar="PATTERN",
              help="Which files, relative to --docs ('**/*.md'); default: every file with a "
                   "known suffix.")
@click.option("--prune", is_flag=True,
              help="Drop documents whose file is no longer found (default: keep them and "
                   "say so).")
@click.option("--max-file-size", "max_file_size", default="50MiB", show_default=True,
              metavar="SIZE",
              help="Skip (and report) files larger than this, e.g. 50MB, 200MiB, 1G; no "
                   "file is read past it.")
@TEXT_OR_JSON
def init_command(folder: Path, docs: Path, pattern: str | None, prune: bool,
                 max_file_size: str, output_format: str) -> None:
    """Create or refresh EVALSET/corpus.jsonl from a folder of documents.

    Ids are the files' relative paths (white space and '%' percent-encoded), titles the
    first heading, texts what an indexer sees (HTML: its visible text). Running it again
    adds new files, updates changed ones and reports removed ones; nothing is renumbered and
    queries, judgments and the judging store already in EVALSET are kept.

    Example: searchbench evalset init my-set/ --docs ./handbook/ --glob '**/*.md'
    """
    from ..judging import init_evalset, parse_size  # lazy: cli start-up (judging, numpy)

    report = init_evalset(folder, docs, glob=pattern, prune=prune,
                          max_file_bytes=parse_size(max_file_size, "--max-file-size"))
    print_result(output_format,
                 {"folder": str(folder), "documents": report.documents, "added": report.added,
                  "updated": report.updated, "unchanged": report.unchanged,
                  "removed": report.removed, "pruned": report.pruned,
                  "skipped": [{"path": p, "reason": r} for p, r in report.skipped]},
                 report.to_text)


@evalset_app.command("add-queries")
@evalset_argument("folder", folder=True)
@click.argument("file", type=paths(must_exist=True))
@click.option("--source", default="real", show_default=True,
              type=click.Choice(["real", "human", "logs", "curated", "synthetic"]),
              help="Who wrote the queries: real (stored as human: people's questions, from "
                   "search logs or tickets), logs, curated or synthetic.")
@click.option("--generator", default=None, metavar="MODEL",
              help="The model that wrote synthetic queries.")
@TEXT_OR_JSON
def add_queries_command(folder: Path, file: Path, source: str, generator: str | None,
                        output_format: str) -> None:
    """Add queries to EVALSET/queries.jsonl from a text file (one per line) or JSON Lines.

    New queries get ids q1, q2, ... never colliding with those in use (a JSON line may give
    its own id); a query already in the set (same text, case and spacing aside) is
    reported and skipped.

    Example: searchbench evalset add-queries my-set/ queries.txt --source real
    """
    from ..judging import add_queries  # lazy: cli start-up (judging, numpy)

    report = add_queries(folder, file, source=source, generator=generator)
    print_result(output_format,
                 {"queries": str(report.path), "added": report.added,
                  "duplicates": report.duplicates, "total": report.total},
                 report.to_text)


@evalset_app.command("convert")
@SPEC_ARG
@output_option("Output folder: new or empty; with --force a non-empty one is replaced as a "
               "whole (never the source set).", required=True, aliases=("--to",))
@format_option("native", "beir", default="native", json_alias=False,
               help="native (ARCHITECTURE §5.1) or beir.")
@SPLIT_OPTION
@click.option("--compress", is_flag=True, help="Native: write corpus.jsonl.gz.")
@DATA_DIR_OPTION
@CACHE_OPTION
@QUIET_OPTION
def convert_command(spec: str, output: Path, force: bool, output_format: str, split: str,
                    compress: bool, data_dir: Path | None, cache_dir: Path | None,
                    quiet: bool) -> None:
    """Write an evaluation set in the native or BEIR format, as a whole folder.

    BEIR has no place for evidence quotes: they go to a side file evidence.jsonl in the
    folder, which beir:DIR reads back.

    The set is written into a temporary folder next to OUTPUT that then takes its place: a
    non-empty OUTPUT is refused unless --force (then replaced entirely, never mixed), and
    the source set is never written into.

    Example: searchbench evalset convert beir:scifact -o my-set/ --format native
    """
    from ..data import write_beir  # lazy: cli start-up (data, numpy)

    with reported_warnings(quiet):
        es = _load(spec, split, data_dir, cache_dir, quiet=quiet)
    if output_format == "beir":
        write_beir(es, output, split, overwrite=force)
    else:
        es.write(output, compress=compress, overwrite=force)
    where = (" (in the side file evidence.jsonl: BEIR has no place for them; searchbench "
             "reads them back, BEIR's own tools ignore them)"
             if output_format == "beir" and es.evidence else "")
    click.echo(f"wrote {output} ({output_format}): {len(es.corpus)} documents, "
               f"{len(es.queries)} queries, {len(es.qrels)} judgments, "
               f"{len(es.evidence)} evidence quotes{where}")


@evalset_app.command("chunk-qrels")
@SPEC_ARG
@click.option("--chunk", required=True,
              help="The chunker of the run: tokens:SIZE[:OVERLAP], sentences:N[:OVERLAP] or "
                   "recursive:MAX_TOKENS.")
@click.option("--model", default=None,
              help="The run's dense model (for -r dense or hybrid): tokens are then its model "
                   "tokens; without it, whitespace words (-r bm25).")
@output_option("Qrels file to write.", required=True)
@format_option("trec", "beir", default="trec", json_alias=False,
               help="trec (qid 0 docid grade) or beir (tsv with header).")
@SPLIT_OPTION
@DATA_DIR_OPTION
@CACHE_OPTION
@QUIET_OPTION
def chunk_qrels_command(spec: str, chunk: str, model: str | None, output: Path,
                        force: bool, output_format: str, split: str, data_dir: Path | None,
                        cache_dir: Path | None, quiet: bool) -> None:
    """Write the chunk-level qrels of a chunking, to score a `run --level chunk` later.

    The chunk ids are exactly those `searchbench run SPEC --level chunk --chunk CHUNK
    [--model M]` returns (the same chunker, counting the same token unit); each chunk is
    judged by overlap with the evidence quotes (see docs: chunk-level judgments).

    Example: searchbench evalset chunk-qrels my-set/ --chunk tokens:256:32 --model minilm
    -o chunk-qrels.txt
    """
    from ..data import source_paths  # lazy: cli start-up (data, numpy)
    from ..retrieval import (  # lazy: cli start-up (retrieval, numpy)
        DenseSpec,
        chunking_label,
        encoder_for,
        evalset_chunk_qrels,
        parse_chunker,
    )

    if parse_chunker(chunk) is None:  # a bad --chunk fails before any loading
        raise ConfigError(f"--chunk {chunk!r}: chunk-level judgments need a chunker such as "
                          "tokens:256:32, sentences:5 or recursive:512")
    with reported_warnings(quiet):
        es = _load(spec, split, data_dir, cache_dir, quiet=quiet)
        refuse_sources(output, source_paths(es))
        refuse_existing(force, output)
        enc = (encoder_for(DenseSpec(model=model), {}, quiet or None) if model is not None
               else None)
        if not quiet:
            click.echo(f"chunks: {chunking_label(chunk, encoder=enc)}", err=True)
        qrels = evalset_chunk_qrels(es, chunk, enc, quiet=quiet or None)
    qrels.to_file(output, format=output_format)
    relevant = int((qrels.grades > 0).sum())
    click.echo(f"wrote {output}: {len(qrels)} chunk judgments ({relevant} relevant) for "
               f"{qrels.n_queries} queries, chunks {chunking_label(chunk, encoder=enc)}")


def _dist_text(d: dict[str, Any]) -> str:
    if not d.get("n"):
        return "-"
    return (f"min {d['min']:g}  median {d['median']:g}  mean {d['mean']:.1f}  "
            f"p90 {d['p90']:g}  max {d['max']:g}")


@evalset_app.command("stats")
@SPEC_ARG
@SPLIT_OPTION
@TEXT_OR_JSON
@DATA_DIR_OPTION
@CACHE_OPTION
@QUIET_OPTION
def stats_command(spec: str, split: str, output_format: str, data_dir: Path | None,
                  cache_dir: Path | None, quiet: bool) -> None:
    """Counts, grades, judged documents per query, query and document lengths.

    Example: searchbench evalset stats cranfield:../shared/data/cranfield
    """
    from ..collections import evalset_stats  # lazy: cli start-up (collections, numpy)

    with reported_warnings(quiet):
        es = _load(spec, split, data_dir, cache_dir, quiet=quiet)
    st = evalset_stats(es)
    print_result(output_format, st, lambda: _stats_text(st))


def _stats_text(st: dict[str, Any]) -> str:
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
    return "\n".join(f"{key:<{width}}  {value}" for key, value in rows)


@datasets_app.command("list")
@TEXT_OR_JSON
def list_command(output_format: str) -> None:
    """Evaluation sets searchbench knows: built-in, folder loaders, downloadable BEIR sets."""
    from ..collections import list_datasets  # lazy: cli start-up (collections, numpy)

    rows = list_datasets()
    print_result(output_format, {"datasets": rows}, lambda: _datasets_text(rows))


def _datasets_text(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["spec"]) for r in rows)
    marks = [("ready" if r["available"] else "cached: no" if r["kind"] == "download"
              else "missing") for r in rows]
    return "\n".join(f"{r['spec']:<{width}}  {r['kind']:<8}  {mark:<10}  {r['description']}"
                     for r, mark in zip(rows, marks, strict=True))
