"""``searchbench embed``: embed an evaluation set's corpus and queries into Parquet shards."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._output import QUIET_OPTION, console, paths, reported_warnings


@click.command("embed")
@click.argument("spec", help="Evaluation set: pyref, beir:DIR, a native folder…")
@click.option("--model", default="minilm", help="Encoder: minilm, static, "
              "sentence-transformers:/path, model2vec:/path, onnx:NAME, a local folder.")
@click.option("--output", "-o", type=paths(), required=True,
              help="Embedding folder (created; rerun to finish an interrupted one). Use it "
                   "as --vectors/--queries of ann groundtruth, or as --cache-dir of run.")
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
def embed_command(spec: str, model: str, output: Path, engine: str, address: str | None,
                  actors: int | None, cpus_per_actor: float, batch_size: int, title: bool,
                  quiet: bool) -> None:
    """Embed an evaluation set's corpus and judged queries into Parquet shards.

    The shards are keyed like the embedding cache: searchbench run --cache-dir OUT reuses
    them, and ann groundtruth --vectors OUT --queries OUT reads them.

    Example: searchbench embed pyref --model minilm --engine ray -o emb/
    """
    from .._util import refuse_sources
    from ..collections import load_evalset
    from ..retrieval import EmbeddingFolder, Kind, encoder

    refuse_sources(output, [p for p in [Path(spec)] if p.exists()])
    with reported_warnings(quiet):
        es = load_evalset(spec)
        enc = encoder(model, cache=False, quiet=quiet or None)
        folder = EmbeddingFolder(output, enc.identity)
        about = {"evalset": es.name, "model": enc.name, "corpus_rows": len(es.corpus),
                 "queries_rows": len(es.judged_queries), "title": title}
        _refuse_other(output, enc.identity, about)
        corpus = (list(es.corpus.ids), es.corpus.texts(title))
        queries = (list(es.judged_queries.ids), es.judged_queries.texts())
        stats = []
        with _engine(engine, address):
            kinds: tuple[tuple[Kind, tuple[list[str], list[str]]], ...] = (
                ("corpus", corpus), ("queries", queries))
            for kind, (ids, texts) in kinds:
                if engine == "ray":
                    from ..distributed import embed_corpus

                    stats.append(embed_corpus(model, enc.identity, folder, kind, ids, texts,
                                              address=address, actors=actors,
                                              cpus_per_actor=cpus_per_actor,
                                              batch_size=batch_size, quiet=quiet or None))
                else:
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
    from contextlib import nullcontext

    if engine != "ray":
        return nullcontext()
    from ..distributed import ray_cluster

    return ray_cluster(address)


def _refuse_other(output: Path, identity: str, about: dict) -> None:
    """Never mix two sets or models in one folder, nor write into a folder of the user's."""
    from ..errors import OutputError

    manifest = output / "manifest.json"
    if manifest.is_file():
        try:
            old = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        same = old.get("identity") == identity and all(
            old.get(k) == v for k, v in about.items())
        if not same:
            raise OutputError(f"{output} holds embeddings of {old.get('evalset')!r} with "
                              f"{old.get('model')!r}; choose another --output for "
                              f"{about['evalset']!r} with {about['model']!r}")
    elif output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise OutputError(f"{output} exists and is not an embedding folder; choose a new or "
                          "empty --output folder")


def _dim(folder) -> int:
    import pyarrow.parquet as pq

    shards = folder.shards("corpus")
    return int(pq.read_schema(shards[0]).field("vector").type.list_size) if shards else 0
