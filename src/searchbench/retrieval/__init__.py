"""The retrieval under test (ARCHITECTURE §7): BM25, encoders, exact dense search, fusion, chunking.

Importing this package is cheap: torch, sentence-transformers, bm25s and faiss are imported
inside the functions that need them, behind :func:`searchbench.errors.require`.
"""

from __future__ import annotations

from ._external import RunRetriever
from ._fusion import Hybrid, SweepResult, fuse, rrf, sweep_weights, weighted
from ._levels import budget_run, chunk_qrels, context_tokens, doc_run, token_counts
from ._lexical import BM25
from ._pipeline import Pipeline, PipelineResult, chunking_of, run_pipeline, summary_measures
from ._truncation import LengthReport, length_report, warn_truncation
from .base import LEVELS, Retriever, exact_topk
from .build import build_retriever
from .cache import EmbeddingCache, text_key
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
from .http_client import HttpClient, public_url
from .http_encoder import OpenAIEncoder
from .http_search import HttpRetriever, header_dict
from .provenance import (
    file_digest,
    run_provenance,
    sidecar_path,
    sweep_pending,
    write_error,
    write_run_and_sidecar,
)
from .shards import EmbeddingFolder, Kind, is_embedding_folder, read_embedded, shard_table
from .spec import (
    BM25Spec,
    CallableSpec,
    DbSpec,
    DenseSpec,
    HttpSpec,
    HybridSpec,
    RetrieverSpec,
    bind_chunker,
    chunker_for,
    chunking_label,
    context_token_counts,
    encoder_for,
    evalset_chunk_qrels,
    retriever_spec,
    spec_to_dict,
    token_unit,
)
from .stores import DbRetriever, is_template, load_store, store_url

__all__ = [
    "BM25",
    "LEVELS",
    "BM25Spec",
    "CallableRetriever",
    "CallableSpec",
    "Chunk",
    "Chunker",
    "DbRetriever",
    "DbSpec",
    "Dense",
    "DenseSpec",
    "EmbeddingCache",
    "EmbeddingFolder",
    "Encoder",
    "HttpClient",
    "HttpRetriever",
    "HttpSpec",
    "Hybrid",
    "HybridSpec",
    "Kind",
    "LengthReport",
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
    "chunker_for",
    "chunking_label",
    "chunking_of",
    "context_token_counts",
    "context_tokens",
    "doc_run",
    "encoder",
    "encoder_for",
    "evalset_chunk_qrels",
    "exact_topk",
    "file_digest",
    "from_callable",
    "from_haystack",
    "from_langchain",
    "from_llamaindex",
    "fuse",
    "header_dict",
    "is_embedding_folder",
    "is_template",
    "length_report",
    "load_store",
    "parse_chunker",
    "public_url",
    "read_embedded",
    "retriever_spec",
    "rrf",
    "run_pipeline",
    "run_provenance",
    "shard_table",
    "sidecar_path",
    "spec_to_dict",
    "store_url",
    "summary_measures",
    "sweep_pending",
    "sweep_weights",
    "text_key",
    "token_counts",
    "token_unit",
    "warn_truncation",
    "weighted",
    "write_error",
    "write_run_and_sidecar",
]
