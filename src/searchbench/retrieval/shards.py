"""Embedding folders: Parquet shards of corpus and query vectors keyed like the embedding
cache (ARCHITECTURE §7, §13).

``searchbench embed`` (one process or a Ray Data pipeline) writes::

    OUT/manifest.json                                  model, identity, dim, row counts
    OUT/embeddings/<sha256(identity)[:24]>/identity.txt
    OUT/embeddings/<sha256(identity)[:24]>/shard-corpus-*.parquet
    OUT/embeddings/<sha256(identity)[:24]>/shard-queries-*.parquet

Each shard has the columns ``row`` (int64: position in the corpus or query list), ``id``,
``key`` (the cache key: :func:`~searchbench.retrieval.cache.text_key` of the prefixed text)
and ``vector`` (float32 list). The folder under ``embeddings/`` is exactly where
:class:`~searchbench.retrieval.cache.EmbeddingCache` with root ``OUT`` looks, and the cache
reads ``key`` and ``vector`` of Parquet shards, so a later single-process run with
``--cache-dir OUT`` (or ``SEARCHBENCH_CACHE=OUT``) embeds nothing again. Shards are written
atomically; an interrupted run keeps them and the next one embeds only the missing rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .._util import atomic_write, write_text
from ..errors import DataFormatError

__all__ = ["FORMAT", "EmbeddingFolder", "Kind", "is_embedding_folder", "read_embedded"]

FORMAT = "searchbench.embeddings/1"
Kind = Literal["corpus", "queries"]


def is_embedding_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder written by ``searchbench embed``."""
    return (Path(path) / "manifest.json").is_file()


class EmbeddingFolder:
    """The shards of one model identity under ``root`` (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str], identity: str) -> None:
        self.root = Path(root)
        self.identity = identity
        digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24]
        self.folder = self.root / "embeddings" / digest

    def shards(self, kind: Kind) -> list[Path]:
        return sorted(self.folder.glob(f"shard-{kind}-*.parquet"))

    def done_rows(self, kind: Kind) -> np.ndarray:
        """Rows of ``kind`` already embedded (from earlier, possibly interrupted, runs)."""
        import pyarrow as pa  # lazy: loads pyarrow on first use
        import pyarrow.parquet as pq  # lazy: loads pyarrow on first use

        try:
            rows = [pq.read_table(p, columns=["row"], page_checksum_verification=True)
                    .column("row").to_numpy() for p in self.shards(kind)]
        except (pa.ArrowException, OSError) as exc:
            raise DataFormatError(f"{self.folder}: a {kind} shard cannot be read ({exc}); "
                                  "delete it and run searchbench embed again to recompute "
                                  "it") from None
        return np.unique(np.concatenate(rows)) if rows else np.zeros(0, np.int64)

    def write(self, kind: Kind, table: Any) -> Path:
        """Write one shard (a table ``row, id, key, vector``) atomically."""
        import pyarrow.parquet as pq  # lazy: loads pyarrow on first use

        ident = self.folder / "identity.txt"
        if not ident.exists():
            write_text(ident, self.identity + "\n")
        path = self.folder / f"shard-{kind}-{time.time_ns()}-{os.getpid()}.parquet"
        with atomic_write(path, binary=True, compress=False) as fh:
            pq.write_table(table, fh, write_page_checksum=True)
        return path

    def write_manifest(self, **about: Any) -> None:
        """``manifest.json``: format, identity, shard folder and what the caller adds."""
        body = {"format": FORMAT, "identity": self.identity,
                "folder": str(self.folder.relative_to(self.root)), **about}
        write_text(self.root / "manifest.json", json.dumps(body, indent=2, sort_keys=True) + "\n")


def shard_table(rows: np.ndarray, ids: list[str], keys: list[str], vectors: np.ndarray) -> Any:
    """The shard table of some rows: ``row, id, key, vector`` (float32 lists)."""
    import pyarrow as pa  # lazy: loads pyarrow on first use

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    flat = pa.array(vectors.reshape(-1))
    return pa.table({"row": pa.array(np.asarray(rows, dtype=np.int64)),
                     "id": pa.array(ids, pa.string()), "key": pa.array(keys, pa.string()),
                     "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])})


def read_embedded(root: str | os.PathLike[str], kind: Kind = "corpus"
                  ) -> tuple[np.ndarray, list[str]]:
    """``(vectors float32 in row order, ids)`` of ``kind`` in an embedding folder; every
    row from 0 to the manifest's count must be there exactly once."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.parquet as pq  # lazy: loads pyarrow on first use

    root = Path(root)
    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        folder = root / str(manifest["folder"])
        expected = int(manifest[f"{kind}_rows"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataFormatError(f"{root}: not an embedding folder written by searchbench embed "
                              f"(manifest.json: {exc})") from None
    parts = sorted(folder.glob(f"shard-{kind}-*.parquet"))
    try:
        table = pa.concat_tables([pq.read_table(p, columns=["row", "id", "vector"],
                                                page_checksum_verification=True)
                                  for p in parts]) if parts else None
    except (pa.ArrowException, OSError) as exc:
        raise DataFormatError(f"{root}: a {kind} shard cannot be read ({exc}); delete it and "
                              "run searchbench embed again to recompute it") from None
    rows = table.column("row").to_numpy() if table is not None else np.zeros(0, np.int64)
    if len(rows) != expected or not np.array_equal(np.sort(rows), np.arange(expected)):
        raise DataFormatError(f"{root}: holds {len(np.unique(rows))} of the {expected} {kind} "
                              "rows; run searchbench embed again to finish it")
    assert table is not None
    order = np.argsort(rows)
    vectors = table.column("vector").combine_chunks()
    dim = vectors.type.list_size
    flat = vectors.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    ids = table.column("id").to_pylist()
    return flat[order].astype(np.float32, copy=False), [ids[i] for i in order]
