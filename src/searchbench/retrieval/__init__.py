"""The retrieval under test (ARCHITECTURE §7): BM25, encoders, exact dense search, fusion, chunking.

Importing this package is cheap: torch, sentence-transformers, bm25s and faiss are imported
inside the functions that need them, behind :func:`searchbench.errors.require`.
"""

from __future__ import annotations

from .base import LEVELS, Retriever, exact_topk
from .cache import EmbeddingCache
from .callable import (
    CallableRetriever,
    from_callable,
    from_haystack,
    from_langchain,
    from_llamaindex,
)
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
from .http_client import HttpClient, public_url
from .http_encoder import OpenAIEncoder
from .http_search import HttpRetriever
from .levels import budget_run, chunk_qrels, context_tokens, doc_run, token_counts
from .lexical import BM25
from .pipeline import Pipeline, PipelineResult, chunking_of, run_pipeline, summary_measures
from .spec import (
    BM25Spec,
    DbSpec,
    DenseSpec,
    HttpSpec,
    HybridSpec,
    RetrieverSpec,
    bind_chunker,
    build_retriever,
    evalset_chunk_qrels,
    retriever_spec,
    token_unit,
)

__all__ = [
    "BM25",
    "LEVELS",
    "BM25Spec",
    "CallableRetriever",
    "Chunk",
    "Chunker",
    "DbSpec",
    "Dense",
    "DenseSpec",
    "EmbeddingCache",
    "Encoder",
    "HttpClient",
    "HttpRetriever",
    "HttpSpec",
    "Hybrid",
    "HybridSpec",
    "OpenAIEncoder",
    "Pipeline",
    "PipelineResult",
    "RecursiveChunker",
    "Retriever",
    "RetrieverSpec",
    "RunRetriever",
    "SentenceChunker",
    "SweepResult",
    "TokenChunker",
    "available_models",
    "bind_chunker",
    "budget_run",
    "build_retriever",
    "chunk_qrels",
    "chunking_of",
    "context_tokens",
    "doc_run",
    "encoder",
    "evalset_chunk_qrels",
    "exact_topk",
    "from_callable",
    "from_haystack",
    "from_langchain",
    "from_llamaindex",
    "fuse",
    "parse_chunker",
    "public_url",
    "retriever_spec",
    "rrf",
    "run_pipeline",
    "summary_measures",
    "sweep_weights",
    "token_counts",
    "token_unit",
    "weighted",
]
