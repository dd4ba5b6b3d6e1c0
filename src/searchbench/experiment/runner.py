"""Run an experiment's grid, sharing work between cells, and resume after interruption.

Per evaluation set and chunker, each base retriever (BM25, dense per model) is indexed
once — one BM25 index and one embedding pass per model × chunking — and searched once per
level; a hybrid cell fuses its components' runs. Retrievers are built by the one builder
(:mod:`searchbench.retrieval.spec`), so chunk sizes and context tokens count what they
count in ``searchbench run``: model tokens for a retriever with a model (a hybrid: its first
dense part's, for every part, so the fused runs share their chunks), whitespace words for
BM25. A cell is stored when it is complete (run file written atomically, then
one transaction); cells already in the store are skipped, so running again after a crash
or ``kill -9`` redoes only unfinished cells (and cells stored without a measure the config
now asks for, or whose run file is missing or changed). A cell's key includes its names; a
cell whose work (settings, evaluation set) equals a stored cell's under other names reuses
that cell's run file and scores instead of retrieving again (see :mod:`.naming`).
"""

from __future__ import annotations

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
from ..errors import ConfigError, SearchbenchWarning, user_stacklevel
from ..retrieval.fusion import fuse
from ..retrieval.levels import chunk_qrels, context_tokens
from ..retrieval.spec import (
    DenseSpec,
    HybridSpec,
    build_retriever,
    chunker_for,
    chunking_label,
    context_token_counts,
    counting_spec,
    encoder_for,
    unit_label,
)
from .config import Cell, ExperimentConfig, RetrieverSpec, resolve_evalset, resolve_model
from .naming import publish_retagged, publish_run, slug, work_key
from .provenance import run_provenance
from .store import CellRecord, ResultsStore

__all__ = ["CONTEXT_CUTOFFS", "CURVE_DEPTH", "RunSummary", "default_store", "run_experiment"]

CURVE_DEPTH = 100
HYBRID_DEPTH = 100  # a hybrid's parts are searched max(k, this) deep, as Hybrid does
CONTEXT_CUTOFFS = (1, 3, 5, 10, 20)
Log = Callable[[str], None]


@dataclass
class RunSummary:
    """What :func:`run_experiment` did."""

    experiment_id: int
    store_path: Path
    computed: list[str] = field(default_factory=list)  # "level system" labels
    skipped: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)  # stored anew from an identical cell
    redone: list[str] = field(default_factory=list)  # run file missing or changed
    seconds: float = 0.0


def default_store(cfg: ExperimentConfig) -> Path:
    """``my-exp.sqlite`` next to ``my-exp.toml`` (or in the working folder)."""
    if cfg.path is not None:
        return cfg.path.with_suffix(".sqlite")
    return Path.cwd() / f"{cfg.name}.sqlite"


def run_experiment(cfg: ExperimentConfig, store: str | Path | None = None, *,
                   quiet: bool | None = None, log: Log | None = None,
                   encoders: dict[Any, Any] | None = None) -> RunSummary:
    """Run every unfinished cell of ``cfg`` and store it; returns what was done.
    ``encoders`` (see :func:`~searchbench.retrieval.spec.encoder_for`) lets several calls
    share their loaded models (``searchbench demo`` runs its grid in stages)."""
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
            work = _Workspace(cfg, es, spec, say, quiet, encoders)
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
            "warnings": [f.__dict__ for f in report.warnings],
            # the report splits the main measure by query provenance (ARCHITECTURE §12.6)
            "query_groups": {"synthetic": [q.id for q in es.queries if q.source == "synthetic"],
                             "verified": [q.id for q in es.queries if q.verified]}}


def _damaged(db: ResultsStore, exp_id: int, keys: dict[str, Cell], done: set[str],
             summary: RunSummary) -> None:
    """Finished cells of the grid whose run file is missing or changed: warned about and
    taken out of ``done``, so they are computed again."""
    for key, why in db.run_file_problems(exp_id, done & set(keys)).items():
        warnings.warn(f"{why}; the cell is computed again", SearchbenchWarning,
                      stacklevel=user_stacklevel())
        done.discard(key)
        summary.redone.append(f"{keys[key].level} {keys[key].system}")


class _Workspace:
    """Indexes, runs and judgments of one evaluation set, shared between its cells."""

    def __init__(self, cfg: ExperimentConfig, es: EvalSet, spec: str, say: Log,
                 quiet: bool | None, encoders: dict[Any, Any] | None = None) -> None:
        self.cfg, self.es, self.spec, self.say, self.quiet = cfg, es, spec, say, quiet
        self.hash = es.content_hash()
        self.queries = es.judged_queries
        self.query_ids = self.queries.ids
        self.encoders: dict[Any, Any] = {} if encoders is None else encoders
        self.indexes: dict[tuple[str, str, Any], Any] = {}
        self.runs: dict[tuple[str, str, str, Any, int], Run] = {}
        self.qrels: dict[tuple[str, str, Any], Qrels] = {}

    # -- the grid -----------------------------------------------------------------------------
    def run(self, db: ResultsStore, exp_id: int, done: set[str], summary: RunSummary) -> None:
        from .._util import progress

        cells = [c for c in self.cfg.cells() if c.evalset == self.spec]
        _damaged(db, exp_id, {self.key(c): c for c in cells}, done, summary)
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
        wanted = {*cfg.measures, "RR"}
        stored = _by_work_key(db)
        with progress(len(todo), f"cells ({self.es.name})", self.quiet) as advance:
            for cell in todo:
                rec = self.reuse(db, cell, stored, wanted)
                if rec is None:
                    rec = self.compute(cell)
                else:
                    summary.reused.append(f"{cell.level} {cell.system}")
                db.save_cell(exp_id, rec, {q.id: q.text for q in self.queries})
                done.add(rec.cell_key)
                summary.computed.append(f"{cell.level} {cell.system}")
                self.say(f"  done {cell.level:5} {cell.system}  "
                         f"{self.cfg.measures[0]}={_mean(rec, self.cfg.measures[0]):.4f}")
                advance(1)

    def key(self, cell: Cell) -> str:
        return cell.key(self.hash, self.cfg.components(cell.retriever))

    def reuse(self, db: ResultsStore, cell: Cell, stored: dict[str, list[tuple[int, str]]],
              wanted: set[str]) -> CellRecord | None:
        """A record of ``cell`` made from a stored cell that did the same work (same
        settings, evaluation set and measures, only names differ) and whose run file is
        intact; None when there is none. Its run file is a copy of that cell's, tagged with
        this cell's name."""
        components = self.cfg.components(cell.retriever)
        for exp_id, key in stored.get(cell.work_key(self.hash, components), []):
            found = db.cells(exp_id, {key})
            old = found[0] if found else None
            if old is None or not wanted <= set(old.scores):
                continue
            name = slug(cell.system)
            copied = publish_retagged(old.run_path, old.run_hash, self.runs_folder(cell),
                                      name, name)
            if copied is None:  # its run file is gone or changed: not reusable
                continue
            self.say(f"  reused {old.level} {old.system} for {cell.system} (same settings)")
            path, digest = copied
            return CellRecord(
                cell_key=self.key(cell), system=cell.system, evalset=self.es.name,
                evalset_hash=self.hash, level=cell.level, chunker=cell.chunker,
                retriever=cell.retriever.name, config=cell.to_dict(components),
                run_path=str(path), run_hash=digest, timings=old.timings,
                extras=old.extras, scores=old.scores, provenance={
                    **old.provenance, "reused_from": {"system": old.system,
                                                      "cell_key": old.cell_key}})
        return None

    # -- one cell -----------------------------------------------------------------------------
    def compute(self, cell: Cell) -> CellRecord:
        spec = cell.retriever
        if spec.type == "hybrid":
            run, timings, described = self.hybrid(cell)
        else:
            run = self.search(spec, cell.chunker, cell.level, self.unit(spec))
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
        s, h = cell.retriever.settings, cell.retriever.spec
        if not isinstance(h, HybridSpec):
            raise ConfigError(f"retriever {cell.retriever.name!r} is not a validated hybrid; "
                              "load the experiment with load_config()")
        parts = self.cfg.components(cell.retriever)
        unit = self.unit(cell.retriever)
        depth = max(cell.k, HYBRID_DEPTH)  # as Hybrid.search: each part searched this deep
        runs = [self.search(p, cell.chunker, cell.level, unit, depth) for p in parts]
        t0 = time.perf_counter()
        run = fuse(runs, h.fusion, rrf_k=h.rrf_k, weights=h.weights,
                   norm=h.norm, name=cell.retriever.name).truncate(cell.k)
        timings = {"fuse_s": time.perf_counter() - t0}
        for key in ("index_s", "encode_s", "search_s"):
            timings[key] = sum(r.metadata.get("timings", {}).get(key, 0.0) for r in runs)
        described = {"retriever": "hybrid", **s,
                     "components": [{k: v for k, v in r.metadata.items() if k != "timings"}
                                    for r in runs]}
        return run, timings, described

    def unit(self, spec: RetrieverSpec) -> DenseSpec | None:
        """The dense spec whose model counts the tokens of ``spec``'s cells (None: words)."""
        return counting_spec(spec.spec)

    def encoder(self, unit: DenseSpec | None) -> Any:
        """The encoder counting tokens in ``unit`` (shared with the dense retrievers)."""
        if unit is None:
            return None
        return encoder_for(self._resolved(unit), self.encoders, self.quiet)

    def _resolved(self, spec: Any) -> Any:
        from dataclasses import replace

        if isinstance(spec, DenseSpec):
            return replace(spec, model=resolve_model(spec.model, self.cfg.base_dir))
        return spec

    def search(self, spec: RetrieverSpec, chunker: str, level: str,
               unit: DenseSpec | None, depth: int | None = None) -> Run:
        """The run of a base retriever at (chunker, level, token unit), ``depth`` (default:
        the config's k) results per query, computed once."""
        depth = depth or self.cfg.k
        key = (spec.name, chunker, level, unit, depth)
        if key not in self.runs:
            index = self.index(spec, chunker, unit)
            t0 = time.perf_counter()
            run = index.search(self.queries, k=depth, level=level)
            self.say(f"  searched {spec.name} [{chunker}, {level}] in "
                     f"{time.perf_counter() - t0:.1f} s")
            self.runs[key] = run
        return self.runs[key]

    def index(self, spec: RetrieverSpec, chunker: str, unit: DenseSpec | None) -> Any:
        """The index of a base retriever over the corpus split by ``chunker`` counting in
        ``unit``'s tokens, built once."""
        key = (spec.name, chunker, unit)
        if key not in self.indexes:
            retriever = self.make(spec)
            counter = self.encoder(unit)
            retriever.index(self.es.corpus, chunker=chunker_for(chunker, counter))
            self.say(f"  indexed {spec.name} [chunks: {chunking_label(chunker, encoder=counter)}]"
                     f" in {retriever.timings['index_s']:.1f} s")
            self.indexes[key] = retriever
        return self.indexes[key]

    def make(self, spec: RetrieverSpec) -> Any:
        """The (unindexed) bm25 or dense retriever of ``spec``, by the one builder."""
        return build_retriever(self._resolved(spec.spec), encoders=self.encoders,
                               quiet=self.quiet)

    # -- evaluation ---------------------------------------------------------------------------
    def cell_index(self, cell: Cell) -> Any:
        """An index holding the units of ``cell`` (its chunks, in its token unit)."""
        return self.index(self._any_base(cell), cell.chunker, self.unit(cell.retriever))

    def judgments(self, cell: Cell) -> Qrels:
        if cell.level == "doc":
            return self.es.qrels
        key = (cell.chunker, cell.level, self.unit(cell.retriever))
        if key not in self.qrels:
            units = self.cell_index(cell).units
            self.qrels[key] = chunk_qrels(units.chunks or [], self.es.qrels, self.es.evidence)
        return self.qrels[key]

    def lengths(self, cell: Cell, run: Run) -> dict[str, int]:
        """Context tokens of every result of ``run`` (the one count, as ``run`` does)."""
        used = run.doc_vocab[np.unique(run.doc_codes)].astype(str).tolist()
        texts = self.cell_index(cell).context_texts(cell.level)
        return context_token_counts(texts, used, encoder=self.encoder(self.unit(cell.retriever)))

    def evaluate(self, run: Run, cell: Cell) -> tuple[dict[str, dict[str, float]], dict]:
        from ..measures import Evaluator, judged_cutoff

        stored = list(dict.fromkeys([*self.cfg.measures, "RR"]))
        curve = [f"R@{k}" for k in range(1, CURVE_DEPTH + 1)]
        cutoff = judged_cutoff(self.cfg.measures)
        probe = f"Judged@{cutoff}"  # judged coverage at the main cutoff, for the report
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wanted = list(dict.fromkeys([*stored, *curve, probe]))
            result = Evaluator(self.judgments(cell), wanted).evaluate(run)
        qids = result.query_ids.tolist()
        scores = {m: dict(zip(qids, result.scores[m].tolist(), strict=True)) for m in stored}
        lengths = self.lengths(cell, run)
        ctx = {k: context_tokens(run, lengths, k, self.query_ids)["mean"]
               for k in CONTEXT_CUTOFFS}
        units = self.cell_index(cell).units
        words = [len(t.split()) for t in units.texts]
        extras = {"mean_unit_words": float(np.mean(words)) if words else 0.0,
                  "recall_curve": [result.mean[m] for m in curve],
                  "context_tokens": {str(k): float(v) for k, v in ctx.items()},
                  "token_unit": unit_label(self.encoder(self.unit(cell.retriever))),
                  "n_queries": len(qids), "n_units": len(units), "n_docs": len(units.doc_ids),
                  "judged_units": len(self.judgments(cell)),
                  "judged": {"k": cutoff, "mean": result.mean[probe]}}
        return scores, extras

    def _any_base(self, cell: Cell) -> RetrieverSpec:
        spec = cell.retriever
        return self.cfg.components(spec)[0] if spec.type == "hybrid" else spec

    def write_run(self, run: Run, cell: Cell) -> tuple[Path, str]:
        """``RUNS/EXPERIMENT/EVALSET/LEVEL/SYSTEM.CONTENT.trec`` (every user name slugged,
        the file named by its content hash: see :mod:`.naming`) and its ``sha256:``."""
        name = slug(cell.system)
        return publish_run(run, self.runs_folder(cell), name, tag=name)

    def runs_folder(self, cell: Cell) -> Path:
        """``RUNS/EXPERIMENT/EVALSET/LEVEL`` (names slugged)."""
        return (self.cfg.base_dir / self.cfg.runs_dir / slug(self.cfg.name)
                / slug(self.es.name) / cell.level)


def _by_work_key(db: ResultsStore) -> dict[str, list[tuple[int, str]]]:
    """``{work key: [(experiment id, cell key), …]}`` of every stored cell, newest first."""
    out: dict[str, list[tuple[int, str]]] = {}
    for exp_id, key, config, evalset_hash in db.cell_index():
        out.setdefault(work_key(config, evalset_hash), []).append((exp_id, key))
    return out


def _mean(rec: CellRecord, measure: str) -> float:
    values = list(rec.scores.get(measure, {}).values())
    return float(np.mean(values)) if values else float("nan")
