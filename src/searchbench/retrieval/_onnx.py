"""ONNX Runtime backends for sentence-transformers models: float32 and int8 (dynamic).

The transformer is exported once from the local weights with ``torch.onnx`` (offline),
int8 weights come from ``onnxruntime.quantization.quantize_dynamic``; both are cached under
``<cache>/models/``. At query time only ``onnxruntime`` and ``tokenizers`` run: the
sentence-transformers pooling (mean or CLS, from ``1_Pooling/config.json``) and the
``Normalize`` module (from ``modules.json``) are applied in numpy.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._util import atomic_path, file_lock
from ..errors import BackendError, ConfigError, SearchbenchError, require
from ._encoder import LocalEncoder, minilm_path, untruncated, weights_hash
from .cache import default_cache_dir

__all__ = ["OnnxEncoder", "export_onnx", "onnx_encoder"]

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _st_settings(folder: Path) -> tuple[str, bool, int]:
    """(pooling mode, normalise?, max_seq_length) from a sentence-transformers folder."""
    pool_cfg = folder / "1_Pooling" / "config.json"
    pooling = "mean"
    if pool_cfg.is_file():
        cfg = json.loads(pool_cfg.read_text())
        pooling = "cls" if cfg.get("pooling_mode_cls_token") else "mean"
    modules = folder / "modules.json"
    normalise = modules.is_file() and "Normalize" in modules.read_text()
    sbert = folder / "sentence_bert_config.json"
    msl = json.loads(sbert.read_text()).get("max_seq_length", 512) if sbert.is_file() else 512
    return pooling, normalise, int(msl)


def export_onnx(src: Path, quantized: bool = False, cache_root: Path | None = None) -> Path:
    """``model.onnx`` (or ``model-int8.onnx``) for the transformer in ``src`` (cached).

    One process builds each file at a time (a lock beside it); another one waiting for the
    lock then finds the finished file instead of exporting again."""
    root = Path(cache_root or default_cache_dir()) / "models"
    folder = root / f"onnx-{src.name}-{weights_hash(src)}"
    fp32 = folder / "model.onnx"
    int8 = folder / "model-int8.onnx"
    target = int8 if quantized else fp32
    if target.is_file():
        return target
    with file_lock(folder / ".lock"):
        if not fp32.is_file():
            _export(src, fp32)
        if quantized and not int8.is_file():
            quant = require("onnxruntime.quantization", "onnx")
            with atomic_path(int8) as tmp:
                quant.quantize_dynamic(str(fp32), str(tmp), weight_type=quant.QuantType.QInt8)
    return target


def _export(src: Path, target: Path) -> None:
    """Export with torch's ``torch.export``-based ONNX exporter (the default since 2.9).

    The legacy TorchScript exporter is deprecated, and on this model it also diverged from
    torch on sequences longer than the tracing sample (its trace bakes in shape-dependent
    branches): max |Δ| 1.67 on unpadded hidden states against 4e-6 for this exporter."""
    torch = require("torch", "onnx")
    transformers = require("transformers", "embeddings")
    require("onnxscript", "onnx")  # the exporter's back end: a clear message if missing
    model = transformers.AutoModel.from_pretrained(str(src), local_files_only=True).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(src), local_files_only=True)
    sample = tok(["an example sentence", "another"], padding=True, return_tensors="pt")
    names = [n for n in _INPUTS if n in sample]
    dynamic = torch.export.Dim.DYNAMIC
    shapes = {n: {0: dynamic, 1: dynamic} for n in names}

    torch_module: Any = torch.nn.Module  # torch is imported lazily: unknown to the checker

    class _Wrapped(torch_module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, input_ids: Any, attention_mask: Any = None,
                    token_type_ids: Any = None) -> Any:
            given = {"input_ids": input_ids, "attention_mask": attention_mask,
                     "token_type_ids": token_type_ids}
            return self.inner(**{n: given[n] for n in names}).last_hidden_state

    chatter = logging.getLogger("torch.onnx")  # "torchvision is not installed. Skipping …"
    level = chatter.level
    chatter.setLevel(logging.ERROR)
    try:
        with torch.no_grad(), atomic_path(target) as tmp, warnings.catch_warnings():
            # torch.export deep-copies its own pytree specs, which trips torch's deprecation
            # of ``LeafSpec`` inside torch itself (torch 2.13): nothing this call can change.
            warnings.filterwarnings("ignore", category=FutureWarning,
                                    message=r".*isinstance\(treespec, LeafSpec\)")
            torch.onnx.export(_Wrapped().eval(), (), str(tmp),
                              kwargs={n: sample[n] for n in names}, dynamo=True, verbose=False,
                              external_data=False,
                              input_names=names, output_names=["last_hidden_state"],
                              dynamic_shapes=shapes, opset_version=18)
    except SearchbenchError:
        raise
    except Exception as exc:  # the exporter raises many types; the user needs one line
        first = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().split("\n")[0]
        raise BackendError(f"cannot export {src} to ONNX: {type(exc).__name__}: {first}") from None
    finally:
        chatter.setLevel(level)


class OnnxEncoder(LocalEncoder):
    """A sentence-transformers model run by ONNX Runtime (float32 or int8)."""

    def __init__(self, src: Path, name: str, quantized: bool = False, batch_size: int = 64,
                 **kw: Any) -> None:
        super().__init__(**kw)
        ort = require("onnxruntime", "onnx")
        tokenizers = require("tokenizers", "embeddings")
        self.src, self.quantized, self.batch_size = src, quantized, batch_size
        self.name = f"{name}-onnx{'-int8' if quantized else ''}"
        self.pooling, self.normalise, self.max_seq_length = _st_settings(src)
        self.path = export_onnx(src, quantized)
        opts = ort.SessionOptions()
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # shared CPUs
        self.session = ort.InferenceSession(str(self.path), opts,
                                            providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = tokenizers.Tokenizer.from_file(str(src / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_seq_length)
        self.tokenizer.enable_padding()
        self._counter = untruncated(self.tokenizer)  # counts tokens past the limit too
        self.special_tokens = int(self.tokenizer.post_processor.num_special_tokens_to_add(False)
                                  if self.tokenizer.post_processor else 0)
        self._identity = f"onnx:{name}:{weights_hash(src)}:{'int8' if quantized else 'fp32'}:" \
                         f"msl{self.max_seq_length}"

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` in their order, computed longest first in batches of
        ``batch_size`` (as sentence-transformers does: a batch of similar lengths pads
        little)."""
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.concatenate([self._batch([texts[i] for i in order[a:a + self.batch_size]])
                              for a in range(0, len(texts), self.batch_size)])
        vecs = np.empty_like(out)
        vecs[order] = out
        return vecs

    def _batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer.encode_batch(texts)
        feeds = {"input_ids": np.asarray([e.ids for e in enc], dtype=np.int64),
                 "attention_mask": np.asarray([e.attention_mask for e in enc], dtype=np.int64),
                 "token_type_ids": np.asarray([e.type_ids for e in enc], dtype=np.int64)}
        hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if self.pooling == "cls":
            vecs = hidden[:, 0]
        else:
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            vecs = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        if self.normalise:
            vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs.astype(np.float32)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self._counter.encode(text, add_special_tokens=False)
        return [tuple(o) for o in enc.offsets if o[1] > o[0]]

    def token_lengths(self, texts: list[str]) -> list[int]:
        enc = self._counter.encode_batch(list(texts), add_special_tokens=False)
        return [sum(1 for a, b in e.offsets if b > a) for e in enc]


def onnx_encoder(name: str, quantized: bool = False, **kw: Any) -> OnnxEncoder:
    """``minilm`` or a local sentence-transformers folder, run by ONNX Runtime."""
    if name == "minilm":
        return OnnxEncoder(minilm_path(), "all-MiniLM-L6-v2", quantized, **kw)
    path = Path(name.removeprefix("sentence-transformers:"))
    if not (path / "tokenizer.json").is_file():
        raise ConfigError(f"onnx model {name!r}: expected minilm or a local "
                          "sentence-transformers folder with tokenizer.json")
    try:
        return OnnxEncoder(path, path.name, quantized, **kw)
    except (OSError, RuntimeError) as exc:
        raise BackendError(f"cannot export/run {path} with ONNX Runtime: {exc}") from exc
