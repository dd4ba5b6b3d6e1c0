"""``searchbench embed``: embed an evaluation set's corpus and queries into Parquet shards."""

from __future__ import annotations

import json
import shutil
from contextlib import nullcontext
from pathlib import Path

import click

from .._util import refuse_sources
from ..errors import OutputError
from ._output import (
    QUIET_OPTION,
    console,
    evalset_argument,
    output_option,
    reported_warnings,
)


@click.command("embed")
@evalset_argument("spec")
@click.option("--model", default="minilm", help="Encoder: minilm, static, "
              "sentence-transformers:/path, model2vec:/path, onnx:NAME, a local folder.")
@output_option("Embedding folder (created; rerun to finish an interrupted one; a finished "
               "one is refused unless --force, which embeds again). Use it as "
               "--vectors/--queries of ann groundtruth, or as --cache-dir of run.",
               required=True)
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              help="'local': this process; 'ray': a Ray Data pipeline with an actor pool "
                   "holding the model (needs searchbench[ray]). The same vectors up to float "
                   "rounding (texts are batched differently).")
@click.option("--address", metavar="ADDRESS",
              help="With --engine ray: the Ray cluster ('auto', host:6379, ray://host:10001);"
                   " default: a local Ray started for this command.")
@click.option("--actors", type=click.IntRange(min=1), metavar="INTEGER",
              help="With --engine ray: model actors (default: one per GPU, else enough to "
                   "leave one CPU to Ray Data).")
@click.option("--cpus-per-actor", type=click.FloatRange(min=0.01), default=0.5,
              metavar="FLOAT", help="With --engine ray on CPUs: CPUs reserved per actor; "
                                    "fractions leave room for Ray Data's read tasks.")
@click.option("--batch-size", type=click.IntRange(min=1), default=256, metavar="INTEGER",
              help="Texts per model call.")
@click.option("--title/--no-title", default=True, help="Embed 'title + text' of documents.")
@QUIET_OPTION
def embed_command(spec: str, model: str, output: Path, force: bool, engine: str,
                  address: str | None,
                  actors: int | None, cpus_per_actor: float, batch_size: int, title: bool,
                  quiet: bool) -> None:
    """Embed an evaluation set's corpus and judged queries into Parquet shards.

    The shards are keyed like the embedding cache: searchbench run --cache-dir OUT reuses
    them, and ann groundtruth --vectors OUT --queries OUT reads them.

    Example: searchbench embed pyref --model minilm --engine ray -o emb/
    """
    from ..collections import load_evalset  # lazy: cli start-up (collections, numpy)
    from ..retrieval import EmbeddingFolder, Kind, encoder  # lazy: cli start-up (retrieval, numpy)

    refuse_sources(output, [p for p in [Path(spec)] if p.exists()])
    with reported_warnings(quiet):
        es = load_evalset(spec)
        enc = encoder(model, cache=False, quiet=quiet or None)
        folder = EmbeddingFolder(output, enc.identity)
        about = {"evalset": es.name, "model": enc.name, "corpus_rows": len(es.corpus),
                 "queries_rows": len(es.judged_queries), "title": title}
        _refuse_other(output, enc.identity, about, force)
        corpus = (list(es.corpus.ids), es.corpus.texts(title))
        queries = (list(es.judged_queries.ids), es.judged_queries.texts())
        stats = []
        with _engine(engine, address):
            kinds: tuple[tuple[Kind, tuple[list[str], list[str]]], ...] = (
                ("corpus", corpus), ("queries", queries))
            for kind, (ids, texts) in kinds:
                if engine == "ray":
                    # lazy: cli start-up (distributed, numpy)
                    from ..distributed import embed_corpus

                    stats.append(embed_corpus(model, enc.identity, folder, kind, ids, texts,
                                              address=address, actors=actors,
                                              cpus_per_actor=cpus_per_actor,
                                              batch_size=batch_size, quiet=quiet or None))
                else:
                    # lazy: cli start-up (distributed, numpy)
                    from ..distributed import embed_texts_local

                    stats.append(embed_texts_local(enc, folder, kind, ids, texts,
                                                   quiet=quiet or None))
        folder.write_manifest(**about, dim=_dim(folder))
    if not quiet:
        err = console(stderr=True)
        for s in stats:
            err.print(f"{s.kind}: {s.embedded} embedded ({s.rate:.1f}/s, {s.engine}, "
                      f"{s.actors} actor(s)), {s.reused} already there")
    click.echo(str(output))


def _engine(engine: str, address: str | None):
    """One Ray connection for corpus and queries (nothing to join for the local engine)."""
    if engine != "ray":
        return nullcontext()
    from ..distributed import ray_cluster  # lazy: cli start-up (distributed, distributed._cluster)

    return ray_cluster(address)


def _refuse_other(output: Path, identity: str, about: dict, force: bool) -> None:
    """The rule of ``--force`` for an embedding folder: an interrupted one of the same set
    and model is resumed; a finished one, or one of another set or model, is refused
    unless ``--force`` (then its embeddings are removed first: never two in one folder);
    a folder of the user's is never written into."""
    if not output.exists() or (output.is_dir() and not any(output.iterdir())):
        return
    names = {p.name for p in output.iterdir()} if output.is_dir() else set()
    if not names or not names <= {"manifest.json", "embeddings"}:
        raise OutputError(f"{output} exists and is not an embedding folder; choose a new or "
                          "empty --output folder")
    manifest = output / "manifest.json"
    if not manifest.is_file() and _only(output, identity):
        return  # an interrupted run of this set and model: resumed
    if not force:
        try:
            old = json.loads(manifest.read_text(encoding="utf-8"))
            held = f"the embeddings of {old.get('evalset')!r} with {old.get('model')!r}"
        except (OSError, ValueError, AttributeError):
            held = "the embeddings of an interrupted run of another set or model"
        raise OutputError(f"cannot write {output}: it holds {held} already; pass --force to "
                          f"embed {about['evalset']!r} with {about['model']!r} in their "
                          "place, or choose another -o/--output")
    manifest.unlink(missing_ok=True)
    shutil.rmtree(output / "embeddings", ignore_errors=True)


def _only(output: Path, identity: str) -> bool:
    """Whether the shards in ``output`` (an interrupted run) are of ``identity`` only."""
    from ..retrieval import EmbeddingFolder  # lazy: cli start-up (retrieval, numpy)

    mine = EmbeddingFolder(output, identity).folder
    shards = output / "embeddings"
    return all(p == mine for p in (shards.iterdir() if shards.is_dir() else ()))


def _dim(folder) -> int:
    import pyarrow.parquet as pq  # lazy: cli start-up (pyarrow, numpy)

    shards = folder.shards("corpus")
    return int(pq.read_schema(shards[0]).field("vector").type.list_size) if shards else 0
