"""Retriever specs and the one builder of retrievers and chunkers.

``searchbench run`` flags and experiment ``[[retrievers]]`` tables both become a
:data:`RetrieverSpec` (:class:`BM25Spec`, :class:`DenseSpec`, :class:`DbSpec` or
:class:`HybridSpec`,
validated and in canonical spelling, see :mod:`searchbench.vocab`); :func:`build_retriever`
and :func:`bind_chunker` turn it into an index, so a setting means the same thing in every
command.

**Chunk sizes and context tokens** (``tokens:N``, ``recursive:N``, ``--token-budget``,
"context tokens") count one unit per retriever, the same in ``run``, ``experiment`` and
Python:

- a retriever that involves a model (dense, or a hybrid with a dense part) counts **model
  tokens** — the word pieces of its model's tokenizer (a hybrid: of its first dense part,
  for all its parts, so the fused runs share their chunks). ``tokens:256`` is then exactly
  what the model reads, so nothing is cut off when the model's limit is >= 256;
- a lexical-only retriever (BM25) counts **whitespace-separated words**.

:func:`chunking_label` states the unit in the output (``tokens:256 (model tokens of
all-MiniLM-L6-v2)``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._util.secrets import hold, hold_url
from ..errors import ConfigError
from ..vocab import (
    CALLABLE_TYPES,
    RETRIEVER_TYPES,
    Backend,
    Bm25Method,
    Fusion,
    Metric,
    Norm,
    canonical_backend,
    canonical_bm25_method,
    canonical_fusion,
    canonical_metric,
    canonical_norm,
    canonical_stemmer,
    canonical_stopwords,
    check_finite,
    check_positive_int,
)
from ._fusion import check_weights
from ._levels import chunk_qrels
from .base import build_units
from .callable import CALLS, ON_ERROR
from .chunking import Chunker, parse_chunker, whitespace_offsets
from .encoders import encoder

__all__ = [
    "SPEC_KEYS",
    "BM25Spec",
    "CallableSpec",
    "DbSpec",
    "DenseSpec",
    "HttpSpec",
    "HybridSpec",
    "RetrieverSpec",
    "bind_chunker",
    "chunker_for",
    "chunking_label",
    "context_token_counts",
    "counting_encoder",
    "counting_spec",
    "encoder_for",
    "evalset_chunk_qrels",
    "model_options",
    "retriever_spec",
    "spec_to_dict",
    "token_unit",
    "unit_label",
]

WORDS = "whitespace-separated words"


@dataclass(frozen=True)
class BM25Spec:
    """BM25 settings (:class:`~searchbench.retrieval.BM25`)."""

    k1: float = 0.9
    b: float = 0.4
    method: Bm25Method = "lucene"
    stopwords: str | tuple[str, ...] | None = "en"
    stemmer: str | None = "english"
    with_title: bool = True

    type = "bm25"


@dataclass(frozen=True)
class DenseSpec:
    """Dense settings (:class:`~searchbench.retrieval.Dense` and its encoder)."""

    model: str = "minilm"
    metric: Metric = "cosine"
    backend: Backend = "auto"
    query_prefix: str = ""
    doc_prefix: str = ""
    with_title: bool = True

    type = "dense"


@dataclass(frozen=True)
class HttpSpec:
    """A search service over HTTP (:class:`~searchbench.retrieval.HttpRetriever`);
    ``headers`` are ``(name, value)`` pairs."""

    endpoint: str = ""
    request: str = '{"query": "{query}", "k": {k}}'
    ids: str = "$.hits[*].id"
    scores: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    auth_env: str | None = None
    auth_header: str = "Authorization"
    auth_scheme: str = "Bearer"
    concurrency: int = 4
    retries: int = 3
    timeout: float = 10.0

    type = "http"


@dataclass(frozen=True)
class DbSpec:
    """Your own vector store as a retriever (:class:`~searchbench.retrieval.stores.DbRetriever`):
    its URL, search-time ``params`` (name, value pairs), a ``filter`` in the engine's own
    syntax, the query ``model`` (default: the one recorded in the store) and ``exact``
    (search with the engine's exact scan instead of its index: the reference a cell with
    the index is compared with). A ``{chunker}`` field in the URL's store name names one
    store per chunker (:func:`~searchbench.retrieval.stores.store_url`)."""

    url: str
    params: tuple[tuple[str, Any], ...] = ()
    filter: str | None = None
    model: str | None = None
    exact: bool = False

    type = "db"


@dataclass(frozen=True)
class HybridSpec:
    """Fusion of two or more bm25/dense specs (:class:`~searchbench.retrieval.Hybrid`).

    ``weights`` is None for RRF; for weighted fusion it holds one weight per part (equal
    weights when not given)."""

    parts: tuple[BM25Spec | DenseSpec | DbSpec | HttpSpec | CallableSpec, ...]
    fusion: Fusion = "rrf"
    rrf_k: float = 60.0
    weights: tuple[float, ...] | None = None
    norm: Norm = "minmax"

    type = "hybrid"


@dataclass(frozen=True)
class CallableSpec:
    """Your own retriever (:class:`~searchbench.retrieval.callable.CallableRetriever`): a
    Python callable (``kind = "python"``) or a LangChain, LlamaIndex or Haystack object,
    made by the factory ``target = "module:name"`` called with ``kwargs``."""

    kind: str = "python"
    target: str = ""
    kwargs: tuple[tuple[str, Any], ...] = ()
    id_from: str | None = None
    batch_size: int = 16
    concurrency: int = 4
    timeout: float = 60.0
    on_error: str = "fail"
    call: str = "auto"
    query_input: str | None = None

    @property
    def type(self) -> str:
        return self.kind


RetrieverSpec = BM25Spec | DenseSpec | DbSpec | HttpSpec | CallableSpec | HybridSpec

#: The settings each retriever type takes (TOML keys = these names; ``normalization`` is
#: accepted as an old spelling of ``norm``).
SPEC_KEYS: dict[str, tuple[str, ...]] = {
    "bm25": tuple(f.name for f in fields(BM25Spec)),
    "dense": tuple(f.name for f in fields(DenseSpec)),
    "http": tuple(f.name for f in fields(HttpSpec)),
    "db": tuple(f.name for f in fields(DbSpec)),
    "hybrid": ("of", "fusion", "rrf_k", "weights", "norm"),
    **{kind: tuple(f.name for f in fields(CallableSpec) if f.name != "kind")
       for kind in CALLABLE_TYPES},
}
_KEY_ALIASES = {"normalization": "norm", "normalisation": "norm"}


def _bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} is {value!r}; expected true or false")
    return value


def _text(value: Any, key: str, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ConfigError(f"{key} is {value!r}; expected a {'' if empty else 'non-empty '}"
                          "string")
    return value


def _check_keys(kind: str, settings: Mapping[str, Any], key: Callable[[str], str]) -> dict:
    out: dict[str, Any] = {}
    allowed = SPEC_KEYS[kind]
    for name, value in settings.items():
        canon = _KEY_ALIASES.get(name, name) if kind == "hybrid" else name
        if canon not in allowed:
            raise ConfigError(f"{key(name)}: unknown key for a {kind} retriever; allowed "
                              f"keys: {', '.join(allowed)}")
        if canon in out:
            raise ConfigError(f"{key(name)}: given twice (as 'norm' and 'normalization')")
        out[canon] = value
    return out


def _reader(s: dict[str, Any], default: Any, key: Callable[[str], str]) -> Callable[..., Any]:
    """``read(name, check, *args, **kw)``: the table's ``name`` (``default``'s when absent)
    checked by ``check(value, key(name), *args, **kw)`` - each key named once."""
    def read(name: str, check: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return check(s.get(name, getattr(default, name)), key(name), *args, **kw)

    return read


def _bm25(s: dict[str, Any], key: Callable[[str], str]) -> BM25Spec:
    read = _reader(s, BM25Spec(), key)
    return BM25Spec(k1=read("k1", check_finite, minimum=0),
                    b=read("b", check_finite, minimum=0, maximum=1),
                    method=read("method", canonical_bm25_method),
                    stopwords=read("stopwords", canonical_stopwords),
                    stemmer=read("stemmer", canonical_stemmer),
                    with_title=read("with_title", _bool))


def _dense(s: dict[str, Any], key: Callable[[str], str]) -> DenseSpec:
    read = _reader(s, DenseSpec(), key)
    return DenseSpec(model=read("model", _text, empty=False),
                     metric=read("metric", canonical_metric),
                     backend=read("backend", canonical_backend),
                     query_prefix=read("query_prefix", _text),
                     doc_prefix=read("doc_prefix", _text),
                     with_title=read("with_title", _bool))


def _http(s: dict[str, Any], key: Callable[[str], str]) -> HttpSpec:
    headers = s.get("headers", {})
    if isinstance(headers, dict):
        hold(*(v for v in headers.values() if isinstance(v, str)))  # values are secrets
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise ConfigError(f"{key('headers')} is {type(headers).__name__}; expected a table "
                          "of header names to string values")
    scores, env = s.get("scores"), s.get("auth_env")
    hold_url(s.get("endpoint") if isinstance(s.get("endpoint"), str) else None)
    read = _reader(s, HttpSpec(), key)
    return HttpSpec(
        endpoint=read("endpoint", _text, empty=False),
        request=read("request", _text, empty=False),
        ids=read("ids", _text, empty=False),
        scores=None if scores is None else _text(scores, key("scores"), empty=False),
        headers=tuple(sorted(headers.items())),
        auth_env=None if env is None else _text(env, key("auth_env"), empty=False),
        auth_header=read("auth_header", _text, False),
        auth_scheme=read("auth_scheme", _text),
        concurrency=read("concurrency", check_positive_int),
        retries=read("retries", check_positive_int, minimum=0),
        timeout=read("timeout", check_finite, minimum=0, strict_min=True))


def _callable(kind: str, s: dict[str, Any], key: Callable[[str], str]) -> CallableSpec:
    d = CallableSpec()
    read = _reader(s, d, key)
    kwargs = s.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{key('kwargs')} is {kwargs!r}; expected a table of the factory's "
                          "keyword arguments")
    id_from, query_input = s.get("id_from"), s.get("query_input")
    for name, allowed in (("on_error", ON_ERROR), ("call", CALLS)):
        if s.get(name, getattr(d, name)) not in allowed:
            raise ConfigError(f"{key(name)} is {s.get(name)!r}; expected one of "
                              f"{', '.join(allowed)}")
    return CallableSpec(
        kind=kind, target=_text(s.get("target", ""), key("target"), empty=False),
        kwargs=tuple(sorted(kwargs.items())),
        id_from=None if id_from is None else _text(id_from, key("id_from"), empty=False),
        batch_size=read("batch_size", check_positive_int),
        concurrency=read("concurrency", check_positive_int),
        timeout=read("timeout", check_finite, minimum=0, strict_min=True),
        on_error=s.get("on_error", d.on_error), call=s.get("call", d.call),
        query_input=None if query_input is None else _text(query_input, key("query_input"),
                                                           empty=False))


def _db(s: dict[str, Any], key: Callable[[str], str]) -> DbSpec:
    # lazy: loads db, knn on first use
    from ..db import ENGINES, check_params, engine_class, parse_store_url

    url = _text(s.get("url", ""), key("url"), empty=False)
    scheme = parse_store_url(url).scheme
    if scheme not in ENGINES:
        raise ConfigError(f"{key('url')}: unknown store engine {scheme!r}; expected one of "
                          f"{', '.join(sorted(ENGINES))}")
    given = s.get("params", {})
    if isinstance(given, list | tuple):  # ["name=value", ...] (the CLI's --db-param)
        pairs = [str(p).partition("=") for p in given]
        if any(not sep or not n.strip() for n, sep, _ in pairs):
            raise ConfigError(f"{key('params')} is {list(given)!r}; expected NAME=VALUE items")
        given = {n.strip(): v.strip() for n, _, v in pairs}
    if not isinstance(given, Mapping):
        raise ConfigError(f"{key('params')} is {given!r}; expected a table of search "
                          "parameters, e.g. {{ \"hnsw.ef_search\" = 40 }}")
    cls = engine_class(scheme)
    checked = check_params(scheme, cls.params, given, "search")
    flt, model = s.get("filter"), s.get("model")
    exact = _bool(s.get("exact", False), key("exact"))
    if exact and checked:
        raise ConfigError(f"{key('exact')}: an exact search uses no index, so search "
                          f"parameters ({', '.join(checked)}) do not apply; drop one of them")
    return DbSpec(url=url, params=tuple(sorted(checked.items())),
                  filter=None if flt is None else _text(flt, key("filter")),
                  model=None if model is None else _text(model, key("model"), empty=False),
                  exact=exact)


def _hybrid(s: dict[str, Any], parts: Sequence[RetrieverSpec],
            key: Callable[[str], str]) -> HybridSpec:
    leaves = tuple(p for p in parts if not isinstance(p, HybridSpec))
    if len(parts) < 2 or len(leaves) < len(parts):
        raise ConfigError(f"{key('of')}: a hybrid fuses at least 2 retrievers (not hybrids), "
                          f"got {len(parts)}")
    read = _reader(s, HybridSpec(parts=leaves), key)
    fusion = read("fusion", canonical_fusion)
    weights = s.get("weights")
    if weights is not None:
        if not isinstance(weights, list | tuple) or len(weights) != len(parts):
            raise ConfigError(f"{key('weights')} is {weights!r}; expected {len(parts)} finite "
                              "numbers, one per fused retriever")
        weights = tuple(check_weights(weights, len(parts), key("weights"),
                                      item_key=lambda i: key(f"weights[{i}]")))
    if fusion == "weighted" and weights is None:
        weights = tuple(1.0 / len(parts) for _ in parts)
    return HybridSpec(
        parts=leaves,
        fusion=fusion,
        rrf_k=read("rrf_k", check_finite, minimum=0),
        weights=weights if fusion == "weighted" else None,
        norm=read("norm", canonical_norm))


def retriever_spec(kind: str, settings: Mapping[str, Any], *,
                   parts: Sequence[RetrieverSpec] = (),
                   key: Callable[[str], str] = str) -> RetrieverSpec:
    """Validate ``settings`` of a ``kind`` retriever (a TOML table without ``name``/``type``
    /``of``, or the ``run`` command's flags) into a spec in canonical spelling.

    ``parts`` are a hybrid's fused specs; ``key(setting)`` names a setting in messages
    (``retrievers.bm25.k1`` for a config, ``--k1`` for the CLI). Every problem raises one
    :class:`ConfigError` naming the key, the value found and the valid values."""
    if kind not in RETRIEVER_TYPES:
        raise ConfigError(f"{key('type')} is {kind!r}; expected one of "
                          f"{', '.join(RETRIEVER_TYPES)}")
    checked = _check_keys(kind, settings, key)
    checked.pop("of", None)
    if kind == "bm25":
        return _bm25(checked, key)
    if kind == "dense":
        return _dense(checked, key)
    if kind == "http":
        return _http(checked, key)
    if kind == "db":
        return _db(checked, key)
    if kind in CALLABLE_TYPES:
        return _callable(kind, checked, key)
    return _hybrid(checked, parts, key)


def model_options(model: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without the endpoint settings unless ``model`` is an ``openai:`` one."""
    kw = {k: v for k, v in options.items() if v is not None}
    if not (model or "").startswith("openai:"):
        for name in ("endpoint", "api_key_env", "retries"):
            kw.pop(name, None)
    return kw


def encoder_for(spec: DenseSpec, encoders: dict[Any, Any], quiet: bool | None = None,
                **options: Any) -> Any:
    """The encoder of ``spec`` from the ``encoders`` cache (made and cached on first use);
    ``options`` go to :func:`~searchbench.retrieval.encoder` (``cache`` …)."""
    key = (spec.model, spec.query_prefix, spec.doc_prefix)
    if key not in encoders:
        kw = model_options(spec.model, options)
        encoders[key] = encoder(spec.model, query_prefix=spec.query_prefix,
                                doc_prefix=spec.doc_prefix, quiet=quiet, **kw)
    return encoders[key]


def counting_encoder(retriever: Any) -> Any:
    """The encoder whose tokenizer counts chunk sizes and context tokens for ``retriever``:
    its own, or a hybrid's first dense part's; None for lexical-only retrievers."""
    enc = getattr(retriever, "encoder", None)
    if enc is not None:
        return enc
    for part in getattr(retriever, "retrievers", ()):
        if getattr(part, "encoder", None) is not None:
            return part.encoder
    return None


def counting_spec(spec: RetrieverSpec | None) -> DenseSpec | None:
    """The spec whose model counts tokens for ``spec`` (the spec-level twin of
    :func:`counting_encoder`): a dense spec itself, a hybrid's first dense part, else None
    (words)."""
    if isinstance(spec, DenseSpec):
        return spec
    if isinstance(spec, HybridSpec):
        return next((p for p in spec.parts if isinstance(p, DenseSpec)), None)
    return None


def token_unit(retriever: Any) -> str:
    """What a token is for ``retriever`` (see the module docstring)."""
    return unit_label(counting_encoder(retriever))


def unit_label(encoder: Any) -> str:
    """``model tokens of NAME`` for an encoder, the word unit for None."""
    return f"model tokens of {encoder.name}" if encoder is not None else WORDS


def bind_chunker(chunk: str | Chunker | None, retriever: Any) -> Chunker | None:
    """The chunker ``chunk`` (a spec such as ``tokens:256:32``, or a chunker) counting in
    ``retriever``'s token unit (see the module docstring)."""
    return chunker_for(chunk, counting_encoder(retriever))


def chunker_for(chunk: str | Chunker | None, encoder: Any) -> Chunker | None:
    """The chunker ``chunk`` counting ``encoder``'s tokens (None: whitespace words)."""
    chunker = parse_chunker(chunk) if chunk is None or isinstance(chunk, str) else chunk
    if chunker is None or not hasattr(chunker, "with_tokenizer"):
        return chunker
    if encoder is None:
        return chunker.with_tokenizer(whitespace_offsets, "words")
    return chunker.with_tokenizer(encoder.token_offsets, encoder.name)


def evalset_chunk_qrels(evalset: Any, chunk: str | Chunker, encoder: Any = None,
                        quiet: bool | None = None) -> Any:
    """The chunk-level judgments of ``evalset`` for the chunker ``chunk`` counting
    ``encoder``'s tokens (None: whitespace words): exactly the chunk ids a retriever
    indexed with :func:`chunker_for` ``(chunk, encoder)`` returns at ``level="chunk"``
    (``searchbench run --level chunk --chunk SPEC [--model M]``), judged by
    :func:`~searchbench.retrieval._levels.chunk_qrels`. A run made earlier can then be
    scored after the fact (``searchbench evalset chunk-qrels``)."""
    chunker = chunker_for(chunk, encoder)
    if chunker is None:
        raise ConfigError(f"chunker {chunk!r}: chunk-level judgments need a chunker such as "
                          "tokens:256:32, sentences:5 or recursive:512")
    units = build_units(evalset.corpus, chunker, with_title=True, quiet=quiet)
    return chunk_qrels(units.chunks or [], evalset.qrels, evalset.evidence)


def chunking_label(chunk: str | None, retriever: Any = None, *,
                   encoder: Any = None) -> str:
    """``tokens:256 (model tokens of all-MiniLM-L6-v2)``, ``none (whole documents)`` …
    (the unit of ``retriever``, or of ``encoder`` when no retriever is given)."""
    if not chunk or chunk == "none":
        return "none (whole documents)"
    if chunk.startswith("sentences"):
        return f"{chunk} (sentences)"
    enc = counting_encoder(retriever) if retriever is not None else encoder
    return f"{chunk} ({unit_label(enc)})"


def context_token_counts(texts: Mapping[str, str], ids: Sequence[str] | np.ndarray,
                         retriever: Any = None, *, encoder: Any = None) -> dict[str, int]:
    """Tokens of the context text of every id in ``ids`` (``texts`` as
    :meth:`Retriever.context_texts` gives them), counted in ``retriever``'s token unit (or
    ``encoder``'s) — the one way context tokens and token budgets are counted. A model's
    tokens are counted in one batch (``token_lengths``: the length of ``token_offsets``,
    never truncated)."""
    enc = counting_encoder(retriever) if retriever is not None else encoder
    if enc is None:
        return {i: len(whitespace_offsets(texts[i])) for i in ids}
    keys = list(ids)
    return dict(zip(keys, enc.token_lengths([texts[i] for i in keys]), strict=True))


def spec_to_dict(spec: RetrieverSpec) -> dict[str, Any]:
    """A JSON-able description (hybrid parts nested)."""
    out: dict[str, Any] = {"type": spec.type}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if f.name == "parts":
            value = [spec_to_dict(p) for p in value]
        elif isinstance(spec, DbSpec) and f.name in ("url", "params"):
            # lazy: loads db, knn on first use
            from ..db import parse_store_url  # the password never leaves the spec

            value = parse_store_url(value).public if f.name == "url" else dict(value)
        elif isinstance(spec, CallableSpec) and f.name == "kwargs":
            value = {n: "***" if _SECRET_NAME.search(n) else v for n, v in value}
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|credential", re.IGNORECASE)
