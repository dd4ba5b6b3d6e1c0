"""A tiny deterministic encoder for unit tests: hashed bag of lower-cased words."""

from __future__ import annotations

import zlib

import numpy as np

from searchbench.retrieval.encoders import Encoder


class HashEncoder(Encoder):
    """Counts of words hashed into ``dim`` buckets; records every batch it embeds."""

    name = "hash"

    def __init__(self, dim: int = 64, fail_after: int | None = None, **kw) -> None:
        super().__init__(**kw)
        self.dim = dim
        self.calls: list[int] = []
        self.fail_after = fail_after

    @property
    def identity(self) -> str:
        return f"hash:{self.dim}"

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        return out
