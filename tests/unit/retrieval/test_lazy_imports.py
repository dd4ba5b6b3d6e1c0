"""Importing searchbench and sb.retrieval must not import the heavy optional libraries."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "bm25s", "faiss", "onnxruntime", "transformers", "model2vec",
         "sentence_transformers", "Stemmer")


def test_retrieval_imports_no_heavy_dependency():
    code = ("import sys, searchbench as sb; sb.retrieval.Hybrid; sb.retrieval.TokenChunker(8); "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
