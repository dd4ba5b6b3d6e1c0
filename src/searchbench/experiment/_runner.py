"""Run an experiment's grid, sharing work between cells, and resume after interruption.

Every cell is one call of the retrieval pipeline (:class:`searchbench.retrieval.Pipeline`,
the one ``searchbench run`` calls), which indexes each base retriever once per evaluation
set and bound chunker, searches it once per level and depth, fuses a hybrid's cached part
runs, cuts chunk-level judgments from the units the run ranks and scores through the one
Judged@k step; this module only walks the grid, stores and resumes. A vector store (a
``db`` retriever) decides its own chunking: its cells use the store's recorded chunker and
model (a ``{chunker}`` template in its URL names one store per chunker), and every store
the grid reads is checked — or loaded, with ``load = "missing"`` — before any cell runs
(:mod:`.stores`). A cell whose Judged@k is below 0.5 is
flagged in the progress line, and its coverage is stored with it (the report notes it).

A cell is stored when it is complete (run file written atomically, then one transaction);
cells already in the store are skipped, so running again after a crash or ``kill -9``
redoes only unfinished cells (and cells stored without a measure the config now asks for,
or whose run file is missing or changed). A cell's key includes its names; a cell whose
work (settings, evaluation set) equals a stored cell's under other names reuses that
cell's run file and scores instead of retrieving again (see :mod:`.naming`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._util import progress
from ..data import EvalSet, Run
from ..errors import ConfigError, SearchbenchWarning, user_stacklevel
from ..measures import Coverage, no_relevant_ids
from ..retrieval import (
    DbSpec,
    DenseSpec,
    HybridSpec,
    Pipeline,
    PipelineResult,
    context_token_counts,
    store_url,
)
from ._provenance import run_provenance
from .config import Cell, ExperimentConfig, resolve_evalset, resolve_model
from .naming import publish_retagged, publish_run, slug, work_key
from .store import CellRecord, ResultsStore
from .stores import StoreNeed, prepare_stores

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
    sets = {spec: _load(spec, cfg) for spec in cfg.evalsets}
    spaces = [_Workspace(cfg, es, spec, say, quiet, encoders) for spec, es in sets.items()]
    try:
        for work in spaces:  # every store the grid reads, checked before any work
            work.check_stores()
        with ResultsStore(path) as db:
            prov = {**run_provenance(cfg.base_dir), "evalsets": {
                spec: _evalset_provenance(es) for spec, es in sets.items()}}
            exp_id = db.upsert_experiment(cfg.name, str(cfg.path) if cfg.path else None,
                                          cfg.text, cfg.to_dict(), prov)
            summary = RunSummary(exp_id, path)
            wanted = {*cfg.measures, "RR"}
            done = {k for k, ms in db.stored_measures(exp_id).items() if wanted <= ms}
            for work in spaces:
                work.run(db, exp_id, done, summary)
    finally:
        for work in spaces:
            work.pipe.close()
    summary.seconds = time.perf_counter() - t0
    return summary


def _load(spec: str, cfg: ExperimentConfig) -> EvalSet:
    from ..collections import load_evalset  # lazy: loads collections, data on first use

    es = load_evalset(resolve_evalset(spec, cfg.base_dir))
    es.warn_unjudged()
    return es


def _evalset_provenance(es: EvalSet) -> dict[str, Any]:
    from ..collections import check_evalset  # lazy: loads collections, data on first use

    report = check_evalset(es)
    return {"summary": report.summary,
            "errors": [f.__dict__ for f in report.errors],
            "warnings": [f.__dict__ for f in report.warnings],
            # the report splits the main measure by query provenance (ARCHITECTURE §12.6)
            "query_groups": {"synthetic": [q.id for q in es.queries if q.source == "synthetic"],
                             "verified": [q.id for q in es.queries if q.verified],
                             # left out of the measures under unanswerable = "skip"
                             "no_answer": es.queries.no_answer_ids()}}


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
        # every query is stored; the report leaves out those marked no_answer (its policy)
        self.pipe = Pipeline(es, queries=self.queries, quiet=quiet, log=say,
                             missing_warnings=False, unanswerable="zero",
                             encoders=encoders)

    # -- the grid -----------------------------------------------------------------------------
    def run(self, db: ResultsStore, exp_id: int, done: set[str], summary: RunSummary) -> None:
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
        with progress(len(todo), f"cells ({self.es.name})", self.quiet, unit="cells",
                      kept="done and stored") as advance:
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
                         f"{self.cfg.measures[0]}={_mean(rec, self.cfg.measures[0]):.4f}"
                         + _flag(rec))
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

    # -- stores -------------------------------------------------------------------------------
    def check_stores(self) -> None:
        """Every store the grid's cells read, checked before any work — and loaded first
        when its retriever says ``load = "missing"`` (:mod:`.stores`)."""
        where = str(self.cfg.path or "config")
        needs: dict[tuple[DbSpec, str], StoreNeed] = {}
        for cell in self.cfg.cells():
            if cell.evalset != self.spec:
                continue
            for part in _leaves(self.spec_of(cell)):
                if isinstance(part, DbSpec) and (part, cell.chunker) not in needs:
                    table = next(r for r in self.cfg.retrievers
                                 if r.type == "db" and _same_store(r.spec, part))
                    needs[part, cell.chunker] = StoreNeed(part, cell.chunker, table, where)
        prepare_stores(self.pipe, self.es, self.spec, list(needs.values()), self.say,
                       self.quiet)

    def spec_of(self, cell: Cell) -> Any:
        """The cell's retriever spec as it runs: relative model folders made absolute,
        ``{chunker}`` in a store URL replaced by the cell's chunker."""
        spec = cell.retriever.spec
        if spec is None:
            raise ConfigError(f"retriever {cell.retriever.name!r} is not validated; load "
                              "the experiment with load_config()")
        return _resolved(spec, cell.chunker, self.cfg.base_dir)

    # -- one cell -----------------------------------------------------------------------------
    def compute(self, cell: Cell) -> CellRecord:
        curve = [f"R@{k}" for k in range(1, CURVE_DEPTH + 1)]
        stored = list(dict.fromkeys([*self.cfg.measures, "RR"]))
        res = self.pipe.run(self.spec_of(cell), cell.chunker, cell.level, cell.k,
                            measures=list(dict.fromkeys([*stored, *curve])),
                            name=cell.system)
        run = res.run
        timings = dict(run.metadata.get("timings", {}))
        timings.setdefault("index_s", sum(v for n, v in timings.items()
                                          if n.startswith("index_s.")))
        timings["eval_s"] = res.eval_s
        n = max(len(self.query_ids), 1)
        search_s = timings.get("search_s", 0.0)
        timings.update(latency_ms=1000 * search_s / n,
                       qps=n / search_s if search_s > 0 else float("inf"))
        path, digest = self.write_run(run, cell)
        described = {k: v for k, v in run.metadata.items() if k != "timings"}
        return CellRecord(
            cell_key=self.key(cell), system=cell.system, evalset=self.es.name,
            evalset_hash=self.hash, level=cell.level, chunker=cell.chunker,
            retriever=cell.retriever.name, config=cell.to_dict(self.cfg.components(
                cell.retriever)), run_path=str(path), run_hash=digest, timings=timings,
            extras=_extras(res, curve), provenance={"retriever": described,
                                                   "evalset_hash": self.hash,
                                                   "evalset": self.spec},
            scores=_per_query(res, stored))

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


def _extras(res: PipelineResult, curve: list[str]) -> dict[str, Any]:
    """What the report shows of a cell besides its scores (units, context, coverage)."""
    units = res.retriever.units
    assert units is not None  # the pipeline indexed it
    words = [len(t.split()) for t in units.texts]
    mean = res.result.mean if res.result is not None else {}
    extras = {"mean_unit_words": float(np.mean(words)) if words else 0.0,
              "mean_unit_tokens": _mean_unit_tokens(res),
              "recall_curve": [mean.get(m, 0.0) for m in curve],
              "context_tokens": {str(k): res.context_at(k) for k in CONTEXT_CUTOFFS},
              "token_unit": res.token_unit, "chunking": res.chunking,
              "n_queries": len(res.query_ids), "n_units": len(units),
              "n_docs": len(units.doc_ids), "judged_units": len(res.qrels),
              "judged": res.coverage.to_dict() if res.coverage is not None else None}
    if res.result is not None:
        qids = res.result.query_ids
        extras["no_relevant"] = no_relevant_ids(res.qrels, qids)
        # the report leaves the queries marked no_answer out under unanswerable = "skip"
        answerable = ~np.isin(qids.astype(str), res.no_answer)
        if not answerable.all():
            extras["recall_curve_answerable"] = [
                float(res.result.scores[m][answerable].mean()) if answerable.any() else 0.0
                for m in curve]
    return extras


def _mean_unit_tokens(res: PipelineResult) -> float:
    """Mean size of the indexed units in the cell's own token unit (model tokens for a
    retriever with a model, whitespace words for BM25)."""
    units = res.retriever.units
    assert units is not None
    named = {str(i): t for i, t in enumerate(units.texts)}
    counts = context_token_counts(named, list(named), res.retriever)
    return float(np.mean(list(counts.values()))) if counts else 0.0


def _per_query(res: PipelineResult, measures: list[str]) -> dict[str, dict[str, float]]:
    if res.result is None:
        return {m: {} for m in measures}
    qids = res.result.query_ids.tolist()
    return {m: dict(zip(qids, res.result.scores[m].tolist(), strict=True)) for m in measures}


def _flag(rec: CellRecord) -> str:
    """`` (Judged@10 0.04: mostly unjudged, a lower bound)`` for a cell resting on mostly
    unjudged results (the one threshold of :class:`~searchbench.measures.Coverage`)."""
    judged = rec.extras.get("judged") or {}
    if "mean" not in judged:
        return ""
    flag = Coverage(int(judged["k"]), float(judged["mean"])).flag()
    return f"  ({flag})" if flag else ""


def _leaves(spec: Any) -> tuple[Any, ...]:
    return tuple(spec.parts) if isinstance(spec, HybridSpec) else (spec,)


def _resolved(spec: Any, chunker: str, base: Path) -> Any:
    """``spec`` with relative model folders absolute and store URL templates filled in."""
    if isinstance(spec, HybridSpec):
        return replace(spec, parts=tuple(_resolved(p, chunker, base) for p in spec.parts))
    if isinstance(spec, DenseSpec):
        return replace(spec, model=resolve_model(spec.model, base))
    if isinstance(spec, DbSpec):
        return replace(spec, url=store_url(spec.url, chunker),
                       model=resolve_model(spec.model, base) if spec.model else None)
    return spec


def _same_store(template: Any, part: DbSpec) -> bool:
    return isinstance(template, DbSpec) and replace(template, url=part.url,
                                                    model=part.model) == part


def _mean(rec: CellRecord, measure: str) -> float:
    values = list(rec.scores.get(measure, {}).values())
    return float(np.mean(values)) if values else float("nan")
