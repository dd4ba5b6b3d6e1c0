"""The retrieval under test (ARCHITECTURE §7): BM25, encoders, exact dense search, fusion, chunking.

Importing this package is cheap: torch, sentence-transformers, bm25s and faiss are imported
inside the functions that need them, behind :func:`searchbench.errors.require`.
"""

from __future__ import annotations

from .base import LEVELS, Retriever, exact_topk
from .cache import EmbeddingCache
from .chunking import (
    Chunk,
    Chunker,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
    parse_chunker,
)
from .dense import Dense
from .encoders import Encoder, available_models, encoder
from .external import RunRetriever
from .fusion import Hybrid, SweepResult, fuse, rrf, sweep_weights, weighted
from .http_encoder import OpenAIEncoder
from .levels import budget_run, chunk_qrels, context_tokens, doc_run, token_counts
from .lexical import BM25

__all__ = [
    "BM25",
    "LEVELS",
    "Chunk",
    "Chunker",
    "Dense",
    "EmbeddingCache",
    "Encoder",
    "Hybrid",
    "OpenAIEncoder",
    "RecursiveChunker",
    "Retriever",
    "RunRetriever",
    "SentenceChunker",
    "SweepResult",
    "TokenChunker",
    "available_models",
    "budget_run",
    "chunk_qrels",
    "context_tokens",
    "doc_run",
    "encoder",
    "exact_topk",
    "fuse",
    "parse_chunker",
    "rrf",
    "sweep_weights",
    "token_counts",
    "weighted",
]
