"""Retrievers built with LangChain, LlamaIndex and Haystack over the `pyref` evaluation set,
as a user's application would build them (docs/frameworks.md). Every factory indexes the
evaluation set's documents with the packaged MiniLM through the framework's own embedding
interface; searchbench then evaluates them with `searchbench run -r ... --target`."""

from __future__ import annotations

import os

import searchbench as sb

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
_ENCODER = None


def _minilm():
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = sb.retrieval.encoder("minilm")
    return _ENCODER


def _documents():
    return list(sb.load_evalset("pyref").corpus)


def build_langchain_store():
    """A LangChain InMemoryVectorStore; each Document's id is the evaluation set's id."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class MiniLM(Embeddings):
        def embed_documents(self, texts):
            return _minilm().encode_documents(list(texts)).tolist()

        def embed_query(self, text):
            return _minilm().encode_queries([text])[0].tolist()

    store = InMemoryVectorStore(MiniLM())
    store.add_documents([Document(page_content=d.text, id=d.id) for d in _documents()])
    return store


def build_llamaindex_index():
    """A LlamaIndex VectorStoreIndex; its SentenceSplitter chunks each Document into nodes
    that keep the Document's id (ref_doc_id) and their character offsets."""
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query):
            return _minilm().encode_queries([query])[0].tolist()

        async def _aget_query_embedding(self, query):
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text):
            return _minilm().encode_documents([text])[0].tolist()

        def _get_text_embeddings(self, texts):
            return _minilm().encode_documents(list(texts)).tolist()

    Settings.embed_model, Settings.llm = MiniLM(), None
    return VectorStoreIndex.from_documents([Document(text=d.text, id_=d.id)
                                            for d in _documents()])


def build_haystack_pipeline():
    """A Haystack pipeline: BM25 over an in-memory document store."""
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=d.id, content=d.text) for d in _documents()])
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store))
    return pipeline


def retrieve(queries: list[str], k: int) -> list[list[tuple[str, float]]]:
    """A plain function: BM25 from searchbench stands in for your own service."""
    global _BM25
    if _BM25 is None:
        _BM25 = sb.retrieval.BM25().index(sb.load_evalset("pyref").corpus)
    asked = sb.Queries.from_dict({str(i): q for i, q in enumerate(queries)})
    run = _BM25.search(asked, k=k)
    return [run.ranking(str(i)) for i in range(len(queries))]


_BM25 = None
