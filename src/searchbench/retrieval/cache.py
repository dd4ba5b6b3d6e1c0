"""On-disk embedding cache keyed by model identity and text hash (ARCHITECTURE §7).

Layout: ``<root>/embeddings/<sha256(identity)[:24]>/`` holds ``identity.txt`` and shard files
``shard-*.npz`` (``keys``: 32-hex-digit text hashes, ``vectors``: float32). Each batch is
written to a temporary file and renamed into place, so an interrupted run keeps every
finished batch and the next run only embeds what is missing. Shards are shared by every
chunking and experiment that embeds the same text with the same model.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .._util import atomic_write, default_cache_dir, progress, write_text
from ..errors import BackendError

__all__ = ["EmbeddingCache", "check_vectors", "default_cache_dir", "text_key"]

Embed = Callable[[list[str]], np.ndarray]


def check_vectors(vectors: object, texts: list[str], source: str,
                  positions: Sequence[int] | None = None) -> np.ndarray:
    """``vectors`` as a float32 matrix with one finite row per text, else
    :class:`BackendError` naming the first bad text (its position — in the caller's list when
    ``positions`` gives each text's, else in ``texts`` — and its start).

    NaN or infinite vectors are refused where they enter (encoder output, cache write):
    they would make every distance NaN, and exact search could not order them.
    """
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            vecs = np.asarray(vectors, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise BackendError(f"{source} returned something that is not a matrix of numbers "
                           f"({exc})") from None
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise BackendError(f"{source} returned {vecs.shape[0] if vecs.ndim else 0} vectors "
                           f"of shape {vecs.shape} for {len(texts)} texts; expected one "
                           "vector per text")
    finite = np.isfinite(vecs).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        shown = row if positions is None else positions[row]
        raise BackendError(
            f"{source} returned a vector holding NaN or infinity for text #{shown} "
            f"({_preview(texts[row])}), {int((~finite).sum())} of {len(texts)} in this batch; "
            "nothing of this batch was cached. Check the model (a broken or mis-converted "
            "model gives NaN) or drop that text")
    return vecs


def _read_shard(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, vectors)`` of an ``.npz`` shard or of a Parquet shard written by
    ``searchbench embed`` (columns ``key``, ``vector``; see ``retrieval.shards``)."""
    if path.suffix == ".npz":
        with np.load(path) as data:
            return data["keys"], data["vectors"]
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.parquet as pq  # lazy: loads pyarrow on first use

    try:
        table = pq.read_table(path, columns=["key", "vector"],
                              page_checksum_verification=True)
        vectors = table.column("vector").combine_chunks()
        dim = vectors.type.list_size
        flat = vectors.flatten().to_numpy(zero_copy_only=False)
    except (pa.ArrowException, AttributeError) as exc:
        raise ValueError(str(exc)) from None
    keys = np.asarray(table.column("key").to_pylist(), dtype="S32")
    return keys, flat.reshape(-1, dim).astype(np.float32, copy=False)


def _preview(text: str) -> str:
    short = " ".join(text.split())
    return repr(short[:60] + ("…" if len(short) > 60 else ""))


def text_key(text: str) -> str:
    """The cache key of a text: the first 32 hex digits of its UTF-8 SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class EmbeddingCache:
    """Embeddings of one model identity, stored in atomically written batch shards."""

    def __init__(self, identity: str, root: str | os.PathLike[str] | None = None,
                 batch_size: int = 512) -> None:
        self.identity = identity
        self.batch_size = batch_size
        digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24]
        self.folder = Path(root or default_cache_dir()) / "embeddings" / digest
        self.hits = 0
        self.misses = 0

    def _load(self, found: dict[str, np.ndarray], seen: set[str]) -> None:
        """Add to ``found`` the vectors (by text key) of every shard not in ``seen`` yet.

        ``found`` and ``seen`` belong to one :meth:`embed` call, never to the object: calls
        running at once (threads of a framework calling the encoder, a reused cache) each
        read every shard, so a text another call already read is never taken for missing
        and embedded again (in another batch: other rounding)."""
        if not self.folder.is_dir():
            return
        shards = sorted(self.folder.glob("shard-*.npz")) + \
            sorted(self.folder.glob("shard-*.parquet"))  # parquet: from searchbench embed
        for shard in shards:
            if shard.name in seen:
                continue
            try:
                keys, vecs = _read_shard(shard)
            except (OSError, ValueError, KeyError):
                continue  # a foreign or damaged file: ignore it, recompute those texts
            seen.add(shard.name)
            if vecs.ndim != 2 or len(vecs) != len(keys):
                continue  # not a shard this cache wrote
            ok = np.isfinite(vecs).all(axis=1)  # written before NaN was refused: recompute
            found.update(zip(keys[ok].astype(str).tolist(), vecs[ok], strict=True))

    def _call(self, fn: Embed, texts: list[str], positions: list[int], step: int | None,
              advance: Callable[[int], None]) -> np.ndarray:
        """``fn(texts)`` checked, called ``step`` texts at a time, moving the display on
        after each call; a bad vector is named by its text's position in the caller's list."""
        step = step if step and step < len(texts) else len(texts)
        parts = []
        for a in range(0, len(texts), step):
            part = texts[a:a + step]
            parts.append(check_vectors(fn(part), part, f"the encoder {self.identity}",
                                       positions[a:a + step]))
            advance(len(part))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _write(self, keys: list[str], vectors: np.ndarray) -> str:
        """Write one shard atomically (temporary file + rename); its file name."""
        ident = self.folder / "identity.txt"
        if not ident.exists():
            write_text(ident, self.identity + "\n")
        name = f"shard-{time.time_ns()}-{os.getpid()}.npz"
        with atomic_write(self.folder / name, binary=True, compress=False) as fh:
            np.savez(fh, keys=np.asarray(keys, dtype="S32"),
                     vectors=np.asarray(vectors, dtype=np.float32))
        return name

    def embed(self, texts: list[str], fn: Embed, description: str = "embedding",
              quiet: bool | None = None, step: int | None = None) -> np.ndarray:
        """Vectors of ``texts`` (float32, in order): cached ones are read, the rest are
        computed by ``fn`` in batches, each batch stored before the next starts (Ctrl-C
        keeps every stored batch). ``step``: texts per ``fn`` call within a batch, so the
        progress bar moves more often than batches are stored (default: the batch)."""
        keys = [text_key(t) for t in texts]
        have: dict[str, np.ndarray] = {}
        seen: set[str] = set()
        self._load(have, seen)
        todo: dict[str, str] = {}
        position: dict[str, int] = {}
        for i, (k, t) in enumerate(zip(keys, texts, strict=True)):
            if k not in have and k not in todo:
                todo[k] = t
                position[k] = i
        # longest first, as sentence-transformers orders a call's texts: each model call
        # (``step`` texts) then holds texts of similar length and pads little
        pending = sorted(todo.items(), key=lambda kt: -len(kt[1]))
        embedded: set[str] = set()
        with progress(len(pending), description, quiet, unit="texts",
                      kept="embedded and cached") as done:
            for i in range(0, len(pending), self.batch_size):
                self._load(have, seen)  # another process may have embedded some meanwhile
                window = pending[i:i + self.batch_size]
                batch = [(k, t) for k, t in window if k not in have]
                done(len(window) - len(batch))
                if not batch:
                    continue
                texts_now = [t for _, t in batch]
                try:
                    vecs = self._call(fn, texts_now, [position[k] for k, _ in batch], step,
                                      done.advance)
                except BackendError as exc:
                    raise BackendError(f"{exc}; {len(embedded)} of {len(pending)} new texts "
                                       "were embedded and kept in the cache: rerun to resume"
                                       ) from exc
                seen.add(self._write([k for k, _ in batch], vecs))  # in hand: not re-read
                have.update(zip((k for k, _ in batch), vecs, strict=True))
                embedded.update(k for k, _ in batch)
                done.keep(len(batch))
        self.misses = len(embedded)
        self.hits = sum(1 for k in keys if k not in embedded)
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        dims = sorted({have[k].shape for k in keys})
        if len(dims) > 1:
            raise BackendError(f"embedding cache {self.folder} holds vectors of different "
                               f"shapes {dims} for model {self.identity}; delete that folder "
                               "and run again")
        return np.stack([have[k] for k in keys]).astype(np.float32, copy=False)
