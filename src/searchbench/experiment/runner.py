"""Run an experiment's grid, sharing work between cells, and resume after interruption.

Per evaluation set and chunker, each base retriever (BM25, dense per model) is indexed
once — one BM25 index and one embedding pass per model × chunking — and searched once per
level; a hybrid cell fuses its components' runs. Every retriever of an experiment sees the
same chunks (token windows count whitespace-separated words), so runs fuse and chunk-level
judgments agree. A cell is stored when it is complete (run file written atomically, then
one transaction); cells already in the store are skipped, so running again after a crash
or ``kill -9`` redoes only unfinished cells (and cells stored without a measure the config
now asks for).
"""

from __future__ import annotations

import hashlib
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.evalset import EvalSet
from ..data.qrels import Qrels
from ..data.run import Run
from ..retrieval.fusion import fuse
from ..retrieval.levels import chunk_qrels, context_tokens
from .config import Cell, ExperimentConfig, RetrieverSpec, resolve_evalset, resolve_model
from .provenance import run_provenance
from .store import CellRecord, ResultsStore

__all__ = ["CONTEXT_CUTOFFS", "CURVE_DEPTH", "RunSummary", "default_store", "run_experiment"]

CURVE_DEPTH = 100
CONTEXT_CUTOFFS = (1, 3, 5, 10, 20)
Log = Callable[[str], None]


@dataclass
class RunSummary:
    """What :func:`run_experiment` did."""

    experiment_id: int
    store_path: Path
    computed: list[str] = field(default_factory=list)  # "level system" labels
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0


def default_store(cfg: ExperimentConfig) -> Path:
    """``my-exp.sqlite`` next to ``my-exp.toml`` (or in the working folder)."""
    if cfg.path is not None:
        return cfg.path.with_suffix(".sqlite")
    return Path.cwd() / f"{cfg.name}.sqlite"


def run_experiment(cfg: ExperimentConfig, store: str | Path | None = None, *,
                   quiet: bool | None = None, log: Log | None = None) -> RunSummary:
    """Run every unfinished cell of ``cfg`` and store it; returns what was done."""
    t0 = time.perf_counter()
    say = log or (lambda _msg: None)
    path = Path(store) if store else default_store(cfg)
    with ResultsStore(path) as db:
        sets = {spec: _load(spec, cfg) for spec in cfg.evalsets}
        prov = {**run_provenance(cfg.base_dir), "evalsets": {
            spec: _evalset_provenance(es) for spec, es in sets.items()}}
        exp_id = db.upsert_experiment(cfg.name, str(cfg.path) if cfg.path else None,
                                      cfg.text, cfg.to_dict(), prov)
        summary = RunSummary(exp_id, path)
        wanted = {*cfg.measures, "RR"}
        done = {k for k, ms in db.stored_measures(exp_id).items() if wanted <= ms}
        for spec, es in sets.items():
            work = _Workspace(cfg, es, spec, say, quiet)
            work.run(db, exp_id, done, summary)
    summary.seconds = time.perf_counter() - t0
    return summary


def _load(spec: str, cfg: ExperimentConfig) -> EvalSet:
    from ..collections.registry import load_evalset

    es = load_evalset(resolve_evalset(spec, cfg.base_dir))
    es.warn_unjudged()
    return es


def _evalset_provenance(es: EvalSet) -> dict[str, Any]:
    from ..collections.check import check_evalset

    report = check_evalset(es)
    return {"summary": report.summary,
            "errors": [f.__dict__ for f in report.errors],
            "warnings": [f.__dict__ for f in report.warnings]}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


class _Workspace:
    """Indexes, runs and judgments of one evaluation set, shared between its cells."""

    def __init__(self, cfg: ExperimentConfig, es: EvalSet, spec: str, say: Log,
                 quiet: bool | None) -> None:
        self.cfg, self.es, self.spec, self.say, self.quiet = cfg, es, spec, say, quiet
        self.hash = es.content_hash()
        self.queries = es.judged_queries
        self.query_ids = self.queries.ids
        self.encoders: dict[tuple[str, str, str], Any] = {}
        self.indexes: dict[tuple[str, str], Any] = {}
        self.runs: dict[tuple[str, str, str], Run] = {}
        self.qrels: dict[tuple[str, str], Qrels] = {}

    # -- the grid -----------------------------------------------------------------------------
    def run(self, db: ResultsStore, exp_id: int, done: set[str], summary: RunSummary) -> None:
        from .._util import progress

        cells = [c for c in self.cfg.cells() if c.evalset == self.spec]
        todo = []
        for cell in cells:
            label = f"{cell.level} {cell.system}"
            if self.key(cell) in done:
                summary.skipped.append(label)
            else:
                todo.append(cell)
        if not todo:
            self.say(f"{self.es.name}: all {len(cells)} cells already in the store")
            return
        self.say(f"{self.es.name}: {len(todo)} of {len(cells)} cells to run "
                 f"({len(cells) - len(todo)} already in the store)")
        cfg = self.cfg
        todo.sort(key=lambda c: (cfg.chunkers.index(c.chunker), cfg.levels.index(c.level)))
        with progress(len(todo), f"cells ({self.es.name})", self.quiet) as advance:
            for cell in todo:
                rec = self.compute(cell)
                db.save_cell(exp_id, rec, {q.id: q.text for q in self.queries})
                done.add(rec.cell_key)
                summary.computed.append(f"{cell.level} {cell.system}")
                self.say(f"  done {cell.level:5} {cell.system}  "
                         f"{self.cfg.measures[0]}={_mean(rec, self.cfg.measures[0]):.4f}")
                advance(1)

    def key(self, cell: Cell) -> str:
        return cell.key(self.hash, self.cfg.components(cell.retriever))

    # -- one cell -----------------------------------------------------------------------------
    def compute(self, cell: Cell) -> CellRecord:
        spec = cell.retriever
        if spec.type == "hybrid":
            run, timings, described = self.hybrid(cell)
        else:
            run = self.search(spec, cell.chunker, cell.level)
            timings = dict(run.metadata.get("timings", {}))
            described = {k: v for k, v in run.metadata.items() if k != "timings"}
        run = self.es.prepare_run(run)
        t0 = time.perf_counter()
        scores, extras = self.evaluate(run, cell)
        timings["eval_s"] = time.perf_counter() - t0
        n = max(len(self.query_ids), 1)
        search_s = timings.get("search_s", 0.0) + timings.get("fuse_s", 0.0)
        timings.update(latency_ms=1000 * search_s / n,
                       qps=n / search_s if search_s > 0 else float("inf"))
        path, digest = self.write_run(run, cell)
        return CellRecord(
            cell_key=self.key(cell), system=cell.system, evalset=self.es.name,
            evalset_hash=self.hash, level=cell.level, chunker=cell.chunker,
            retriever=spec.name, config=cell.to_dict(self.cfg.components(spec)),
            run_path=str(path), run_hash=digest, timings=timings, extras=extras,
            provenance={"retriever": described, "evalset_hash": self.hash,
                        "evalset": self.spec}, scores=scores)

    def hybrid(self, cell: Cell) -> tuple[Run, dict[str, float], dict[str, Any]]:
        s = cell.retriever.settings
        parts = self.cfg.components(cell.retriever)
        runs = [self.search(p, cell.chunker, cell.level) for p in parts]
        t0 = time.perf_counter()
        run = fuse(runs, s.get("fusion", "rrf"), rrf_k=s.get("rrf_k", 60),
                   weights=s.get("weights"), norm=s.get("normalization", "minmax"),
                   name=cell.retriever.name).truncate(cell.k)
        timings = {"fuse_s": time.perf_counter() - t0}
        for key in ("index_s", "encode_s", "search_s"):
            timings[key] = sum(r.metadata.get("timings", {}).get(key, 0.0) for r in runs)
        described = {"retriever": "hybrid", **s,
                     "components": [{k: v for k, v in r.metadata.items() if k != "timings"}
                                    for r in runs]}
        return run, timings, described

    def search(self, spec: RetrieverSpec, chunker: str, level: str) -> Run:
        """The run of a base retriever at (chunker, level), computed once."""
        key = (spec.name, chunker, level)
        if key not in self.runs:
            index = self.index(spec, chunker)
            t0 = time.perf_counter()
            run = index.search(self.queries, k=self.cfg.k, level=level)
            self.say(f"  searched {spec.name} [{chunker}, {level}] in "
                     f"{time.perf_counter() - t0:.1f} s")
            self.runs[key] = run
        return self.runs[key]

    def index(self, spec: RetrieverSpec, chunker: str) -> Any:
        """The index of a base retriever over the corpus split by ``chunker``, built once."""
        key = (spec.name, chunker)
        if key not in self.indexes:
            retriever = self.make(spec)
            retriever.index(self.es.corpus, chunker=_chunker(chunker))
            self.say(f"  indexed {spec.name} [{chunker}] in "
                     f"{retriever.timings['index_s']:.1f} s")
            self.indexes[key] = retriever
        return self.indexes[key]

    def make(self, spec: RetrieverSpec) -> Any:
        from ..retrieval import BM25, Dense

        s = dict(spec.settings)
        if spec.type == "bm25":
            for k in ("stopwords", "stemmer"):
                if s.get(k) is False:
                    s[k] = None
            return BM25(**s)
        model = s.pop("model")
        key = (model, s.pop("query_prefix", ""), s.pop("doc_prefix", ""))
        if key not in self.encoders:
            from ..retrieval import encoder

            t0 = time.perf_counter()
            self.encoders[key] = encoder(resolve_model(model, self.cfg.base_dir),
                                         query_prefix=key[1], doc_prefix=key[2],
                                         quiet=self.quiet)
            self.say(f"  loaded model {model} in {time.perf_counter() - t0:.1f} s")
        return Dense(self.encoders[key], **s)

    # -- evaluation ---------------------------------------------------------------------------
    def judgments(self, cell: Cell) -> Qrels:
        if cell.level == "doc":
            return self.es.qrels
        key = (cell.chunker, cell.level)
        if key not in self.qrels:
            units = self.index(self._any_base(cell), cell.chunker).units
            self.qrels[key] = chunk_qrels(units.chunks or [], self.es.qrels, self.es.evidence)
        return self.qrels[key]

    def lengths(self, cell: Cell) -> dict[str, int]:
        if cell.level == "doc":
            return {d.id: len(d.text.split()) + len(d.title.split()) for d in self.es.corpus}
        units = self.index(self._any_base(cell), cell.chunker).units
        return {c.id: len(c.text.split()) for c in units.chunks or []}

    def evaluate(self, run: Run, cell: Cell) -> tuple[dict[str, dict[str, float]], dict]:
        from ..measures import Evaluator

        stored = list(dict.fromkeys([*self.cfg.measures, "RR"]))
        curve = [f"R@{k}" for k in range(1, CURVE_DEPTH + 1)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = Evaluator(self.judgments(cell), stored + curve).evaluate(run)
        qids = result.query_ids.tolist()
        scores = {m: dict(zip(qids, result.scores[m].tolist(), strict=True)) for m in stored}
        lengths = self.lengths(cell)
        ctx = {k: context_tokens(run, lengths, k, self.query_ids)["mean"]
               for k in CONTEXT_CUTOFFS}
        units = self.index(self._any_base(cell), cell.chunker).units
        words = [len(t.split()) for t in units.texts]
        extras = {"mean_unit_words": float(np.mean(words)) if words else 0.0,
                  "recall_curve": [result.mean[m] for m in curve],
                  "context_tokens": {str(k): float(v) for k, v in ctx.items()},
                  "n_queries": len(qids), "n_units": len(units), "n_docs": len(units.doc_ids),
                  "judged_units": len(self.judgments(cell))}
        return scores, extras

    def _any_base(self, cell: Cell) -> RetrieverSpec:
        spec = cell.retriever
        return self.cfg.components(spec)[0] if spec.type == "hybrid" else spec

    def write_run(self, run: Run, cell: Cell) -> tuple[Path, str]:
        folder = self.cfg.base_dir / self.cfg.runs_dir / _safe(self.es.name) / cell.level
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{_safe(cell.system)}.trec"
        run.to_file(path, tag=_safe(cell.system))
        return path, "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _chunker(spec: str) -> Any:
    from ..retrieval.chunking import parse_chunker, whitespace_offsets

    chunker = parse_chunker(spec)
    if chunker is not None and hasattr(chunker, "with_tokenizer"):
        chunker = chunker.with_tokenizer(whitespace_offsets)
    return chunker


def _mean(rec: CellRecord, measure: str) -> float:
    values = list(rec.scores.get(measure, {}).values())
    return float(np.mean(values)) if values else float("nan")
