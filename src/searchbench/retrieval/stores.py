"""An evaluation set in your own vector database, and that database as a retriever
(ARCHITECTURE §11).

:func:`load_store` embeds a corpus (or its chunks) with searchbench's encoders and
embedding cache and loads it into a :class:`~searchbench.db.VectorStore` in batches,
resumably: ids already stored are neither embedded again nor loaded again, so re-running
after a crash finishes the job without duplicates. The store's provenance records the
model identity, prefixes, chunker, metric, dimension, evaluation set, count, index and
load time; :class:`DbRetriever` reads it back to embed queries with the same model and
split the corpus into the same units.

Vectors for ``cosine`` are L2-normalised before loading (as :class:`Dense` indexes them),
so every engine stores the same rows whatever it does with cosine internally.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .._util import progress, utc_now
from ..errors import ConfigError, SearchbenchWarning, user_stacklevel
from ._truncation import length_report, warn_truncation
from .base import Retriever, Units, build_units, exact_topk
from .chunking import Chunker, parse_chunker
from .dense import normalize
from .spec import DenseSpec, chunker_for, encoder_for

__all__ = ["CHUNKER_FIELD", "FORMAT", "DbRetriever", "check_ids", "chunker_slug",
           "is_template", "load_batches", "load_store", "store_url"]

FORMAT = "searchbench-store/1"
#: The placeholder of a store URL naming one store per chunker (``table=docs_{chunker}``).
CHUNKER_FIELD = "{chunker}"
_NAME_OPTIONS = ("table", "collection", "index", "name")
_SAFE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def chunker_slug(chunk: str | None) -> str:
    """``tokens:128:16`` → ``tokens_128_16`` (``none`` for whole documents): what
    :data:`CHUNKER_FIELD` becomes in a store name."""
    return re.sub(r"[^A-Za-z0-9]+", "_", chunk or "none").strip("_") or "none"


def is_template(url: str) -> bool:
    """Whether ``url`` names one store per chunker (holds :data:`CHUNKER_FIELD`)."""
    return CHUNKER_FIELD in url


def store_url(url: str, chunk: str | None, key: str = "the store URL") -> str:
    """``url`` with :data:`CHUNKER_FIELD` replaced by :func:`chunker_slug` of ``chunk``
    (``url`` itself when it holds none). The placeholder may only stand in the value of
    the store's name option (``table``, ``collection``, ``index``, ``name``), and the name
    it yields must be a plain identifier (letter or ``_``, then letters, digits, ``_``; at
    most 63): anything else is one :class:`ConfigError` naming ``key``."""
    if not is_template(url):
        return url
    from ..db import parse_store_url  # lazy: loads db, knn on first use

    expanded = url.replace(CHUNKER_FIELD, chunker_slug(chunk))
    parsed = parse_store_url(expanded)
    where = [o for o in _NAME_OPTIONS if CHUNKER_FIELD in _option(url, o)]
    rest = url
    for o in where:
        rest = rest.replace(_option(url, o), "")
    if not where or CHUNKER_FIELD in rest or re.search(r"{(?!chunker})[^}]*}", url):
        raise ConfigError(f"{key}: {parse_store_url(url).public!r}: {CHUNKER_FIELD} may "
                          "only stand in the store's name (table=, collection=, index= or "
                          "name=), e.g. "
                          "table=docs_{chunker}; no other {...} field is known")
    for o in where:
        name = parsed.options.get(o, "")
        if not _SAFE_NAME.match(name):
            raise ConfigError(f"{key}: {o}={name!r} (for chunker {chunk or 'none'!r}) is not "
                              "a plain identifier; expected a letter or _ then letters, "
                              "digits or _ (at most 63), e.g. table=docs_{chunker}")
    return expanded


def _option(url: str, name: str) -> str:
    """The raw ``name=value`` text of ``url``'s query ("" when absent)."""
    m = re.search(rf"[?&]({re.escape(name)}=[^&#]*)", url)
    return m.group(1) if m else ""


def _store(store_or_url: Any, must_exist: bool = False) -> Any:
    from ..db import VectorStore, connect  # lazy: loads db, knn on first use

    if isinstance(store_or_url, VectorStore):
        return store_or_url
    return connect(store_or_url, must_exist=must_exist)


def _examples(ids: Iterable[str], n: int = 3) -> str:
    return ", ".join(repr(i) for i in sorted(ids)[:n])


def check_ids(stored: Iterable[str], units: Sequence[str], where: str, *,
              allow_missing: bool = False) -> None:
    """Refuse a store whose ids are not the evaluation set's units: counts and examples.

    ``allow_missing`` accepts units not stored yet (a load in progress)."""
    have, want = set(stored), set(units)
    foreign = have - want
    missing = set() if allow_missing else want - have
    if not foreign and not missing:
        return
    parts = []
    if foreign:
        parts.append(f"{len(foreign)} of its {len(have)} ids are not in the evaluation set "
                     f"(e.g. {_examples(foreign)})")
    if missing:
        parts.append(f"{len(missing)} of the set's {len(want)} units are not stored "
                     f"(e.g. {_examples(missing)})")
    raise ConfigError(f"{where}: the store does not hold this evaluation set: "
                      f"{'; '.join(parts)}. Load it with `searchbench db load` (same set, "
                      "model and --chunk), or use another table/collection")


def _normalised(x: np.ndarray, metric: str) -> np.ndarray:
    return normalize(x) if metric == "cosine" else np.asarray(x, dtype=np.float32)


def load_batches(store: Any, batches: Iterable[tuple[list[str], np.ndarray, list[str]]], *,
                 metric: str, provenance: Mapping[str, Any],
                 batch_size: int = 1000, total: int = 0,
                 quiet: bool | None = None) -> dict[str, int]:
    """Load ``(ids, vectors, texts)`` batches one after another (each committed before the
    next is produced); returns ``{"added", "skipped"}``. Interrupted, it keeps every batch
    loaded so far. ``total``: rows to load, for the progress bar."""
    added = skipped = dim = 0
    with progress(total, f"loading {store.url.public}", quiet, unit="rows",
                  kept=f"loaded into {store.url.public}") as done:
        for ids, vectors, texts in batches:
            dim = int(vectors.shape[1])
            report = store.load(ids, vectors, metric=metric, texts=texts,
                                batch_size=batch_size, provenance={**provenance, "dim": dim})
            added += report.added
            skipped += report.skipped_existing
            done(len(ids))
    return {"added": added, "skipped": skipped, "dim": dim}


def _embedded(encoder: Any, units: Units, todo: list[int], metric: str,
              batch_size: int) -> Iterator[tuple[list[str], np.ndarray, list[str]]]:
    """Batches of the units ``todo``, embedded (through the cache) just before loading."""
    for a in range(0, len(todo), batch_size):
        rows = todo[a:a + batch_size]
        texts = [units.texts[i] for i in rows]
        vecs = _normalised(encoder.encode_documents(texts), metric)
        yield [units.ids[i] for i in rows], vecs, texts


def load_store(store_or_url: Any, evalset: Any, model: str = "minilm", *,
               chunk: str | None = None, metric: str = "cosine",
               index: str | None = "default", params: Mapping[str, Any] | None = None,
               batch_size: int = 1000, query_prefix: str = "", doc_prefix: str = "",
               with_title: bool = True, cache: Any = True, quiet: bool | None = None,
               encoder_options: Mapping[str, Any] | None = None,
               encoders: dict[Any, Any] | None = None) -> dict[str, Any]:
    """Embed ``evalset``'s corpus (split by ``chunk``) with ``model`` and load it into the
    store, then build the ``index`` (``"default"``: the engine's first kind; None: no
    index) with build ``params``. Resumable and idempotent; returns a summary (added,
    skipped, count, seconds, the store's description). ``encoders``: a cache of loaded
    models shared with a :class:`~searchbench.retrieval.Pipeline` (an experiment loading
    its stores embeds with the encoders its cells use)."""
    from ..knn import check_metric  # lazy: loads knn on first use

    metric = check_metric(metric)
    store = _store(store_or_url)
    cls = type(store)
    # "default" on an engine with no ANN index (sqlite-vec): load only, searches are exact
    kind = (None if index in (None, "none") or (index == "default" and not cls.index_kinds)
            else cls.index_kinds[0] if index == "default" else index)
    if kind is not None and kind not in cls.index_kinds:
        raise ConfigError(f"--index {index!r}: {cls.engine} builds "
                          f"{', '.join(cls.index_kinds) or 'no index'} (or none)")
    from ..db import check_params  # lazy: loads db, knn on first use

    build = check_params(cls.engine, cls.params, params or {}, "build")
    spec = DenseSpec(model=model, query_prefix=query_prefix, doc_prefix=doc_prefix,
                     with_title=with_title)
    enc = encoder_for(spec, encoders if encoders is not None else {}, quiet, cache=cache,
                      **dict(encoder_options or {}))
    chunker = chunker_for(chunk, enc)
    units = build_units(evalset.corpus, chunker, with_title, quiet)
    prov = {"format": FORMAT, "model": model, "model_identity": enc.identity,
            "query_prefix": query_prefix, "doc_prefix": doc_prefix, "with_title": with_title,
            "chunk": chunk if chunker is not None else None,
            "chunker": chunker.describe() if chunker is not None else None,
            "metric": metric, "evalset": {"name": getattr(evalset, "name", None),
                                          "hash": _hash(evalset)},
            "units": len(units), "complete": False}
    _check_same_load(store, prov)
    t0 = time.perf_counter()
    stored = store.stored_ids()
    check_ids(stored, units.ids, store.url.public, allow_missing=True)
    have = set(stored)
    todo = [i for i, u in enumerate(units.ids) if u not in have]
    truncation = _truncation(enc, units, chunker is not None, todo)
    if truncation is not None:  # kept from the first load when nothing is embedded now
        prov["truncation"] = truncation
    done = load_batches(store, _embedded(enc, units, todo, metric, batch_size), metric=metric,
                        provenance=prov, batch_size=batch_size, total=len(todo), quiet=quiet)
    load_s = time.perf_counter() - t0
    build_s = None
    if kind is not None and (done["added"] or not _same_index(store, kind, build)):
        with progress(1, f"building the {kind} index of {store.url.public}", quiet,
                      unit="index") as built:
            build_s = store.build_index(kind, **build)
            built(1)
    old = _stored(store)
    final = {**prov, "complete": True, "count": store.count(), "batch_size": batch_size,
             "index": _index_entry(store, kind, build, build_s)}
    if done["added"] or "loaded" not in old:  # a re-run that added nothing keeps these
        final.update(loaded=utc_now(), load_seconds=round(load_s, 3))
    dim = done["dim"] or int(_stored(store).get("dim") or store.describe().get("dim") or 0)
    final["dim"] = dim
    store.load([], np.empty((0, dim), np.float32), metric=metric, provenance=final)
    return {"added": done["added"], "skipped": len(units) - len(todo), "units": len(units),
            "count": final["count"], "load_seconds": load_s, "build_seconds": build_s,
            "index": kind, "store": store.describe()}


def _truncation(enc: Any, units: Units, chunked: bool, todo: list[int]) -> Any:
    """The encoder's truncation of the units (warned once, as ``run`` warns), counted
    before embedding; None when everything is loaded already (nothing is embedded)."""
    if not todo:
        return None
    report = length_report(enc, units.texts, "chunk" if chunked else "document")
    warn_truncation(report)
    return report.to_dict()


def _hash(evalset: Any) -> str | None:
    fn = getattr(evalset, "content_hash", None)
    return fn() if callable(fn) else None


def _stored(store: Any) -> dict[str, Any]:
    """The provenance the store holds ({} for a collection searchbench did not load)."""
    return dict(store.describe().get("provenance") or {})


def _same_index(store: Any, kind: str, build: Mapping[str, Any]) -> bool:
    """The store records an index of ``kind`` built with (at least) ``build``."""
    got = _stored(store).get("index") or {}
    params = got.get("params") or {}
    return got.get("kind") == kind and all(params.get(k) == v for k, v in build.items())


def _index_entry(store: Any, kind: str | None, build: Mapping[str, Any],
                 seconds: float | None) -> Any:
    """The provenance of the index: what the adapter recorded (its effective parameters,
    defaults included) over what was asked."""
    got = _stored(store).get("index") or {}
    if kind is None:
        return got or None
    return {"kind": kind, "params": {**build, **(got.get("params") or {})},
            "build_seconds": round(seconds, 3) if seconds is not None
            else got.get("build_seconds")}


def _check_same_load(store: Any, prov: Mapping[str, Any]) -> None:
    """A resumed load must use the model, prefixes, chunker and metric of the first one."""
    old = _stored(store)
    for key in ("model_identity", "query_prefix", "doc_prefix", "with_title", "chunker",
                "metric"):
        if key in old and old[key] != prov[key]:
            raise ConfigError(f"{store.url.public}: the collection was loaded with {key} "
                              f"{old[key]!r}; this load has {prov[key]!r}. Use the same "
                              "settings to resume, or another table/collection")


class DbRetriever(Retriever):
    """Search a vector store loaded with :func:`load_store` (or your own collection whose
    ids are the evaluation set's document ids).

    Query vectors come from the model recorded in the store (or ``model``; a model whose
    identity differs from the recorded one is refused). Scores are similarities: ``1 − d``
    for cosine, ``−d`` for ip and l2 (d = the store's distance), so they equal
    :class:`Dense`'s. At ``level="doc"`` over chunks a document ranks at its best chunk:
    the store is searched deeper until k distinct documents are found (exact for an exact
    search, since the results are a prefix of the chunk ranking).
    """

    name = "db"

    def __init__(self, store: Any, *, params: Mapping[str, Any] | None = None,
                 filter: str | None = None, model: str | None = None, exact: bool = False,
                 quiet: bool | None = None, encoders: dict[Any, Any] | None = None,
                 **encoder_options: Any) -> None:
        super().__init__()
        self.store = _store(store, must_exist=True)
        try:
            self._setup(params, model, quiet, encoder_options,
                        encoders if encoders is not None else {})
        except BaseException:
            self.store.close()
            raise
        self.filter, self.exact, self.quiet = filter, exact, quiet
        self.min_score = -np.inf  # padding of short answers is dropped
        self.searched: dict[str, Any] = {}

    def _setup(self, params: Mapping[str, Any] | None, model: str | None,
               quiet: bool | None, encoder_options: dict[str, Any],
               encoders: dict[Any, Any]) -> None:
        """Parameters checked, model chosen and checked against the store's record."""
        from ..db import check_params  # lazy: loads db, knn on first use

        cls = type(self.store)
        self.params = check_params(cls.engine, cls.params, params or {}, "search")
        self.stored = _stored(self.store)
        if self.store.count() == 0:  # a typo'd URL reaches an empty, new collection
            raise ConfigError(f"{self.store.url.public}: the store holds no rows (no such "
                              "table/collection, or nothing loaded yet); check the URL, or "
                              "load it first with `searchbench db load URL --evalset SET`")
        recorded = self.stored.get("model")
        chosen = model or recorded
        if not chosen:
            raise ConfigError(f"{self.store.url.public}: the store records no model; give "
                              "the one its vectors were made with (--model NAME)")
        spec = DenseSpec(model=chosen, query_prefix=self.stored.get("query_prefix", ""),
                         doc_prefix=self.stored.get("doc_prefix", ""))
        self.encoder = encoder_for(spec, encoders, quiet, **encoder_options)
        ident = self.stored.get("model_identity")
        if ident and ident != self.encoder.identity:
            raise ConfigError(f"{self.store.url.public}: the store's vectors were made with "
                              f"{recorded} ({ident}); --model {chosen} is "
                              f"{self.encoder.identity}. Query with the same model")
        self.with_title = bool(self.stored.get("with_title", True))
        self.metric = self.stored.get("metric") or self.store.describe().get("metric")
        if self.metric not in ("cosine", "ip", "l2"):
            raise ConfigError(f"{self.store.url.public}: the store records no metric; "
                              "load it with searchbench db load")

    def close(self) -> None:
        """Close the store's connection (also when used as a context manager)."""
        self.store.close()

    def __enter__(self) -> DbRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def config(self) -> dict[str, Any]:
        return {"retriever": self.name, "store": self.store.describe(), "params": self.params,
                "filter": self.filter, "exact": self.exact, "metric": self.metric,
                **self.encoder.describe()}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "search": dict(self.searched)}

    # -- index: the units must be the store's ids ---------------------------------------
    def store_chunker(self, chunker: Chunker | None = None) -> Chunker | None:
        """The chunker this store's units are cut with: the recorded one, counting the
        recorded model's tokens (``chunker``, when given, must be the same)."""
        return self._bind_chunker(chunker)

    def _bind_chunker(self, chunker: Chunker | None) -> Chunker | None:
        """The store's own chunker (recorded by :func:`load_store`) when none is given (a
        hybrid then splits its other parts the same way); a different one is refused."""
        recorded = self.stored.get("chunk")
        if chunker is None and recorded:
            chunker = parse_chunker(recorded)
        if chunker is not None and hasattr(chunker, "with_tokenizer"):
            chunker = chunker.with_tokenizer(self.encoder.token_offsets, self.encoder.name)
        got = chunker.describe() if chunker is not None else None
        want = self.stored.get("chunker", got)
        if "model" in self.stored and got != want:
            raise ConfigError(f"{self.store.url.public}: the store holds units split by "
                              f"{want or 'none (whole documents)'}; asked for "
                              f"{got or 'none (whole documents)'}. Use the store's chunking "
                              "(leave --chunk out) or load another table")
        return chunker

    def _fit(self, texts: list[str]) -> None:
        units = self._require_index()
        check_ids(self.store.stored_ids(), units.ids, self.store.url.public)
        self._code = {u: i for i, u in enumerate(units.ids)}
        self._doc_of = np.repeat(np.arange(len(units.doc_ids)),
                                 np.diff(np.append(units.doc_starts, len(units))))

    # -- vectors (for sweeps: searchbench's own copy of what the store holds) -----------
    def unit_vectors(self) -> np.ndarray:
        """The indexed units embedded as :func:`load_store` loads them (same model,
        prefixes, normalisation; read from the embedding cache when it holds them)."""
        units = self._require_index()
        return _normalised(self.encoder.encode_documents(units.texts), self.metric)

    def query_vectors(self, query_texts: list[str]) -> np.ndarray:
        """Query vectors as searches send them."""
        return self._queries(query_texts)

    # -- search -------------------------------------------------------------------------
    def _queries(self, query_texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        q = _normalised(self.encoder.encode_queries(query_texts), self.metric)
        self.timings["encode_s"] = time.perf_counter() - t0
        return q

    def _ask(self, q: np.ndarray, depth: int, params: Mapping[str, Any]) -> Any:
        if self.exact:
            return self.store.exact_search(q, depth, filter=self.filter)
        return self.store.search(q, depth, params=params, filter=self.filter)

    def _topk(self, query_texts: list[str], k: int, level: str) -> tuple[np.ndarray, ...]:
        """k results per query; at doc level over chunks, k distinct documents: the store
        is asked again, deeper, for the queries whose answer was full but short of
        documents (four times as deep each round), and — where the engine returned fewer
        rows than asked (its candidate list capped the answer) — with its wider setting
        (:meth:`~searchbench.db.VectorStore.widen`), until k documents or the store is
        exhausted. What was done is recorded in ``describe()["search"]``."""
        units = self._require_index()
        n = len(units)
        q = self._queries(query_texts)
        pooled = level == "doc" and units.chunks is not None
        width = min(k, len(units.doc_ids) if pooled else n)
        codes = np.zeros((len(q), width), dtype=np.int64)
        vals = np.full((len(q), width), -np.inf)
        if not len(q) or not n:
            return codes, vals
        # exact, or every document asked for: one search deep enough; an index: start at
        # 2k and deepen (×4) only where needed (a huge LIMIT can turn a planner exact)
        per_doc = -(-n // max(len(units.doc_ids), 1))
        everything = width >= len(units.doc_ids)
        depth = min(n, (n if everything else k * per_doc + k if self.exact else 2 * k)
                    if pooled else k)
        params: dict[str, Any] = dict(self.params)
        todo = np.arange(len(q))
        hits_info: list[Any] = []
        widened: dict[str, Any] = {}
        while len(todo):
            hits = self._ask(q[todo], depth, params)
            hits_info.append(hits)
            deeper, capped = [], []
            for row, ids, dist in zip(todo, hits.ids, hits.distances, strict=True):
                c, v, short = self._row(ids, dist, width, pooled)
                codes[row, :len(c)], vals[row, :len(v)] = c, v
                if short and len(ids) >= depth and depth < n:
                    deeper.append(row)
                elif short and len(ids) < depth and not self.filter:
                    capped.append(row)
            wider = self.store.widen(params, depth) if capped and not self.exact else None
            if wider is not None:
                widened = {"params": {k_: v for k_, v in wider.items()
                                      if params.get(k_) != v},
                           "queries": widened.get("queries", 0) + len(capped)}
                params = wider
                todo = np.asarray(sorted(deeper + capped), dtype=np.int64)
            else:
                todo = np.asarray(deeper, dtype=np.int64)
            if len(deeper):
                depth = min(n, depth * 4)
        self._record(hits_info, len(q), int((vals[:, -1] == -np.inf).sum()), width,
                     widened)
        key = units.key_docs if pooled or units.chunks is None else units.key_units
        order_codes, order_vals = exact_topk(vals, codes, key, width)
        return order_codes, order_vals

    def _row(self, ids: list[str], dist: np.ndarray, width: int,
             pooled: bool) -> tuple[np.ndarray, np.ndarray, bool]:
        """Codes and scores of one answer (docs by best chunk when ``pooled``); True when
        fewer than ``width`` results were found."""
        try:
            c = np.fromiter((self._code[i] for i in ids), dtype=np.int64, count=len(ids))
        except KeyError as exc:
            raise ConfigError(f"{self.store.url.public}: the store returned id {exc.args[0]!r}"
                              ", which is not a unit of the evaluation set (was the collection"
                              " changed after it was checked?)") from None
        s = self._score(np.asarray(dist, dtype=np.float64))
        if pooled:
            docs = self._doc_of[c]
            _, first = np.unique(docs, return_index=True)
            first = np.sort(first)[:width]  # results are in rank order: first = best chunk
            c, s = docs[first], s[first]
        return c[:width], s[:width], len(c) < width

    def _score(self, d: np.ndarray) -> np.ndarray:
        return 1.0 - d if self.metric == "cosine" else -d

    def _record(self, hits: list[Any], n_queries: int, short: int, k: int,
                widened: Mapping[str, Any]) -> None:
        """What the last search did (run provenance); warns once when answers were
        short, with the count of short queries."""
        first = hits[0]
        # an engine with no ANN index (sqlite-vec) scans by design: nothing to warn about
        # (search.index_used and search.plan in the provenance say so)
        has_index = bool(type(self.store).index_kinds)
        if not self.exact and has_index and all(h.index_used is False for h in hits):
            warnings.warn(f"{self.store.url.public}: the ANN index did not answer (the engine "
                          "searched exactly; see search.plan in the run's provenance), so "
                          "this run measures exact search, not the index", SearchbenchWarning,
                          stacklevel=user_stacklevel())
        elif not self.exact and has_index and any(h.index_used is False for h in hits):
            again = sum(len(h.ids) for h in hits[1:] if h.index_used is False)
            warnings.warn(f"{self.store.url.public}: the ANN index answered the first search, "
                          f"but the engine scanned exactly when {again} queries were asked "
                          "again for more rows (a larger LIMIT changed the plan; see "
                          "search.index_used_by_round in the run's provenance)",
                          SearchbenchWarning, stacklevel=user_stacklevel())
        if short:
            how = (f" even with {widened['params']}" if widened else
                   f" ({self.store.engine} has no setting to ask for more candidates)"
                   if not self.filter and not self.exact else "")
            warnings.warn(f"{self.store.url.public} returned fewer than {k} results for "
                          f"{short} of {n_queries} queries{how} (an ANN index can cap the "
                          "rows one search returns, e.g. pgvector's hnsw.ef_search; a "
                          "filter can leave fewer rows); those queries are scored on what "
                          "was returned", SearchbenchWarning, stacklevel=user_stacklevel())
        lat = np.concatenate([h.latencies_s for h in hits if h.latencies_s is not None] or
                             [np.zeros(0)])
        used = [h.index_used for h in hits]
        self.searched = {
            "index_used": None if any(u is None for u in used) else all(used),
            "plan": first.plan, "params": first.params, "filter": self.filter,
            "exact": self.exact, "queries": n_queries, "store_calls": int(lat.size),
            "short_answers": short, "rounds": len(hits), "index_used_by_round": used,
            "widened": dict(widened) or None,
            "latency_ms": {"mean": float(lat.mean() * 1000) if lat.size else None,
                           "p95": float(np.percentile(lat, 95) * 1000) if lat.size else None}}
