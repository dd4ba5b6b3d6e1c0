"""The report of an experiment, read from the results store: data, Markdown and JSON.

:func:`experiment_report` gathers, per evaluation set and level, the stored cells, the
comparison against the baseline (:func:`searchbench.comparison.compare_results` on the stored
per-query scores), per-query wins and losses, Recall@K curves, context size and timings,
plus the provenance recorded at run time. :meth:`ExperimentReport.write` writes the HTML
(:mod:`searchbench.report.html`), Markdown and JSON files.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util import json_safe, write_text
from ..comparison import compare_results
from ..errors import ConfigError, SearchbenchWarning, user_stacklevel
from ..measures import EvalResult, ScoredQueries
from ..stats import t_interval
from ..vocab import canonical_unanswerable
from .experiment_md import render_markdown
from .html import render_html

__all__ = ["ExperimentReport", "Group", "experiment_report"]

N_EXAMPLES = 5


@dataclass
class Group:
    """The cells of one evaluation set at one level, compared against the baseline."""

    evalset: str
    evalset_hash: str
    level: str
    cells: list[Any]  # CellRecord, in grid order
    comparison: Any  # Comparison, or None with a single system
    query_ids: list[str]
    query_texts: dict[str, str]
    main: str
    scored: Any = None  # ScoredQueries: no relevant document, marked no_answer
    notes: list[str] = field(default_factory=list)  # what `scored` says, and more

    @property
    def title(self) -> str:
        what = "document level" if self.level == "doc" else "chunk level (evidence spans)"
        return f"{self.evalset} · {what}"

    @property
    def anchor(self) -> str:
        return f"{self.evalset}-{self.level}".replace(" ", "-")

    def cell(self, system: str) -> Any:
        return next(c for c in self.cells if c.system == system)

    def best_candidate(self) -> str | None:
        """The candidate with the highest mean of the main measure."""
        if self.comparison is None or not self.comparison.candidates:
            return None
        means = self.comparison.means
        return max(self.comparison.candidates, key=lambda s: means[s][self.main])

    def first_relevant_rank(self, system: str) -> dict[str, int | None]:
        """Rank of the first relevant result per query (None: none retrieved)."""
        rr = self.cell(system).scores.get("RR", {})
        return {q: (round(1 / v) if v > 0 else None) for q, v in rr.items()}

    def wins_losses(self, system: str, n: int = N_EXAMPLES) -> dict[str, list[dict]]:
        """The ``n`` biggest per-query gains and losses of ``system`` over the baseline."""
        base = self.comparison.baseline
        m = self.main
        b, c = self.cell(base), self.cell(system)
        rb, rc = self.first_relevant_rank(base), self.first_relevant_rank(system)
        rows = [{"query_id": q, "text": self.query_texts.get(q, ""),
                 "baseline": b.scores[m][q], "system": c.scores[m][q],
                 "delta": c.scores[m][q] - b.scores[m][q],
                 "baseline_rank": rb.get(q), "system_rank": rc.get(q)}
                for q in self.query_ids]
        rows.sort(key=lambda r: (-r["delta"], r["query_id"]))
        wins = [r for r in rows if r["delta"] > 0][:n]
        losses = [r for r in reversed(rows) if r["delta"] < 0][:n]
        return {"wins": wins, "losses": losses}

    def mean_ci(self, system: str, confidence: float = 0.95) -> tuple[float, float, float]:
        """Mean of the main measure with its Student t interval over queries."""
        v = self.cell(system).score_array(self.main, self.query_ids)
        if len(v) < 2:
            return float(v.mean()), math.nan, math.nan
        lo, hi = t_interval(v, confidence)
        return float(v.mean()), float(lo), float(hi)

    def to_dict(self) -> dict[str, Any]:
        best = self.best_candidate()
        return {
            "evalset": self.evalset, "evalset_hash": self.evalset_hash, "level": self.level,
            "main_measure": self.main,
            "comparison": self.comparison.to_dict() if self.comparison else None,
            "cells": [_cell_dict(self, c) for c in self.cells],
            "best_candidate": best,
            "wins_losses": self.wins_losses(best) if best else None,
            "queries": self.scored.to_dict() if self.scored is not None else None,
            "notes": list(self.notes),
        }

    def recall_curve(self, cell: Any) -> list[float]:
        """The cell's mean Recall@K curve over the group's queries: without the queries
        marked ``no_answer`` when the group leaves them out."""
        left_out = self.scored is not None and self.scored.policy == "skip" and \
            self.scored.unanswerable
        key = "recall_curve_answerable" if left_out else "recall_curve"
        return list(cell.extras.get(key, cell.extras.get("recall_curve", [])))


def _cell_dict(group: Group, c: Any) -> dict[str, Any]:
    mean, lo, hi = group.mean_ci(c.system)
    return {"system": c.system, "retriever": c.retriever, "chunker": c.chunker,
            "config": c.config, "run_path": c.run_path, "run_hash": c.run_hash,
            "timings": c.timings, "extras": c.extras, "provenance": c.provenance,
            "main_mean": mean, "main_ci": json_safe([lo, hi]),
            "means": {m: float(np.mean(list(v.values()))) for m, v in c.scores.items()}}


@dataclass
class ExperimentReport:
    """Everything the report shows; render with :meth:`to_markdown`, :meth:`to_json`,
    :meth:`to_html` or write all three with :meth:`write`."""

    experiment: dict[str, Any]
    groups: list[Group]
    store_path: str
    missing: list[str] = field(default_factory=list)  # cells of the config not in the store
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M UTC",
                                                               time.gmtime()))

    @property
    def name(self) -> str:
        return self.experiment["name"]

    @property
    def config(self) -> dict[str, Any]:
        return self.experiment["config"]

    @property
    def provenance(self) -> dict[str, Any]:
        return self.experiment["provenance"]

    def to_dict(self) -> dict[str, Any]:
        return {"experiment": self.name, "created": self.created, "store": self.store_path,
                "config": self.config, "provenance": self.provenance,
                "missing_cells": self.missing, "groups": [g.to_dict() for g in self.groups]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(json_safe(self.to_dict()), indent=indent, ensure_ascii=False)

    def to_markdown(self, decimals: int = 4) -> str:
        return render_markdown(self, decimals)

    def to_html(self, decimals: int = 4) -> str:
        return render_html(self, decimals)

    def write(self, folder: str | os.PathLike[str], stem: str | None = None,
              decimals: int = 4,
              formats: Iterable[str] = ("html", "markdown", "json")) -> dict[str, Path]:
        """Write ``STEM.html``, ``STEM.md`` and ``STEM.json`` atomically; returns the paths.

        ``formats`` picks which of ``html``, ``markdown``, ``json`` to write; the other files
        in ``folder`` (an earlier report in another format, the user's files) are left alone.
        """
        renderers: dict[str, Callable[[], str]] = {
            "html": lambda: self.to_html(decimals),
            "markdown": lambda: self.to_markdown(decimals),
            "json": self.to_json}
        wanted = list(dict.fromkeys(formats))
        unknown = [kind for kind in wanted if kind not in renderers]
        if unknown:
            raise ValueError(f"unknown report format(s) {unknown}; expected some of "
                             f"{', '.join(renderers)}")
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        stem = stem or _slug(self.name)
        suffix = {"html": ".html", "markdown": ".md", "json": ".json"}
        paths = {}
        for kind in wanted:
            paths[kind] = out / f"{stem}{suffix[kind]}"
            write_text(paths[kind], renderers[kind]())
        return paths


def _slug(text: str) -> str:
    """A file-name stem for an experiment name: the name itself when it is made of letters,
    digits, ``.``, ``_`` and ``-`` only; otherwise a readable form plus 8 hex digits of the
    name's SHA-256, so that two names that read alike (``a b``, ``a+b``) never share a
    report file."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    if slug == text:
        return slug
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug or 'report'}-{digest}"


# -- building ---------------------------------------------------------------------------------
def experiment_report(store: str | os.PathLike[str], experiment: int | str | None = None,
                      config: Any = None, unanswerable: str | None = None) -> ExperimentReport:
    """Build the report of ``experiment`` (id or name; default: the most recent one).

    Queries the evaluation set marks ``no_answer`` are left out of every measure under
    ``unanswerable="skip"``, scored as trec_eval does under ``"zero"`` (default: the
    config's ``unanswerable``, else ``skip``); each level says how many scored queries have
    no relevant judgment."""
    from ..experiment import ResultsStore  # lazy: loads retrieval, experiment on first use

    expected = _expected_cells(config)
    with ResultsStore(store) as db:
        exp_id = _pick(db, experiment, config)
        exp = db.experiment(exp_id)
        cells = db.cells(exp_id)
        texts = {h: db.query_texts(h) for h in {c.evalset_hash for c in cells}}
        current = (_latest(cells, exp["config"]) if expected is None
                   else [c for c in cells if c.cell_key in expected])
        _check_run_files(db.run_file_problems(exp_id, {c.cell_key for c in current}), current)
    cfg = dict(exp["config"])
    cfg["unanswerable"] = canonical_unanswerable(unanswerable or cfg.get("unanswerable")
                                                 or "skip")
    missing = [] if expected is None else sorted(
        set(expected.values()) - {f"{c.level} {c.system}" for c in current})
    groups = _groups(current, cfg, texts, exp.get("provenance", {}).get("evalsets", {}))
    return ExperimentReport(exp, groups, str(store), missing)


def _latest(cells: list[Any], cfg: dict[str, Any]) -> list[Any]:
    """Without the config file: the cells of the retrievers the stored config names, one
    per system and level (the latest), so a renamed or re-tuned retriever's older cells
    do not show up beside the current ones."""
    names = {r["name"] for r in cfg.get("retrievers", [])}
    latest: dict[tuple[str, str, str], Any] = {}
    for c in sorted(cells, key=lambda c: c.finished):
        if c.retriever in names:
            latest[(c.evalset_hash, c.level, c.system)] = c
    return [c for c in cells if latest.get((c.evalset_hash, c.level, c.system)) is c]


def _check_run_files(problems: dict[str, str], cells: list[Any]) -> None:
    """A changed run file stops the report (its stored scores no longer describe the file
    on disk); a deleted one is a warning (the scores were computed before it went)."""
    from ..experiment import StoreError  # lazy: loads retrieval, experiment on first use

    paths = {c.cell_key: Path(c.run_path) for c in cells}
    changed = [why for key, why in problems.items() if paths[key].exists()]
    if changed:
        raise StoreError(f"{changed[0]}" + (f" (and {len(changed) - 1} more)"
                                            if len(changed) > 1 else "")
                         + "; restore the file, or run 'searchbench experiment run' again "
                         "to recompute the cells whose run files changed")
    for why in problems.values():
        warnings.warn(f"{why}; the report shows the scores stored when it was written; "
                      "run 'searchbench experiment run' again to recreate it",
                      SearchbenchWarning, stacklevel=user_stacklevel())


def _pick(db: Any, experiment: int | str | None, config: Any) -> int:
    rows = db.experiments()
    if not rows:
        raise ConfigError(f"{db.path}: the results store holds no experiment yet; run "
                          "'searchbench experiment run CONFIG' first")
    if config is not None:
        found = db.find_experiment(config.name, str(config.path) if config.path else None)
        if found is None:
            raise ConfigError(f"{db.path}: no results for experiment {config.name!r} "
                              f"({config.path}); run 'searchbench experiment run' first")
        return found
    if experiment is None:
        return rows[0]["id"]
    for r in rows:
        if experiment in (r["id"], r["name"], str(r["id"])):
            return r["id"]
    raise ConfigError(f"{db.path}: no experiment {experiment!r}; stored: "
                      + ", ".join(f"{r['id']} ({r['name']})" for r in rows))


def _expected_cells(config: Any) -> dict[str, str] | None:
    """``{cell_key: label}`` of the config's grid (None: report whatever is stored)."""
    if config is None:
        return None
    from ..collections import load_evalset  # lazy: loads data, collections on first use
    from ..experiment import resolve_evalset  # lazy: loads retrieval, experiment on first use

    out = {}
    for spec in config.evalsets:
        digest = load_evalset(resolve_evalset(spec, config.base_dir)).content_hash()
        for c in config.cells():
            if c.evalset == spec:
                out[c.key(digest, config.components(c.retriever))] = f"{c.level} {c.system}"
    return out


def _groups(cells: list[Any], cfg: dict[str, Any], texts: dict[str, dict[str, str]],
            evalsets: dict[str, Any] | None = None) -> list:
    order = {lvl: i for i, lvl in enumerate(cfg.get("levels", ["doc", "chunk"]))}
    keys = sorted({(c.evalset, c.evalset_hash, c.level) for c in cells},
                  key=lambda k: (k[0], order.get(k[2], 9)))
    main = cfg["measures"][0]
    groups = []
    for name, digest, level in keys:
        members = _grid_order([c for c in cells if (c.evalset, c.evalset_hash, c.level)
                               == (name, digest, level)], cfg)
        scored_ids = sorted(members[0].scores[main])
        marked = _no_answer((evalsets or {}).get(name))
        policy = cfg.get("unanswerable", "skip")
        qids = [q for q in scored_ids if q not in marked] if policy == "skip" else scored_ids
        scored, notes = _scored(members, qids, scored_ids, marked, policy)
        cmp = _compare(members, qids, cfg, _query_provenance((evalsets or {}).get(name), qids),
                       scored, notes)
        groups.append(Group(name, digest, level, members, cmp, qids, texts.get(digest, {}),
                            main, scored, [*scored.notes(), *notes]))
    return groups


def _no_answer(evalset: Any) -> set[str]:
    """Ids the runner recorded as marked ``no_answer`` (none for older stores)."""
    groups = evalset.get("query_groups") if isinstance(evalset, dict) else None
    return set(groups.get("no_answer", [])) if isinstance(groups, dict) else set()


def _scored(cells: list[Any], qids: list[str], scored_ids: list[str], marked: set[str],
            policy: str) -> tuple[Any, list[str]]:
    """The group's :class:`~searchbench.measures.ScoredQueries` from what the runner stored
    per cell (``extras["no_relevant"]``), and a note when the cells disagree (chunk
    judgments differ between chunkers) or predate the count."""
    shown = set(qids)
    found = [c.extras.get("no_relevant") for c in cells]
    known = [set(f) & shown for f in found if f is not None]
    union = sorted(set().union(*known)) if known else []
    notes = []
    if len({frozenset(k) for k in known}) > 1:
        notes.append("queries without a relevant document differ between systems: " + ", ".join(
            f"{c.system} {len(set(f) & shown)}" for c, f in zip(cells, found, strict=True)
            if f is not None))
    if len(known) < len(found):
        notes.append("some cells were stored before searchbench counted the queries without "
                     "a relevant document; run 'searchbench experiment run' again to count "
                     "them")
    scored = ScoredQueries(n_scored=len(qids), no_relevant=tuple(union),
                           unanswerable=tuple(q for q in scored_ids if q in marked),
                           policy=canonical_unanswerable(policy))
    return scored, notes


def _grid_order(cells: list[Any], cfg: dict[str, Any]) -> list[Any]:
    names = [r["name"] for r in cfg["retrievers"]]
    chunkers = cfg["chunkers"]

    def key(c: Any) -> tuple[int, int]:
        return (chunkers.index(c.chunker) if c.chunker in chunkers else 99,
                names.index(c.retriever) if c.retriever in names else 99)

    return sorted(cells, key=key)


def _baseline(cells: list[Any], cfg: dict[str, Any]) -> str:
    systems = [c.system for c in cells]
    wanted = cfg.get("baseline")
    if isinstance(wanted, str) and wanted in systems:
        return wanted
    same = [s for s in systems if wanted and s.split("/", 1)[0] == wanted]
    return same[0] if same else systems[0]


def _query_provenance(evalset: Any, qids: list[str]) -> dict[str, tuple[str, bool]] | None:
    """``{query_id: (source, verified)}`` from the ids the runner stored (None for an
    experiment stored by an older version: no split is shown then)."""
    groups = evalset.get("query_groups") if isinstance(evalset, dict) else None
    if not isinstance(groups, dict):
        return None
    synthetic, verified = set(groups.get("synthetic", [])), set(groups.get("verified", []))
    return {q: ("synthetic" if q in synthetic else "human", q in verified) for q in qids}


def _compare(cells: list[Any], qids: list[str], cfg: dict[str, Any],
             provenance: dict[str, tuple[str, bool]] | None = None, scored: Any = None,
             notes: list[str] | None = None) -> Any:
    if len(cells) < 2 or len(qids) < 2:
        return None
    measures = cfg["measures"]
    results = {}
    for c in cells:
        scores = {m: c.score_array(m, qids) for m in measures}
        results[c.system] = EvalResult(c.system, list(measures), np.asarray(qids), scores,
                                       {m: float(v.mean()) for m, v in scores.items()})
    judged, cutoff = _judged(cells)
    return compare_results(results, baseline=_baseline(cells, cfg), test=cfg["test"],
                           correction=cfg["correction"], alpha=cfg["alpha"], seed=cfg["seed"],
                           n_permutations=cfg["n_permutations"], judged=judged,
                           judged_k=cutoff, queries=provenance, scored=scored,
                           notes=notes or ())


def _judged(cells: list[Any]) -> tuple[dict[str, float] | None, int | None]:
    """Each cell's mean Judged@k (stored by the runner) when every cell has it at one k;
    cells stored by an older version have none, and then no column is shown."""
    found = [c.extras.get("judged") for c in cells]
    if not all(found) or len({f["k"] for f in found}) != 1:
        return None, None
    return {c.system: float(f["mean"]) for c, f in zip(cells, found, strict=True)}, \
        int(found[0]["k"])
