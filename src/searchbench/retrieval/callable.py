"""The retriever you already built as the system under test: a Python callable, or a
LangChain, LlamaIndex or Haystack object (adapters in :mod:`._frameworks`).

The shape is httpx's transport: an adapter answers one narrow question — the ranked
:class:`Hit` s of a batch of query texts, ``search(texts, k) -> [[Hit, ...], ...]`` — and
:class:`CallableRetriever` does the shared work above it, the same for every framework:

- **calling**: batches of ``batch_size`` queries, ``concurrency`` calls in flight
  (threads; an ``async def`` callable is awaited on one event loop with a semaphore), a
  ``timeout`` per call; a failing call stops the run with one error naming the query, or
  (``on_error="skip"``) leaves that query empty and is counted in one warning;
- **validation**: ids are strings or whole numbers, scores finite; a repeated id keeps its
  best place; ties are broken by trec_eval's rule (:class:`~searchbench.data.run.Run`);
  without scores the system's order is the ranking (score ``n − rank + 1``);
- **id mapping**: each hit becomes an evaluation-set id — its document (``doc_id`` from
  the framework, a metadata key, or the returned id itself) at document level, where
  several chunks of one document collapse to its best rank and the system is asked for
  more results until it gives ``k`` distinct documents or runs out; ``doc#start-end`` from
  the framework's character offsets at chunk level, judged against the evidence spans
  like searchbench's own chunks. Ids that match nothing are counted and shown; when none
  matches, the error names the classic mistake (a framework's node or chunk ids where the
  document ids were expected);
- **latency**: per-call seconds, percentiles and throughput in the run's provenance.

Protocol of a plain callable (``--retriever python --target module:name``): batch
``fn(queries: list[str], k: int) -> list[list[item]]`` or single
``fn(query: str, k: int) -> list[item]``, where an item is ``(id, score)``, a bare id
(ranked by order), a mapping with ``id`` (and ``score``, ``doc_id``, ``start``, ``end``),
or a framework object an adapter knows. ``async def`` works for both.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import os
import queue
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._util import package_version
from ..data import Queries, Run
from ..errors import BackendError, ConfigError, SearchbenchWarning, user_stacklevel
from ._frameworks import Hit, adapter_for
from .base import Retriever, Units, check_level
from .chunking import Chunk, parse_chunk_id

__all__ = ["CallableRetriever", "Hit", "from_callable", "from_haystack", "from_langchain",
           "from_llamaindex", "load_target", "target_provenance"]

ON_ERROR = ("fail", "skip")
CALLS = ("auto", "batch", "single")
MAX_DEEPEN = 8  # ask for k, 2k, 4k … at most 2**MAX_DEEPEN · k results


Searcher = Callable[[list[str], int], list[list[Hit]]]


def load_target(target: str, kwargs: Mapping[str, Any] | None = None) -> Any:
    """The object ``module:attr`` names; called with ``kwargs`` when it is a factory (it
    takes no required argument, or ``kwargs`` are given). The current folder is importable
    (as with ``python -m``)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"target {target!r}: expected 'module:name' (e.g. "
                          "myapp.search:retrieve)")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # the user's module may raise anything on import
        raise ConfigError(f"target {target!r}: cannot import {module_name!r} "
                          f"({type(exc).__name__}: {_line(exc)})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"target {target!r}: {module_name!r} has no attribute {part!r}")
        obj = getattr(obj, part)
    if kwargs or _is_factory(obj):
        if not callable(obj):
            raise ConfigError(f"target {target!r} is not callable; kwargs need a factory")
        try:
            obj = obj(**dict(kwargs or {}))
        except Exception as exc:
            raise ConfigError(f"target {target!r}: the factory raised {type(exc).__name__}: "
                              f"{_line(exc)}") from None
    return obj


def target_provenance(target: str) -> dict[str, Any]:
    """The target, its module file's SHA-256 and the versions of its top-level package."""
    module_name = target.partition(":")[0]
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    digest = None
    if path and Path(path).is_file():
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    top = module_name.split(".")[0]
    return {"target": target, "module_file": Path(path).name if path else None,
            "module_sha256": digest, "package_version": package_version(top)}


def _is_factory(obj: Any) -> bool:
    if inspect.isclass(obj):
        return True
    if not inspect.isfunction(obj) and not inspect.ismethod(obj):
        return False
    return not [p for p in inspect.signature(obj).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]


def _line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n")[0]
    return text[:300] if text else "(no message)"


class CallableRetriever(Retriever):
    """A callable or framework object as a retriever (see the module docstring)."""

    name = "python"

    def __init__(self, system: Any, *, kind: str = "python", name: str | None = None,
                 target: str | None = None, id_from: str | Callable[[Any], str] | None = None,
                 batch_size: int = 16, concurrency: int = 4, timeout: float = 60.0,
                 on_error: str = "fail", call: str = "auto",
                 query_input: str | None = None) -> None:
        super().__init__()
        _check_choice(on_error, ON_ERROR, "on_error")
        _check_choice(call, CALLS, "call")
        for key, value in (("batch_size", batch_size), ("concurrency", concurrency)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{key}={value!r}: expected a whole number >= 1")
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ConfigError(f"timeout={timeout!r}: expected seconds > 0")
        if isinstance(id_from, str) and id_from.startswith("python:"):
            id_from = load_target(id_from.removeprefix("python:"))  # your mapping function
            if not callable(id_from):
                raise ConfigError("id_from 'python:module:name' must name a function of the "
                                  "framework's result object returning the document id")
        self.kind, self.target = kind, target
        self.name = name or kind
        self.batch_size, self.concurrency, self.timeout = batch_size, concurrency, timeout
        self.on_error, self.id_from = on_error, id_from
        self.adapter = adapter_for(system, kind, id_from=id_from, call=call,
                                   query_input=query_input, concurrency=concurrency)
        self.latencies: list[float] = []

    def config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"retriever": self.kind, "adapter": self.adapter.describe(),
                               "batch_size": self.batch_size,
                               "concurrency": self.concurrency, "timeout_s": self.timeout,
                               "on_error": self.on_error,
                               "id_from": self.id_from if isinstance(self.id_from, str | None)
                               else getattr(self.id_from, "__qualname__", "function")}
        if self.target:
            out.update(target_provenance(self.target))
        return out

    def _indexed_elsewhere(self) -> str:
        """The system holds its own index (its chunks, where the framework can list them,
        serve the chunk level), so a searchbench chunker is refused."""
        return (f"{self.name}: your system chunks and indexes the documents itself; drop "
                "--chunk (use --level chunk to score its chunks)")

    def search(self, queries: Queries, k: int = 100, level: str = "doc") -> Run:
        units = self._require_index()
        level = check_level(level, k)
        t0 = time.perf_counter()
        self.latencies = []
        texts, qids = queries.texts(), list(queries.ids)
        known = {d.id: d for d in self.corpus or []}
        per_query, short, capped, asked, failed = self._rank_all(texts, qids, k, level, known)
        q, d, s, dropped = _columns(per_query, qids, k)
        self._check_known(d, level, known, per_query)
        run = Run.from_columns(q, d, s, name=self.name)
        self.timings["search_s"] = time.perf_counter() - t0
        meta: dict[str, Any] = {"level": level, "k": k, "timings": dict(self.timings),
                                "latency": latency_summary(self.latencies,
                                                           self.timings["search_s"]),
                                "duplicate_ids_dropped": dropped, "skipped_empty_docs": 0,
                                "deepening": {"max_asked": asked, "short_queries": short,
                                              "capped_queries": capped},
                                "failed_queries": failed}
        run.metadata.update(self.describe(), **meta)
        if level == "chunk":
            self.units = _chunk_units(units, self.adapter, per_query, known)
            run.metadata["chunks_from"] = self.adapter.chunk_source
        if failed:
            _warn(f"{self.name}: {len(failed)} queries failed and were left empty "
                  f"(--on-error skip), e.g. {failed[0]}")
        if capped:  # a system that simply has fewer results is not reported
            _warn(f"{self.name}: {capped} queries still had fewer than k={k} distinct "
                  f"documents after asking for {asked} results (chunks of few documents "
                  "fill their lists); their rankings are shorter than k")
        return run

    # -- calling ------------------------------------------------------------------------
    def _rank_all(self, texts: list[str], qids: list[str], k: int, level: str,
                  known: Mapping[str, Any]) -> tuple[list[list[tuple[str, float | None]]],
                                                     int, int, int, list[str]]:
        """Every query's mapped ranking; at doc level a query whose list filled up with
        chunks of fewer than ``k`` documents is asked again for twice as many."""
        out: list[list[tuple[str, float | None]]] = [[] for _ in texts]
        answered = [0] * len(texts)  # distinct results of each query's last answer
        pending, want, failed = list(range(len(texts))), k, []
        capped = 0
        for round_ in range(MAX_DEEPEN + 1):
            hits = self._call_all([texts[i] for i in pending], [qids[i] for i in pending],
                                  want)
            deeper = []
            for i, got in zip(pending, hits, strict=True):
                if got is None:
                    failed.append(qids[i])
                    continue
                out[i] = _map_hits(got, level, self.adapter, known)
                if level == "doc" and _needs_more(got, out[i], k, want, answered[i]):
                    deeper.append(i)
                answered[i] = len({h.id for h in got})
            if not deeper:
                break
            if round_ == MAX_DEEPEN:
                capped = len(deeper)
                break
            pending, want = deeper, want * 2
        gone = set(failed)
        short = sum(1 for i, ranked in enumerate(out)
                    if level == "doc" and qids[i] not in gone and _distinct(ranked) < k)
        return out, short, capped, want, failed

    def _call_all(self, texts: list[str], qids: list[str], k: int) -> list[list[Hit] | None]:
        batches = [(a, min(a + self.batch_size, len(texts)))
                   for a in range(0, len(texts), self.batch_size)]
        results: list[list[Hit] | None] = [None] * len(texts)

        def one(a: int, b: int) -> tuple[int, int, list[list[Hit]] | BaseException, float]:
            t = time.perf_counter()
            try:
                got = self.adapter.search(texts[a:b], k)
                if len(got) != b - a:
                    raise BackendError(f"returned {len(got)} rankings for {b - a} queries; "
                                         "expected one list per query")
                return a, b, got, time.perf_counter() - t
            except BaseException as exc:  # reported below with the query id
                return a, b, exc, time.perf_counter() - t

        for a, b, got, seconds in _run_pool(one, batches, self.concurrency, self.timeout,
                                            qids):
            self.latencies.append(seconds)
            if isinstance(got, BaseException):
                if isinstance(got, KeyboardInterrupt):
                    raise got
                message = (f"{self.name}: query {qids[a]!r}: {type(got).__name__}: "
                           f"{_line(got)}")
                if self.on_error == "fail":
                    raise BackendError(message + " (--on-error skip leaves such queries "
                                         "empty and goes on)")
                continue
            results[a:b] = got
        return results

    def _check_known(self, ids: list[str], level: str, known: Mapping[str, Any],
                     per_query: list[list[tuple[str, float | None]]]) -> None:
        docs = [i.rpartition("#")[0] if level == "chunk" else i for i in ids]
        unknown = sorted({d for d in docs if d not in known})
        if not unknown:
            return
        examples = ", ".join(repr(u) for u in unknown[:3])
        if len(unknown) == len(set(docs)):
            raise BackendError(
                f"{self.name}: none of the {len(unknown)} returned ids is a document of the "
                f"evaluation set (e.g. {examples}); {self.adapter.id_hint()}")
        _warn(f"{self.name}: {len(unknown)} returned ids are not documents of the "
              f"evaluation set and count as non-relevant (e.g. {examples}); "
              f"{self.adapter.id_hint()}")


def _run_pool(fn: Callable[..., Any], batches: list[tuple[int, int]], workers: int,
              timeout: float, qids: list[str]) -> list[Any]:
    """``fn(a, b)`` for every batch, ``workers`` at a time on daemon threads. A call still
    running after ``timeout`` seconds stops the run with an error naming its first query
    (the thread is abandoned: a hung call cannot hold the process at exit)."""
    tasks: queue.Queue[tuple[int, int] | None] = queue.Queue()
    done: queue.Queue[Any] = queue.Queue()
    inflight: dict[int, float] = {}
    for batch in batches:
        tasks.put(batch)

    def worker() -> None:
        while (item := tasks.get()) is not None:
            inflight[item[0]] = time.monotonic()
            result = fn(*item)
            inflight.pop(item[0], None)
            done.put(result)

    threads = [threading.Thread(target=worker, daemon=True, name="searchbench-call")
               for _ in range(min(workers, len(batches)))]
    for t in threads:
        tasks.put(None)
        t.start()
    out: list[Any] = []
    while len(out) < len(batches):
        try:
            out.append(done.get(timeout=0.2))
        except queue.Empty:
            now = time.monotonic()
            late = [a for a, t0 in list(inflight.items()) if now - t0 > timeout]
            if late:
                while not tasks.empty():  # nothing more is started
                    tasks.get_nowait()
                raise BackendError(f"query {qids[min(late)]!r}: no answer within "
                                     f"{timeout:g} s; raise --timeout or check the "
                                     "system") from None
    return out


def _distinct(ranked: list[tuple[str, float | None]]) -> int:
    return len({rid for rid, _ in ranked})


def _needs_more(got: Sequence[Hit], ranked: list[tuple[str, float | None]], k: int,
                want: int, before: int) -> bool:
    """Whether to ask again for more: the list was full, chunks of one document took
    several of its places (not the same id repeated), and the answer held more results
    than the last one, ``before`` (a system that keeps answering the same results,
    whatever it is asked, is exhausted). New *results*, not new documents: the next
    chunks of a long document may all belong to documents already found, and the ones
    after them to new documents."""
    distinct = _distinct(ranked)
    results = len({h.id for h in got})
    return distinct < k and len(got) >= want and results > distinct and results > before


def _map_hits(hits: Sequence[Hit], level: str, adapter: Any,
              known: Mapping[str, Any]) -> list[tuple[str, float | None]]:
    """``(evaluation-set id, score)`` per hit, in the system's order: the document (doc
    level) or ``doc#start-end`` (chunk level)."""
    out: list[tuple[str, float | None]] = []
    for hit in hits:
        hit = _located(hit, known)
        doc = hit.doc_id or hit.id
        if level == "doc":
            out.append((doc, hit.score))
            continue
        if hit.start is None or hit.end is None:
            raise BackendError(
                f"{adapter.kind}: level chunk needs each result's character offsets in its "
                f"document; result {hit.id!r} has none (LlamaIndex nodes carry them; "
                "otherwise return 'doc#start-end' ids or use level doc)")
        _check_offsets(hit, doc, known)
        out.append((f"{doc}#{hit.start}-{hit.end}", hit.score))
    return out


def _located(hit: Hit, known: Mapping[str, Any]) -> Hit:
    """``hit`` with its document (and offsets) read from a ``doc#start-end`` id when the
    system returned searchbench's own chunk ids."""
    if hit.doc_id is not None or hit.id in known or "#" not in hit.id:
        return hit
    try:
        doc, start, end = parse_chunk_id(hit.id)
    except ConfigError:
        return hit
    if doc not in known:
        return hit
    return Hit(hit.id, hit.score, doc, start, end, hit.text)


def _check_offsets(hit: Hit, doc: str, known: Mapping[str, Any]) -> None:
    source = known.get(doc)
    if source is None or hit.start is None or hit.end is None:
        return
    if not 0 <= hit.start < hit.end <= len(source.text):
        raise BackendError(f"result {hit.id!r}: offsets {hit.start}-{hit.end} lie outside "
                             f"document {doc!r} ({len(source.text)} characters)")
    if hit.text is not None and source.text[hit.start:hit.end] != hit.text:
        raise BackendError(
            f"result {hit.id!r}: its text is not document {doc!r}'s text at {hit.start}-"
            f"{hit.end}; the system indexed other text than the evaluation set's (a title "
            "prepended, other cleaning), so its offsets cannot be judged against the "
            "evidence spans")


def _columns(per_query: list[list[tuple[str, float | None]]], qids: list[str], k: int
             ) -> tuple[list[str], list[str], list[float], int]:
    """Flat run columns: each id at its best (first) place, top ``k``, scores checked."""
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    dropped = 0
    for qid, ranked in zip(qids, per_query, strict=True):
        seen: set[str] = set()
        kept = []
        for rid, score in ranked:
            if rid in seen:
                dropped += 1
                continue
            seen.add(rid)
            kept.append((rid, score))
        scored = [x for x in kept if x[1] is not None]
        if scored and len(scored) != len(kept):
            raise BackendError(f"query {qid!r}: some results have scores and some do not; "
                                 "expected all or none")
        kept = _cut(kept, k) if scored else kept[:k]
        for rank, (rid, score) in enumerate(kept):
            value = float(len(kept) - rank) if score is None else float(score)
            if not math.isfinite(value):
                raise BackendError(f"query {qid!r}: result {rid!r} has score {score!r}; "
                                     "expected a finite number")
            q.append(qid)
            d.append(rid)
            s.append(value)
    return q, d, s, dropped


def _cut(kept: list[tuple[str, Any]], k: int) -> list[tuple[str, Any]]:
    """The first ``k`` scored results, a tie at the cut resolved as ARCHITECTURE §3 ranks
    ties (id descending, byte-wise) rather than by the system's order: documents whose
    best chunks are the same text (the same score) then make the same cut as exact
    search, whichever of them the system listed first."""
    if len(kept) <= k or k <= 0:
        return kept[:k]
    last = kept[k - 1][1]
    inside = [x for x in kept[:k] if x[1] == last]
    outside = [x for x in kept[k:] if x[1] == last]
    if not outside:
        return kept[:k]
    tied = sorted(inside + outside, key=lambda x: x[0].encode("utf-8"), reverse=True)
    chosen = {rid for rid, _ in tied[:len(inside)]}
    head = [x for x in kept[:k] if x[1] != last]
    return head + [x for x in tied if x[0] in chosen]


def _chunk_units(units: Units, adapter: Any, per_query: list[list[tuple[str, float | None]]],
                 known: Mapping[str, Any]) -> Units:
    """Units whose chunks are the system's own chunking: every chunk it can list (so a
    relevant chunk never returned still counts in recall), else the chunks it returned."""
    listed = adapter.all_chunks(known)
    if listed is None:
        ids = sorted({rid for ranked in per_query for rid, _ in ranked})
        listed = []
        for cid in ids:
            doc, _, span = cid.rpartition("#")
            a, _, b = span.partition("-")
            if doc in known:
                listed.append(Chunk(doc, int(a), int(b), known[doc].text[int(a):int(b)]))
        _warn(f"{adapter.kind}: the system cannot list its chunks, so chunk-level recall "
              "counts only the relevant chunks it returned (an upper bound); pass the index "
              "or store, not a bare retriever, to judge against all of them")
    listed.sort(key=lambda c: (c.doc_id, c.start, c.end))
    starts: list[int] = []
    ids_: list[str] = []
    docs: list[str] = []
    for i, c in enumerate(listed):
        if not docs or docs[-1] != c.doc_id:
            docs.append(c.doc_id)
            starts.append(i)
        ids_.append(c.id)
    return Units(ids=ids_, texts=[c.text for c in listed], doc_ids=docs,
                 doc_starts=np.asarray(starts, dtype=np.int64), chunks=listed,
                 skipped_empty=units.skipped_empty)


def latency_summary(seconds: list[float], wall: float) -> dict[str, Any]:
    """Per-call latency percentiles (ms) and calls per second over the search's wall time."""
    if not seconds:
        return {"calls": 0}
    ms = np.asarray(seconds) * 1000.0
    return {"calls": len(seconds), "p50_ms": float(np.percentile(ms, 50)),
            "p95_ms": float(np.percentile(ms, 95)), "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": float(ms.max()), "calls_per_s": len(seconds) / wall if wall else None}


def _check_choice(value: str, allowed: tuple[str, ...], key: str) -> None:
    if value not in allowed:
        raise ConfigError(f"{key}={value!r}: expected one of {', '.join(allowed)}")


def _warn(message: str) -> None:
    warnings.warn(message, SearchbenchWarning, stacklevel=user_stacklevel())


def from_callable(fn: Any, **options: Any) -> CallableRetriever:
    """Your function ``fn(queries, k)`` / ``fn(query, k)`` as a retriever (options as
    :class:`CallableRetriever`'s)."""
    return CallableRetriever(fn, kind="python", **options)


def from_langchain(obj: Any, **options: Any) -> CallableRetriever:
    """A LangChain ``VectorStore`` or ``BaseRetriever`` as a retriever."""
    return CallableRetriever(obj, kind="langchain", **options)


def from_llamaindex(obj: Any, **options: Any) -> CallableRetriever:
    """A LlamaIndex index (``as_retriever``) or retriever as a retriever."""
    return CallableRetriever(obj, kind="llamaindex", **options)


def from_haystack(obj: Any, **options: Any) -> CallableRetriever:
    """A Haystack ``Pipeline`` or retriever component as a retriever."""
    return CallableRetriever(obj, kind="haystack", **options)
