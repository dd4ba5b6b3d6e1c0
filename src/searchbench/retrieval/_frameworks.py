"""Adapters from the objects users build with to :class:`~.callable.Hit` lists.

Each adapter answers ``search(texts, k) -> [[Hit, ...], ...]`` for its framework and
knows where the framework keeps ids, scores, source documents and character offsets; the
shared work (batching, timeouts, validation, id mapping, deepening) is
:class:`~.callable.CallableRetriever`'s. Frameworks are imported only by the user's own
code: these adapters recognise objects by their methods, so importing searchbench never
imports LangChain, LlamaIndex or Haystack.

=============  ===================================================  ==========================
kind           object                                               id (default) · offsets
=============  ===================================================  ==========================
python         ``fn(queries, k)`` / ``fn(query, k)``, sync or async  what it returns
langchain      ``VectorStore`` (``similarity_search_with_score``),   ``Document.id`` ·
               ``BaseRetriever`` (``batch``; ``k`` in                ``metadata["start_index"]``
               ``search_kwargs``)
llamaindex     ``VectorStoreIndex`` (``as_retriever``),              ``node.ref_doc_id`` ·
               ``BaseRetriever`` (``retrieve``)                      ``start/end_char_idx``
haystack       ``Pipeline`` or one component with ``run``            ``Document.id`` ·
                                                                     ``meta["split_idx_start"]``
=============  ===================================================  ==========================

``id_from`` overrides where the evaluation-set document id is read: ``"id"`` (the returned
id), ``"metadata:KEY"`` (LangChain metadata, Haystack meta, LlamaIndex node metadata),
``"ref_doc_id"`` (LlamaIndex) or a function of the framework's object.
"""

from __future__ import annotations

import inspect
import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import BackendError, ConfigError
from .chunking import Chunk

__all__ = ["FRAMEWORKS", "Hit", "adapter_for", "run_coroutines"]

FRAMEWORKS = ("python", "langchain", "llamaindex", "haystack")
IdFrom = str | Callable[[Any], str] | None


@dataclass(frozen=True)
class Hit:
    """One result as a system returned it: its ``id`` (a document id, a framework's node
    or chunk id), a ``score`` (None: ranked by order), and where the framework says so the
    source ``doc_id`` and character offsets ``start``/``end`` in that document's text."""

    id: str
    score: float | None = None
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None
    text: str | None = None


def run_coroutines(calls: list[Any], concurrency: int) -> list[Any]:
    """Await ``calls`` (coroutines) with at most ``concurrency`` in flight."""
    import asyncio  # lazy: loads asyncio on first use


    async def main() -> list[Any]:
        gate = asyncio.Semaphore(concurrency)

        async def one(c: Any) -> Any:
            async with gate:
                return await c

        return await asyncio.gather(*(one(c) for c in calls))

    return asyncio.run(main())


def adapter_for(system: Any, kind: str, *, id_from: IdFrom = None, call: str = "auto",
                query_input: str | None = None, concurrency: int = 4) -> Any:
    """The adapter of ``kind`` for the user's ``system`` (refused with one error naming
    what was expected when the object does not fit)."""
    if kind not in FRAMEWORKS:
        raise ConfigError(f"retriever type {kind!r}: expected one of {', '.join(FRAMEWORKS)}")
    if kind == "haystack":
        os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
        return HaystackAdapter(system, id_from, query_input)
    if kind == "langchain":
        return LangChainAdapter(system, id_from)
    if kind == "llamaindex":
        return LlamaIndexAdapter(system, id_from)
    return PythonAdapter(system, id_from, call, concurrency)


class _Adapter:
    kind = "python"
    chunk_source = "the chunks the system returned"

    def __init__(self, id_from: IdFrom) -> None:
        if isinstance(id_from, str) and not (id_from in ("id", "ref_doc_id")
                                             or id_from.startswith("metadata:")):
            raise ConfigError(f"id_from={id_from!r}: expected 'id', 'ref_doc_id', "
                              "'metadata:KEY' or 'python:module:function'")
        self.id_from = id_from

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "object": type(getattr(self, "system", None)).__name__}

    def all_chunks(self, known: Mapping[str, Any]) -> list[Chunk] | None:
        """Every chunk the system indexed, where it can list them (None otherwise)."""
        return None

    def _listed(self, hits: Iterable[Hit], known: Mapping[str, Any], source: str
                ) -> list[Chunk]:
        """The chunks among ``hits`` (every one the system indexed) of the documents in
        ``known`` with offsets; ``source`` says where they were listed from."""
        out = [c for c in (_chunk(hit, known) for hit in hits) if c is not None]
        self.chunk_source = source
        return out

    def id_hint(self) -> str:
        return ("return the evaluation set's document ids, or pass --id-from naming where "
                "they are")

    def _doc_id(self, raw: Any, default: str | None, meta: Mapping[str, Any]) -> str | None:
        if callable(self.id_from):
            return str(self.id_from(raw))
        if self.id_from == "id":
            return None
        if isinstance(self.id_from, str) and self.id_from.startswith("metadata:"):
            key = self.id_from.partition(":")[2]
            if key not in meta:
                raise BackendError(f"{self.kind}: a result has no metadata key {key!r} "
                                   f"(--id-from {self.id_from}); its keys: "
                                   f"{', '.join(sorted(map(str, meta))) or 'none'}")
            return str(meta[key])
        return default


class PythonAdapter(_Adapter):
    """A plain callable: batch ``fn(list[str], k)`` or single ``fn(str, k)``."""

    def __init__(self, fn: Any, id_from: IdFrom, call: str, concurrency: int) -> None:
        super().__init__(id_from)
        if not callable(fn):
            raise ConfigError(f"the target is a {type(fn).__name__}, not callable; expected "
                              "fn(queries, k) or fn(query, k) (or a factory returning one)")
        self.system, self.concurrency = fn, concurrency
        self.batch = _is_batch(fn) if call == "auto" else call == "batch"
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None))  # noqa: B004 - an async __call__ method

    def describe(self) -> dict[str, Any]:
        return {"kind": "python", "call": "batch" if self.batch else "single",
                "async": self.is_async,
                "function": getattr(self.system, "__qualname__", type(self.system).__name__)}

    def search(self, texts: list[str], k: int) -> list[list[Hit]]:
        if self.batch:
            got = self.system(list(texts), k)
            if self.is_async:
                got = run_coroutines([got], 1)[0]
            if not isinstance(got, Sequence) or isinstance(got, str | bytes):
                raise BackendError(f"returned a {type(got).__name__}; a batch callable "
                                   "returns one list of results per query")
            rankings = list(got)
        elif self.is_async:
            rankings = run_coroutines([self.system(t, k) for t in texts], self.concurrency)
        else:
            rankings = [self.system(t, k) for t in texts]
        return [self._hits(r) for r in rankings]

    def _hits(self, ranking: Any) -> list[Hit]:
        if not isinstance(ranking, Sequence) or isinstance(ranking, str | bytes):
            raise BackendError(f"returned a {type(ranking).__name__} for a query; expected a "
                               "list of (id, score) pairs or ids")
        return [self._hit(item) for item in ranking]

    def _hit(self, item: Any) -> Hit:
        for convert in (_from_langchain, _from_llamaindex, _from_haystack):
            hit = convert(item, self)
            if hit is not None:
                return hit
        if isinstance(item, Mapping):
            if "id" not in item:
                raise BackendError(f"a result mapping has no 'id' key (keys: "
                                   f"{', '.join(sorted(map(str, item)))})")
            meta = item.get("metadata") or item.get("meta") or {}
            doc = self._doc_id(item, _opt_id(item.get("doc_id")),
                               meta if isinstance(meta, Mapping) else {})
            return Hit(_id(item["id"]), _score(item.get("score")), _opt_id(doc),
                       item.get("start"), item.get("end"))
        if isinstance(item, tuple | list) and len(item) == 2:
            return Hit(_id(item[0]), _score(item[1]), _opt_id(self._doc_id(item, None, {})))
        if isinstance(item, str | int) and not isinstance(item, bool):
            return Hit(_id(item), None, _opt_id(self._doc_id(item, None, {})))
        raise BackendError(f"a result is a {type(item).__name__}; expected (id, score), an "
                           "id, or a mapping with 'id'")


class LangChainAdapter(_Adapter):
    """A LangChain ``VectorStore`` or ``BaseRetriever``."""

    kind = "langchain"

    def __init__(self, system: Any, id_from: IdFrom) -> None:
        super().__init__(id_from)
        self.system = system
        self.store = hasattr(system, "similarity_search_with_score")
        if not self.store and not hasattr(system, "invoke"):
            raise ConfigError(f"the target is a {type(system).__name__}; expected a LangChain "
                              "VectorStore or BaseRetriever (or a factory returning one)")
        self.score_order = "similarity"

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "object": type(self.system).__name__,
                "scores": self.score_order if self.store else "rank-derived"}

    def search(self, texts: list[str], k: int) -> list[list[Hit]]:
        if self.store:
            out = []
            for text in texts:
                pairs = self.system.similarity_search_with_score(text, k=k)
                scores = _oriented([float(s) for _, s in pairs], self)
                out.append([self._hit(doc, s) for (doc, _), s in zip(pairs, scores,
                                                                      strict=True)])
            return out
        retriever = _with_k(self.system, k)
        docs = retriever.batch(list(texts)) if hasattr(retriever, "batch") else \
            [retriever.invoke(t) for t in texts]
        return [[self._hit(d, None) for d in ranking][:k] for ranking in docs]

    def _hit(self, doc: Any, score: float | None) -> Hit:
        hit = _expected(_from_langchain(doc, self), doc, "LangChain Document")
        return Hit(hit.id, score if score is not None else hit.score, hit.doc_id, hit.start,
                   hit.end, hit.text)

    def all_chunks(self, known: Mapping[str, Any]) -> list[Chunk] | None:
        rows = getattr(self.system, "store", None)  # InMemoryVectorStore's own dict
        if not isinstance(rows, Mapping):
            return None
        from langchain_core.documents import Document  # lazy: the langchain extra

        return self._listed((self._hit(Document(page_content=row["text"], id=row.get("id"),
                                                metadata=row.get("metadata") or {}), None)
                             for row in rows.values()), known, "every chunk in the vector store")

    def id_hint(self) -> str:
        return ("give each LangChain Document the evaluation set's id (Document(id=…)), or "
                "pass --id-from metadata:KEY naming the metadata key that holds it")


class LlamaIndexAdapter(_Adapter):
    """A LlamaIndex ``VectorStoreIndex`` (or any index with ``as_retriever``) or a
    ``BaseRetriever``; results are ``NodeWithScore``."""

    kind = "llamaindex"

    def __init__(self, system: Any, id_from: IdFrom) -> None:
        super().__init__(id_from)
        self.system = system
        if not (hasattr(system, "as_retriever") or hasattr(system, "retrieve")):
            raise ConfigError(f"the target is a {type(system).__name__}; expected a LlamaIndex "
                              "index (as_retriever) or retriever (retrieve)")
        self._retrievers: dict[int, Any] = {}

    def search(self, texts: list[str], k: int) -> list[list[Hit]]:
        retriever = self._retriever(k)
        out = []
        for text in texts:
            nodes = retriever.retrieve(text)
            out.append([self._hit(n) for n in nodes])
        return out

    def _retriever(self, k: int) -> Any:
        if k not in self._retrievers:
            if hasattr(self.system, "as_retriever"):
                self._retrievers[k] = self.system.as_retriever(similarity_top_k=k)
            else:
                if hasattr(self.system, "similarity_top_k"):
                    self.system.similarity_top_k = k
                self._retrievers[k] = self.system
        return self._retrievers[k]

    def _hit(self, item: Any) -> Hit:
        return _expected(_from_llamaindex(item, self), item, "LlamaIndex NodeWithScore")

    def all_chunks(self, known: Mapping[str, Any]) -> list[Chunk] | None:
        index = self.system if hasattr(self.system, "docstore") else \
            getattr(self.system, "_index", None)
        docs = getattr(getattr(index, "docstore", None), "docs", None)
        if not isinstance(docs, Mapping) or not docs:
            return None
        return self._listed((self._hit(_Scored(node)) for node in docs.values()), known,
                            "every node in the index's docstore")

    def id_hint(self) -> str:
        return ("LlamaIndex node ids are random per build: searchbench reads each node's "
                "ref_doc_id, so create the Documents with id_=<the evaluation set's id> "
                "(or pass --id-from metadata:KEY)")


class HaystackAdapter(_Adapter):
    """A Haystack 2 ``Pipeline`` or a single component with ``run`` returning
    ``{"documents": [...]}``."""

    kind = "haystack"

    def __init__(self, system: Any, id_from: IdFrom, query_input: str | None) -> None:
        super().__init__(id_from)
        self.system = system
        if not hasattr(system, "run"):
            raise ConfigError(f"the target is a {type(system).__name__}; expected a Haystack "
                              "Pipeline or component (or a factory returning one)")
        self.pipeline = hasattr(system, "inputs") and hasattr(system, "graph")
        self.query_input = self._query_input(query_input)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "object": type(self.system).__name__,
                "query_input": ".".join(self.query_input) if self.query_input else "query"}

    def _query_input(self, given: str | None) -> tuple[str, str] | None:
        if not self.pipeline:
            return None
        inputs = self.system.inputs()
        if given:
            comp, _, field = given.partition(".")
            if comp not in inputs or field not in inputs[comp]:
                raise ConfigError(f"--query-input {given!r}: the pipeline has no such input; "
                                  f"its inputs: {_input_names(inputs)}")
            return comp, field
        texts = [(c, f) for c, fields in inputs.items() for f, spec in fields.items()
                 if spec.get("is_mandatory") and spec.get("type") is str]
        if len(texts) != 1:
            raise ConfigError(f"the pipeline has {len(texts)} mandatory text inputs "
                              f"({_input_names(inputs)}); name the query's with --query-input "
                              "COMPONENT.FIELD")
        return texts[0]

    def search(self, texts: list[str], k: int) -> list[list[Hit]]:
        return [[self._hit(d) for d in self._documents(t, k)][:k] for t in texts]

    def _documents(self, text: str, k: int) -> list[Any]:
        if not self.pipeline:
            return list(self.system.run(query=text, top_k=k)["documents"])
        assert self.query_input is not None
        comp, field = self.query_input
        data: dict[str, dict[str, Any]] = {comp: {field: text}}
        for name, fields in self.system.inputs(include_components_with_connected_inputs=True
                                               ).items():
            if "top_k" in fields:
                data.setdefault(name, {})["top_k"] = k
        result = self.system.run(data)
        found = [out["documents"] for out in result.values()
                 if isinstance(out, Mapping) and "documents" in out]
        if len(found) != 1:
            raise BackendError(f"the pipeline's outputs hold {len(found)} 'documents' lists; "
                               "expected exactly one (end the pipeline at the retriever or "
                               "ranker)")
        return list(found[0])

    def _hit(self, doc: Any) -> Hit:
        return _expected(_from_haystack(doc, self), doc, "Haystack Document")

    def all_chunks(self, known: Mapping[str, Any]) -> list[Chunk] | None:
        stores = [getattr(self.system, "document_store", None)]
        if self.pipeline:
            stores = [getattr(self.system.get_component(n), "document_store", None)
                      for n in self.system.graph.nodes]
        store = next((s for s in stores if s is not None), None)
        if store is None:
            return None
        return self._listed((self._hit(d) for d in store.filter_documents()), known,
                            "every document in the document store")

    def id_hint(self) -> str:
        return ("write the Haystack Documents with id=<the evaluation set's id>, or pass "
                "--id-from metadata:KEY naming the meta key that holds it (a "
                "DocumentSplitter keeps the parent's id in meta 'source_id')")


# -- recognising each framework's result objects (duck-typed: no framework import) -------
def _expected(hit: Hit | None, item: Any, kind: str) -> Hit:
    """The hit a framework's converter made of ``item``: None (``item`` is not a ``kind``,
    the framework's result type) is the adapter's one error for a foreign result."""
    if hit is None:
        raise BackendError(f"a result is a {type(item).__name__}; expected a {kind}")
    return hit


def _from_langchain(doc: Any, adapter: _Adapter) -> Hit | None:
    if not (hasattr(doc, "page_content") and hasattr(doc, "metadata")):
        return None
    meta = doc.metadata or {}
    rid = getattr(doc, "id", None) or meta.get("id")
    doc_id = adapter._doc_id(doc, None, meta)
    if rid is None and doc_id is None:
        raise BackendError("a LangChain Document has no id (Document.id is None); set ids "
                           "when adding documents or pass --id-from metadata:KEY")
    start = meta.get("start_index")
    end = start + len(doc.page_content) if isinstance(start, int) else None
    score = meta.get("relevance_score", meta.get("score"))
    return Hit(_id(rid if rid is not None else doc_id), _score(score), doc_id,
               start if isinstance(start, int) else None, end, doc.page_content)


class _Scored:
    """A bare LlamaIndex node dressed as a ``NodeWithScore`` (docstore listing)."""

    def __init__(self, node: Any) -> None:
        self.node, self.score = node, None


def _from_llamaindex(item: Any, adapter: _Adapter) -> Hit | None:
    node = getattr(item, "node", None)
    if node is None or not hasattr(node, "node_id"):
        return None
    meta = getattr(node, "metadata", None) or {}
    default = None if adapter.id_from == "id" else getattr(node, "ref_doc_id", None)
    doc_id = adapter._doc_id(item, default, meta)
    text = getattr(node, "text", None)
    return Hit(_id(node.node_id), _score(getattr(item, "score", None)), doc_id,
               getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None),
               text if isinstance(text, str) else None)


def _from_haystack(doc: Any, adapter: _Adapter) -> Hit | None:
    if not (hasattr(doc, "content") and hasattr(doc, "meta") and hasattr(doc, "id")):
        return None
    meta = doc.meta or {}
    doc_id = adapter._doc_id(doc, None, meta)
    start = meta.get("split_idx_start")
    content = doc.content if isinstance(doc.content, str) else None
    end = start + len(content) if isinstance(start, int) and content is not None else None
    return Hit(_id(doc.id), _score(getattr(doc, "score", None)), doc_id,
               start if isinstance(start, int) else None, end, content)


def _chunk(hit: Hit, known: Mapping[str, Any]) -> Chunk | None:
    doc = hit.doc_id or hit.id
    if hit.start is None or hit.end is None or doc not in known:
        return None
    return Chunk(doc, hit.start, hit.end, known[doc].text[hit.start:hit.end])


def _with_k(retriever: Any, k: int) -> Any:
    kwargs = getattr(retriever, "search_kwargs", None)
    if isinstance(kwargs, dict):
        copy = getattr(retriever, "model_copy", None)
        return copy(update={"search_kwargs": {**kwargs, "k": k}}) if copy else retriever
    if hasattr(retriever, "k"):
        retriever.k = k
    return retriever


def _oriented(scores: list[float], adapter: LangChainAdapter) -> list[float | None]:
    """Scores higher-is-better: kept when the store's order is non-increasing, negated when
    it is non-decreasing (a distance), else None (ranked by the store's order)."""
    pairs = list(itertools.pairwise(scores))
    if all(a >= b for a, b in pairs):
        adapter.score_order = "similarity"
        return list(scores)
    if all(a <= b for a, b in pairs):
        adapter.score_order = "distance (negated)"
        return [-s for s in scores]
    adapter.score_order = "rank-derived (scores not monotone in the store's order)"
    return [None] * len(scores)


def _is_batch(fn: Any) -> bool:
    """Whether ``fn`` takes a list of queries: its first parameter is annotated as a
    list/sequence, or named ``queries``/``texts``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if not params:
        raise ConfigError("the target callable takes no arguments; expected fn(queries, k) "
                          "or fn(query, k)")
    first = params[0]
    note = str(first.annotation).lower()
    return first.name in ("queries", "texts", "batch") or any(
        w in note for w in ("list", "sequence", "iterable"))


def _input_names(inputs: Mapping[str, Mapping[str, Any]]) -> str:
    return ", ".join(f"{c}.{f}" for c, fields in inputs.items() for f in fields) or "none"


def _id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or \
            (isinstance(value, str) and not value.strip()):
        raise BackendError(f"a result id is {value!r}; expected a non-empty string or a "
                           "whole number")
    return str(value)


def _opt_id(value: Any) -> str | None:
    return None if value is None else _id(value)


def _score(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BackendError(f"a result score is {value!r}; expected a number")
    return float(value)
