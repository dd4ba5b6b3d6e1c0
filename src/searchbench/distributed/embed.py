"""Corpus embedding in one process or as a Ray Data pipeline (ARCHITECTURE §13).

Both engines write the same embedding folder (``retrieval.shards``): Parquet shards keyed
like the embedding cache, so a later single-process run reuses them, and rows already
embedded by an interrupted run are not embedded again.

The Ray pipeline: the rows still to embed become Arrow blocks (``ray.data.from_arrow``),
``map_batches`` runs them through a pool of actors that each load the model once, and the
driver writes the embedded batches as shards as they arrive (``iter_batches``). Actors ask
for a fraction of a CPU (``cpus_per_actor``, default 0.5) so that Ray Data's read and
write tasks always find a CPU - actors holding whole CPUs deadlock a 2-core machine - and
for one GPU each where the cluster has GPUs (one actor per GPU).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import progress
from ..errors import BackendError, require
from ..retrieval import EmbeddingFolder, Kind, encoder, shard_table, text_key
from ._cluster import ray_cluster

__all__ = ["EmbedStats", "embed_corpus", "embed_texts_local"]

SHARD_ROWS = 4096  # rows per written shard (Ray)
LOCAL_SHARD_ROWS = 1024  # rows per shard in one process: what Ctrl-C can lose at most
CPUS_PER_ACTOR = 0.5


@dataclass
class EmbedStats:
    """What an embedding run did: rows embedded now, rows found done, seconds, engine."""

    kind: str
    embedded: int
    reused: int
    seconds: float
    engine: str
    actors: int = 1

    @property
    def rate(self) -> float:
        """Texts embedded per second (0 when nothing was embedded)."""
        return self.embedded / self.seconds if self.seconds > 0 and self.embedded else 0.0


def _todo(folder: EmbeddingFolder, kind: Kind, n: int) -> np.ndarray:
    done = folder.done_rows(kind)
    return np.setdiff1d(np.arange(n, dtype=np.int64), done, assume_unique=True)


def embed_texts_local(enc: Any, folder: EmbeddingFolder, kind: Kind, ids: Sequence[str],
                      texts: Sequence[str], *, quiet: bool | None = None,
                      shard_rows: int = LOCAL_SHARD_ROWS) -> EmbedStats:
    """Embed the rows of ``texts`` not yet in ``folder`` with encoder ``enc`` in this
    process, one shard of ``shard_rows`` at a time (Ctrl-C keeps every written shard); the
    model is called a batch at a time within a shard, so the progress bar moves per batch."""
    todo = _todo(folder, kind, len(texts))
    start = time.perf_counter()
    prefix = enc.doc_prefix if kind == "corpus" else enc.query_prefix
    encode = enc.encode_documents if kind == "corpus" else enc.encode_queries
    step = int(getattr(enc, "batch_size", 0) or 64)
    with progress(len(todo), f"embedding {kind} ({enc.name})", quiet, unit="texts",
                  kept=f"embedded into {folder.root}") as done:
        for at in range(0, len(todo), shard_rows):
            rows = todo[at:at + shard_rows]
            chunk = [texts[i] for i in rows]
            parts = []
            for a in range(0, len(chunk), step):
                parts.append(encode(chunk[a:a + step]))
                done.advance(len(parts[-1]))
            folder.write(kind, shard_table(rows, [ids[i] for i in rows],
                                           [text_key(prefix + t) for t in chunk],
                                           np.concatenate(parts)))
            done.keep(len(rows))
    return EmbedStats(kind, len(todo), len(texts) - len(todo), time.perf_counter() - start,
                      "local")


class _Embedder:
    """A Ray actor: loads the model once, embeds Arrow batches ``row, id, text``."""

    def __init__(self, model: str, identity: str, kind: str, device: str | None) -> None:
        kw: dict[str, Any] = {"cache": False, "quiet": True}
        if device:
            kw["device"] = device
        self.encoder = encoder(model, **kw)
        if self.encoder.identity != identity:
            raise BackendError(f"model {model!r} on this Ray worker is {self.encoder.identity}, "
                               f"on the driver {identity}: install the same model and "
                               "library versions on every node")
        self.kind = kind

    def __call__(self, batch: Any) -> Any:
        texts = batch.column("text").to_pylist()
        enc = self.encoder
        if self.kind == "corpus":
            vectors, prefix = enc.encode_documents(texts), enc.doc_prefix
        else:
            vectors, prefix = enc.encode_queries(texts), enc.query_prefix
        return shard_table(batch.column("row").to_numpy(), batch.column("id").to_pylist(),
                           [text_key(prefix + t) for t in texts], vectors)


def embed_corpus(model: str, identity: str, folder: EmbeddingFolder, kind: Kind,
                 ids: Sequence[str], texts: Sequence[str], *, address: str | None = None,
                 actors: int | None = None, cpus_per_actor: float = CPUS_PER_ACTOR,
                 batch_size: int = 256, quiet: bool | None = None,
                 shard_rows: int = SHARD_ROWS) -> EmbedStats:
    """Embed the rows of ``texts`` not yet in ``folder`` as a Ray Data pipeline (see the
    module docstring); ``identity`` is the model's cache identity (checked by every
    actor against the model it loads). ``actors``: default one per GPU, else enough
    ``cpus_per_actor`` actors to leave one CPU to Ray Data's other tasks."""
    import pyarrow as pa  # lazy: loads pyarrow on first use

    todo = _todo(folder, kind, len(texts))
    start = time.perf_counter()
    if not len(todo):
        return EmbedStats(kind, 0, len(texts), 0.0, "ray")
    with ray_cluster(address) as ray, _quiet_ray_data() as data:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        cpus = float(ray.cluster_resources().get("CPU", 1))
        n_actors = actors or (gpus if gpus else max(1, int((cpus - 1) / cpus_per_actor)))
        table = pa.table({"row": pa.array(todo), "id": pa.array([ids[i] for i in todo]),
                          "text": pa.array([texts[i] for i in todo])})
        step = max(batch_size, -(-len(todo) // (4 * n_actors)))  # ≥ 4 blocks per actor
        blocks = [table.slice(i, step) for i in range(0, len(todo), step)]
        resources: dict[str, Any] = {"num_gpus": 1} if gpus else {"num_cpus": cpus_per_actor}
        embedded = data.from_arrow(blocks).map_batches(
            _Embedder, fn_constructor_kwargs={"model": model, "identity": identity, "kind": kind,
                                              "device": "cuda" if gpus else None},
            batch_size=batch_size, batch_format="pyarrow",
            compute=data.ActorPoolStrategy(size=n_actors), **resources)
        with progress(len(todo), f"embedding {kind} on Ray ({n_actors} actors)", quiet,
                      unit="texts", kept=f"embedded into {folder.root}") as advance:
            for batch in embedded.iter_batches(batch_size=shard_rows, batch_format="pyarrow"):
                folder.write(kind, batch)
                advance(len(batch))
    return EmbedStats(kind, len(todo), len(texts) - len(todo), time.perf_counter() - start,
                      "ray", n_actors)


@contextmanager
def _quiet_ray_data() -> Iterator[Any]:
    """``ray.data`` without its own progress bars and log lines below ERROR (searchbench
    shows one progress bar); the settings are restored afterwards."""
    data = require("ray.data", "ray")
    with warnings.catch_warnings():  # ray 2.60 warns about its own defaults (use_push_...)
        warnings.simplefilter("ignore", DeprecationWarning)
        context = data.DataContext.get_current()
    saved = (context.enable_progress_bars, context.print_on_execution_start)
    logger = logging.getLogger("ray.data")
    level = logger.level
    context.enable_progress_bars, context.print_on_execution_start = False, False
    logger.setLevel(logging.ERROR)
    try:
        yield data
    finally:
        context.enable_progress_bars, context.print_on_execution_start = saved
        logger.setLevel(level)
