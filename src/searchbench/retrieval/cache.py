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
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import BackendError

__all__ = ["EmbeddingCache", "default_cache_dir", "text_key"]

Embed = Callable[[list[str]], np.ndarray]


def default_cache_dir() -> Path:
    """``$SEARCHBENCH_CACHE`` or ``$XDG_CACHE_HOME/searchbench`` (``~/.cache/searchbench``)."""
    env = os.environ.get("SEARCHBENCH_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "searchbench"


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
        self._seen: set[str] = set()

    def _load(self, found: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """Every cached vector of this identity, by text key (adds shards not seen yet)."""
        found = {} if found is None else found
        if not self.folder.is_dir():
            return found
        for shard in sorted(self.folder.glob("shard-*.npz")):
            if shard.name in self._seen:
                continue
            try:
                with np.load(shard) as data:
                    keys, vecs = data["keys"], data["vectors"]
            except (OSError, ValueError, KeyError):
                continue  # a foreign or damaged file: ignore it, recompute those texts
            self._seen.add(shard.name)
            found.update(zip(keys.astype(str).tolist(), vecs, strict=True))
        return found

    def _write(self, keys: list[str], vectors: np.ndarray) -> None:
        """Write one shard atomically (temporary file + rename)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        ident = self.folder / "identity.txt"
        if not ident.exists():
            ident.write_text(self.identity + "\n", encoding="utf-8")
        name = f"shard-{time.time_ns()}-{os.getpid()}.npz"
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=np.asarray(keys, dtype="S32"),
                         vectors=np.asarray(vectors, dtype=np.float32))
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def embed(self, texts: list[str], fn: Embed, description: str = "embedding",
              quiet: bool | None = None) -> np.ndarray:
        """Vectors of ``texts`` (float32, in order): cached ones are read, the rest are
        computed by ``fn`` in batches, each batch stored before the next starts."""
        from .._util import progress

        keys = [text_key(t) for t in texts]
        have = self._load()
        todo: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in have and k not in todo:
                todo[k] = t
        pending = list(todo.items())
        embedded: set[str] = set()
        with progress(len(pending), description, quiet) as advance:
            for i in range(0, len(pending), self.batch_size):
                self._load(have)  # another process may have embedded some meanwhile
                window = pending[i:i + self.batch_size]
                batch = [(k, t) for k, t in window if k not in have]
                advance(len(window) - len(batch))
                if not batch:
                    continue
                try:
                    vecs = np.asarray(fn([t for _, t in batch]), dtype=np.float32)
                except BackendError as exc:
                    raise BackendError(f"{exc}; {len(embedded)} of {len(pending)} new texts "
                                       "were embedded and kept in the cache: rerun to resume"
                                       ) from exc
                if vecs.ndim != 2 or vecs.shape[0] != len(batch):
                    raise BackendError(f"encoder returned {vecs.shape[0]} vectors for "
                                       f"{len(batch)} texts; expected one per text")
                self._write([k for k, _ in batch], vecs)
                have.update(zip((k for k, _ in batch), vecs, strict=True))
                embedded.update(k for k, _ in batch)
                advance(len(batch))
        self.misses = len(embedded)
        self.hits = sum(1 for k in keys if k not in embedded)
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        return np.stack([have[k] for k in keys]).astype(np.float32, copy=False)
