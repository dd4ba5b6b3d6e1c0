"""The one retrieval pipeline (ARCHITECTURE §7): index → search → prepare the run →
judgments at the run's level → score with judged coverage → context tokens and budget.

``searchbench run``, ``searchbench experiment run`` and Python users all call it::

    import searchbench as sb
    from searchbench.retrieval import DenseSpec, Pipeline

    with Pipeline(sb.load_evalset("pyref")) as pipe:
        res = pipe.run(DenseSpec(model="minilm"), chunk="tokens:128:16", level="chunk")
        print(res.scores, res.coverage)

**Units are part of the identity of a run.** A spec and a chunker name (``tokens:128``)
become a *bound* chunker — the chunker counting in the unit the retriever's units are
actually cut in (:meth:`Pipeline.chunker`): the model tokens of a retriever with a model,
whitespace words for BM25, and for a vector store (``db``) the chunker and model recorded
in the store (a store decides its own chunking; another chunker is refused). Indexes,
runs and chunk-level judgments are cached by that bound chunker, and the judgments of a
chunk-level run are cut from the very units the run ranks, so a run and its judgments
cannot disagree on what a chunk is.

Every score goes through :class:`~searchbench.measures.CoverageProbe`: the result carries
the mean Judged@k (:class:`~searchbench.measures.Coverage`), a run almost entirely
unjudged raises the same warning as ``searchbench eval``, and callers print
:meth:`~searchbench.measures.Coverage.flag` beside a score resting on mostly unjudged
results.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..data import Qrels, Run
from ..errors import ConfigError
from ..measures import Scorer
from ..vocab import canonical_unanswerable
from ._fusion import Hybrid, sweep_weights
from ._levels import budget_run, chunk_qrels, context_tokens
from .base import Retriever
from .build import build_retriever
from .chunking import Chunker, parse_chunker
from .spec import (
    WORDS,
    DbSpec,
    HybridSpec,
    RetrieverSpec,
    chunker_for,
    context_token_counts,
    counting_encoder,
    counting_spec,
    encoder_for,
    unit_label,
)

__all__ = ["Pipeline", "PipelineResult", "chunking_of", "run_pipeline", "summary_measures"]

Log = Callable[[str], None]


def summary_measures(k: int) -> list[str]:
    """The measures of a run summary, at cutoffs the run reaches: nDCG@10 and R@100, cut to
    ``k`` when the run has fewer results per query (``k=10``: nDCG@10, R@10)."""
    return [f"nDCG@{min(10, k)}", f"R@{min(100, k)}"]


def chunking_of(chunker: Chunker | None) -> str:
    """What the units of an index are, from the bound chunker itself:
    ``tokens:128:16 (model tokens of all-MiniLM-L6-v2)``, ``none (whole documents)``."""
    if chunker is None:
        return "none (whole documents)"
    d = chunker.describe()
    kind = d.get("chunker")
    if kind == "sentences":
        return f"sentences:{d['n']}:{d['overlap']} (sentences)"
    spec = (f"tokens:{d['size']}:{d['overlap']}" if kind == "tokens"
            else f"recursive:{d['max_tokens']}" if kind == "recursive" else str(kind))
    unit = d.get("tokenizer", "words")
    return f"{spec} ({WORDS if unit == 'words' else f'model tokens of {unit}'})"


def _chunk_key(chunker: Chunker | None) -> str:
    """The identity of a bound chunker (kind, sizes and unit) for caches."""
    return "none" if chunker is None else json.dumps(chunker.describe(), sort_keys=True)


@dataclass
class PipelineResult:
    """One pipeline run: the run as scored, its judgments, scores and judged coverage.

    ``run`` is prepared as the set asks (and cut to the token budget when one was given);
    its ``metadata`` holds ``context_tokens``, ``token_unit`` and ``judged``. ``qrels``
    are the judgments at the run's level (chunk level: cut from the run's own units).
    ``result`` is None when the evaluation set has no judgments."""

    run: Run
    qrels: Qrels
    result: Any
    coverage: Any
    context: dict[str, Any]
    token_counts: dict[str, int]
    token_unit: str
    chunking: str
    retriever: Retriever
    level: str
    k: int
    query_ids: list[str] = field(default_factory=list)
    eval_s: float = 0.0
    scored: Any = None  # ScoredQueries: no-relevant and no_answer counts (None: no qrels)
    no_answer: list[str] = field(default_factory=list)

    @property
    def scores(self) -> dict[str, float]:
        """Mean of every measure asked for ({} without judgments)."""
        return dict(self.result.mean) if self.result is not None else {}

    def context_at(self, k: int) -> float:
        """Mean context tokens of the top ``k`` results per query."""
        return float(context_tokens(self.run, self.token_counts, k, self.query_ids)["mean"])

    def flag(self) -> str:
        """The low-coverage words for a printed score ("" when judged enough)."""
        return self.coverage.flag() if self.coverage is not None else ""


class Pipeline:
    """Retrieval and scoring on one evaluation set, each index and run computed once.

    ``queries``: the queries searched (default: the judged ones when the set excludes
    unjudged queries, else all); ``encoders`` a cache shared with other pipelines;
    ``encoder_options`` go to :func:`~searchbench.retrieval.encoder` (``cache``,
    ``endpoint`` …); ``log`` receives progress lines (indexed, searched). A spec may be
    a :data:`~searchbench.retrieval.spec.RetrieverSpec` or an unindexed
    :class:`~searchbench.retrieval.Retriever` of your own."""

    def __init__(self, evalset: Any, *, queries: Any = None, quiet: bool | None = None,
                 log: Log | None = None, encoders: dict[Any, Any] | None = None,
                 missing_warnings: bool = True, unanswerable: str = "skip",
                 **encoder_options: Any) -> None:
        self.evalset = evalset
        self.unanswerable = canonical_unanswerable(unanswerable)
        self.no_answer = list(evalset.queries.no_answer_ids())
        self.queries = queries if queries is not None else (
            evalset.judged_queries if evalset.exclude_unjudged else evalset.queries)
        self.quiet, self.say = quiet, log or (lambda _msg: None)
        self.encoders = encoders if encoders is not None else {}
        self.options = {k: v for k, v in encoder_options.items() if v is not None}
        self.missing_warnings = missing_warnings
        self._stores: dict[Any, Any] = {}  # DbSpec -> DbRetriever (open)
        self._indexes: dict[tuple[Any, str], Retriever] = {}
        self._runs: dict[tuple[Any, str, str, int], Run] = {}
        self._qrels: dict[str, Qrels] = {}

    # -- life cycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the vector stores opened for ``db`` specs."""
        for r in self._stores.values():
            r.close()
        self._stores.clear()

    def reopen(self, spec: DbSpec) -> None:
        """Close the store of ``spec`` so the next use opens it again (after loading it:
        its recorded provenance changed)."""
        r = self._stores.pop(spec, None)
        if r is not None:
            r.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- units --------------------------------------------------------------------------
    def store(self, spec: DbSpec) -> Any:
        """The (unindexed) :class:`~searchbench.retrieval.stores.DbRetriever` of ``spec``,
        opened once: its recorded chunker and model decide the units of every cell using
        it."""
        if spec not in self._stores:
            self._stores[spec] = build_retriever(spec, encoders=self.encoders, quiet=self.quiet,
                                                 **self.options)
        return self._stores[spec]

    def chunker(self, spec: RetrieverSpec | Retriever, chunk: str | Chunker | None
                ) -> Chunker | None:
        """The chunker ``chunk`` bound to the unit ``spec``'s units are cut in (see the
        module docstring); a store whose chunking differs from ``chunk`` is refused."""
        if isinstance(spec, Retriever):
            return chunker_for(chunk, counting_encoder(spec))
        stored = next((p for p in _leaves(spec) if isinstance(p, DbSpec)), None)
        if stored is not None:
            given = parse_chunker(chunk) if chunk is None or isinstance(chunk, str) else chunk
            return self.store(stored).store_chunker(given)
        unit = counting_spec(spec)
        enc = None if unit is None else encoder_for(unit, self.encoders, self.quiet,
                                                    **self.options)
        return chunker_for(chunk, enc)

    def index(self, spec: RetrieverSpec | Retriever, chunk: str | Chunker | None = None,
              *, name: str | None = None) -> Retriever:
        """``spec``'s retriever indexed over the corpus split by :meth:`chunker`, built
        once per (spec, bound chunker); a hybrid adopts its parts' shared indexes."""
        bound = self.chunker(spec, chunk)
        if isinstance(spec, HybridSpec):
            parts = [self._base(p, bound, None) for p in spec.parts]
            return Hybrid(parts, fusion=spec.fusion, rrf_k=spec.rrf_k, weights=spec.weights,
                          norm=spec.norm).adopt()
        return self._base(spec, bound, name)

    def _base(self, spec: Any, bound: Chunker | None, name: str | None) -> Retriever:
        key = (_cache_key(spec), _chunk_key(bound))
        if key not in self._indexes:
            if isinstance(spec, Retriever):
                r = spec
            elif isinstance(spec, DbSpec):
                r = self.store(spec)
            else:
                r = build_retriever(spec, encoders=self.encoders, quiet=self.quiet,
                                    **self.options)
            r.index(self.evalset.corpus, chunker=bound)
            self.say(f"  indexed {name or _label(spec)} [chunks: {chunking_of(r.chunker)}] "
                     f"in {r.timings.get('index_s', 0.0):.1f} s")
            self._indexes[key] = r
        return self._indexes[key]

    # -- search -------------------------------------------------------------------------
    def search(self, spec: RetrieverSpec | Retriever, chunk: str | Chunker | None = None,
               level: str = "doc", k: int = 100, *, name: str | None = None) -> Run:
        """The run of ``spec`` (``k`` results per query at ``level``), computed once; a
        hybrid fuses its parts' cached runs (:meth:`Hybrid.search` with ``part_runs``)."""
        r = self.index(spec, chunk, name=name)
        if isinstance(spec, HybridSpec):
            bound = r.chunker
            depth = r.part_depth(k)  # type: ignore[attr-defined]  # a Hybrid
            runs = [self._run(p, bound, level, depth, None) for p in spec.parts]
            return r.search(self.queries, k, level, part_runs=runs)  # type: ignore[call-arg]
        return self._run(spec, r.chunker, level, k, name)

    def _run(self, spec: Any, bound: Chunker | None, level: str, k: int,
             name: str | None) -> Run:
        key = (_cache_key(spec), _chunk_key(bound), level, k)
        if key not in self._runs:
            r = self._base(spec, bound, name)
            t0 = time.perf_counter()
            self._runs[key] = r.search(self.queries, k=k, level=level)
            self.say(f"  searched {name or _label(spec)} [{chunking_of(bound)}, {level}] "
                     f"in {time.perf_counter() - t0:.1f} s")
        return self._runs[key]

    # -- judgments and scores -------------------------------------------------------------
    def qrels(self, retriever: Retriever, level: str) -> Qrels:
        """The judgments at ``level`` for ``retriever``'s units: chunk level = the
        evidence overlap of exactly the chunks it indexed (cached per bound chunker)."""
        units = retriever._require_index()
        if level != "chunk" or units.chunks is None:
            return self.evalset.qrels
        key = _chunk_key(retriever.chunker)
        if key not in self._qrels:
            self._qrels[key] = chunk_qrels(units.chunks, self.evalset.qrels,
                                           self.evalset.evidence)
        return self._qrels[key]

    def score(self, run: Run, qrels: Qrels, measures: Sequence[str],
              name: str | None = None) -> tuple[Any, Any]:
        """``(EvalResult, Coverage)`` of ``run`` through the one coverage step
        (:class:`~searchbench.measures.Scorer`): warns when it is unjudged. Queries
        the set marks ``no_answer`` are left out under ``unanswerable="skip"``."""
        result, coverage, _ = self._score(run, qrels, measures, name)
        return result, coverage

    def _score(self, run: Run, qrels: Qrels, measures: Sequence[str],
               name: str | None) -> tuple[Any, Any, Any]:
        done = Scorer(qrels, measures, no_answer=self.no_answer,
                      unanswerable=self.unanswerable,
                      missing_warnings=self.missing_warnings).score(run, name)
        return done.result, done.coverage, done.scored

    def tune_weights(self, spec: HybridSpec, chunk: str | Chunker | None, level: str,
                     k: int, measure: str = "nDCG@10") -> tuple[HybridSpec, Any]:
        """A weighted hybrid of two parts with BM25's weight chosen on half the judged
        queries (:func:`~searchbench.retrieval.sweep_weights`); ``(spec with the weights,
        the sweep)``. The parts' runs are the ones the fused run uses."""
        if not isinstance(spec, HybridSpec) or spec.fusion != "weighted":
            raise ConfigError("--tune-weight needs --retriever hybrid --fusion weighted")
        h = self.index(spec, chunk)
        runs = [self._run(p, h.chunker, level, h.part_depth(k), None)  # type: ignore[attr-defined]
                for p in spec.parts]
        sweep = sweep_weights(runs, self.qrels(h, level), measure, norm=spec.norm)
        return replace(spec, weights=(sweep.weight, 1 - sweep.weight)), sweep

    # -- the whole pipeline ---------------------------------------------------------------
    def run(self, spec: RetrieverSpec | Retriever, chunk: str | Chunker | None = None,
            level: str = "doc", k: int = 100, *, token_budget: int | None = None,
            measures: Sequence[str] | None = None, name: str | None = None
            ) -> PipelineResult:
        """Index, search, prepare, judge, score and count context tokens (see the module
        docstring); ``measures`` default to :func:`summary_measures` of ``k``."""
        r = self.index(spec, chunk, name=name)
        run = self.evalset.prepare_run(self.search(spec, chunk, level, k, name=name))
        counts = self.token_counts(r, run, level)
        ids = list(self.queries.ids)
        context = context_tokens(run, counts, k, ids)
        if token_budget:
            run = budget_run(run, counts, token_budget)
            context["within_budget"] = context_tokens(run, counts, k, ids)
        qrels = self.qrels(r, level)
        result = coverage = scored = None
        t0 = time.perf_counter()
        if len(self.evalset.qrels):
            result, coverage, scored = self._score(run, qrels, measures or summary_measures(k),
                                                   name or run.name)
        unit = unit_label(counting_encoder(r))
        run.metadata.update(context_tokens=context, token_unit=unit,
                            chunking=chunking_of(r.chunker))
        if coverage is not None:
            run.metadata["judged"] = coverage.to_dict()
        return PipelineResult(run, qrels, result, coverage, context, counts, unit,
                              chunking_of(r.chunker), r, level, k, ids,
                              time.perf_counter() - t0, scored, self.no_answer)

    def token_counts(self, retriever: Retriever, run: Run, level: str) -> dict[str, int]:
        """Tokens of every result of ``run``, in the retriever's token unit."""
        used = run.doc_vocab[np.unique(run.doc_codes)].astype(str).tolist()
        return context_token_counts(retriever.context_texts(level), used, retriever)


def run_pipeline(evalset: Any, spec: RetrieverSpec | Retriever, chunk: str | None = None,
                 level: str = "doc", k: int = 100, **options: Any) -> PipelineResult:
    """One :meth:`Pipeline.run` on ``evalset`` (an :class:`~searchbench.EvalSet` or a spec
    for :func:`~searchbench.load_evalset`); ``token_budget`` and ``measures`` go to the
    run, other options to :class:`Pipeline`."""
    if isinstance(evalset, str):
        from ..collections import load_evalset  # lazy: loads data, collections on first use

        evalset = load_evalset(evalset)
    run_opts = {k: options.pop(k) for k in ("token_budget", "measures", "name") if k in options}
    with Pipeline(evalset, **options) as pipe:
        return pipe.run(spec, chunk, level, k, **run_opts)


def _leaves(spec: Any) -> tuple[Any, ...]:
    return tuple(spec.parts) if isinstance(spec, HybridSpec) else (spec,)


def _cache_key(spec: Any) -> Any:
    return ("object", id(spec)) if isinstance(spec, Retriever) else spec


def _label(spec: Any) -> str:
    if isinstance(spec, Retriever):
        return spec.name
    model = getattr(spec, "model", None)
    return f"{spec.type} ({model})" if model else spec.type
