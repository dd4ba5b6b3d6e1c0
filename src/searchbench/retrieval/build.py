"""Building a retriever from its spec (:func:`build_retriever`): the one place that knows every
retriever class, above :mod:`.spec` (the specs themselves) and the retriever modules."""

from __future__ import annotations

from typing import Any

from ._fusion import Hybrid
from ._lexical import BM25
from .callable import CallableRetriever, load_target
from .dense import Dense
from .http_search import HttpRetriever
from .spec import (
    BM25Spec,
    CallableSpec,
    DbSpec,
    DenseSpec,
    HttpSpec,
    RetrieverSpec,
    encoder_for,
    model_options,
)
from .stores import DbRetriever

__all__ = ["build_retriever"]


def build_retriever(spec: RetrieverSpec, *, encoders: dict[Any, Any] | None = None,
                    quiet: bool | None = None, **encoder_options: Any) -> Any:
    """The (unindexed) retriever ``spec`` describes.

    ``encoders`` is a cache shared between calls (one encoder per model and prefixes);
    ``encoder_options`` go to :func:`~searchbench.retrieval.encoder` (``cache``,
    ``endpoint``, ``api_key_env``, ``retries`` …)."""
    if isinstance(spec, BM25Spec):
        bm25 = BM25(k1=spec.k1, b=spec.b, method=spec.method, stopwords=spec.stopwords,
                    stemmer=spec.stemmer, with_title=spec.with_title)
        bm25.quiet = quiet
        return bm25
    if isinstance(spec, HttpSpec):
        return HttpRetriever(spec.endpoint, spec.request, spec.ids, spec.scores,
                             headers=dict(spec.headers), auth_env=spec.auth_env,
                             auth_header=spec.auth_header, auth_scheme=spec.auth_scheme,
                             concurrency=spec.concurrency, retries=spec.retries,
                             timeout=spec.timeout)
    if isinstance(spec, CallableSpec):
        return CallableRetriever(load_target(spec.target, dict(spec.kwargs)), kind=spec.kind,
                                 target=spec.target, id_from=spec.id_from,
                                 batch_size=spec.batch_size, concurrency=spec.concurrency,
                                 timeout=spec.timeout, on_error=spec.on_error, call=spec.call,
                                 query_input=spec.query_input)
    if isinstance(spec, DbSpec):
        return DbRetriever(spec.url, params=dict(spec.params), filter=spec.filter,
                           model=spec.model, exact=spec.exact, quiet=quiet,
                           encoders=encoders, **model_options(spec.model, encoder_options))
    if isinstance(spec, DenseSpec):
        enc = encoder_for(spec, encoders if encoders is not None else {}, quiet, **encoder_options)
        dense = Dense(enc, metric=spec.metric, backend=spec.backend,
                      with_title=spec.with_title)
        dense.quiet = quiet
        return dense
    cache = encoders if encoders is not None else {}
    parts = [build_retriever(p, encoders=cache, quiet=quiet, **encoder_options)
             for p in spec.parts]
    return Hybrid(parts, fusion=spec.fusion, rrf_k=spec.rrf_k, weights=spec.weights,
                  norm=spec.norm)
