"""Compare systems against a baseline: paired tests, corrections, effect sizes, reports.

``compare(qrels, runs, measures, baseline=...)`` evaluates every run with the measures
engine (one :class:`~searchbench.measures.Evaluator`, queries aligned by id; a qrels query
a run lacks is scored 0 under ``missing="zero"``, while ``"skip"`` keeps only the queries
every run answers, with the means recomputed on them) and tests every (candidate,
measure) pair against the baseline on the per-query differences
``d_q = candidate_q − baseline_q``:

- the paired test (:mod:`searchbench.stats.paired`) gives a raw p-value and a confidence
  interval of the mean difference ``d̄``;
- the raw p-values of all pairs of the comparison are adjusted together
  (:mod:`searchbench.stats.corrections`); a pair is significant when the adjusted p-value
  is below ``alpha``;
- effect sizes (:mod:`searchbench.stats.effects`): ``Δ = d̄``, relative change
  ``Δ / mean(baseline)``, Cohen's ``d_z``, wins / ties / losses, and the number of queries a
  paired t-test needs to detect ``d_z`` with 80 % power at the comparison's ``alpha``.

Count measures (``NumRet``, ``NumRel``, ``NumRelRet``, ``NumQ``) are summed over queries,
not averaged, so their Δ is on the same aggregate as their column: ``Δ = Σ_q d_q`` (the
difference of the two sums), its interval is the interval of ``d̄`` times ``n``, and the
relative change is ``Δ / sum(baseline)``. The p-value is the same either way (a paired test
of ``Σ d_q`` is a test of ``d̄``).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._util import json_safe
from ..errors import ConfigError, DataFormatError, UnknownMeasureError
from ..measures import (
    ScoredQueries,
    Scorer,
    judged_notes,
    no_answer_ids,
    parse_measure,
    parse_measures,
)
from ..stats import (
    correct,
    effect_size,
    paired_test,
    queries_for_power,
    wins_ties_losses,
)
from ..vocab import DEFAULT_STATS, StatsSettings, canonical_correction, canonical_test
from ._provenance import provenance_of, provenance_shares, provenance_split
from .render import render_csv, render_latex, render_markdown, summary_rows

__all__ = [
    "Comparison",
    "PairStat",
    "compare",
    "compare_results",
    "coverage_message",
    "query_coverage",
]


@dataclass(frozen=True)
class PairStat:
    """One candidate against the baseline on one measure (no rounding)."""

    system: str
    measure: str
    mean: float
    baseline_mean: float
    delta: float
    relative: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    significant: bool
    wins: int
    ties: int
    losses: int
    effect_size: float
    queries_needed: int | None

    @property
    def direction(self) -> int:
        """+1 significantly better, −1 significantly worse, 0 not significant."""
        if not self.significant or self.delta == 0:
            return 0
        return 1 if self.delta > 0 else -1

    def to_dict(self) -> dict[str, Any]:
        return {k: json_safe(v) for k, v in asdict(self).items()}


@dataclass
class Comparison:
    """The outcome of :func:`compare`: means, per-query scores and one :class:`PairStat`
    per (candidate, measure). Renderers round; the stored values never are."""

    systems: list[str]
    baseline: str
    measures: list[str]
    query_ids: np.ndarray
    means: dict[str, dict[str, float]]
    scores: dict[str, dict[str, np.ndarray]]
    stats: list[PairStat]
    test: str
    correction: str
    alpha: float
    confidence: float
    seed: int
    n_permutations: int
    missing: str
    notes: list[str] = field(default_factory=list)
    judged: dict[str, float] = field(default_factory=dict)
    judged_k: int | None = None
    query_provenance: dict[str, tuple[str, bool]] = field(default_factory=dict)
    scored: ScoredQueries | None = None

    # -- queries ------------------------------------------------------------------------
    @property
    def candidates(self) -> list[str]:
        return [s for s in self.systems if s != self.baseline]

    def stat(self, system: str, measure: str) -> PairStat:
        """The :class:`PairStat` of ``system`` vs the baseline on ``measure``."""
        for row in self.stats:
            if row.system == system and row.measure == measure:
                return row
        raise ConfigError(f"no comparison for system {system!r} on measure {measure!r}; "
                          f"systems: {', '.join(self.candidates)}; "
                          f"measures: {', '.join(self.measures)}")

    def best(self, measure: str) -> list[str]:
        """Systems with the highest mean on ``measure`` (several on an exact tie)."""
        values = {s: self.means[s][measure] for s in self.systems}
        top = max(values.values())
        return [s for s, v in values.items() if v == top]

    def _measure(self, measure: str) -> str:
        if measure in self.measures:
            return measure

        name = parse_measure(measure).name
        if name not in self.measures:
            raise ConfigError(f"measure {measure!r} is not in this comparison; "
                              f"measures: {', '.join(self.measures)}")
        return name

    def per_query_deltas(self, measure: str) -> dict[str, dict[str, float]]:
        """``{candidate: {query_id: candidate − baseline}}`` on ``measure``."""
        m = self._measure(measure)
        base = self.scores[self.baseline][m]
        qids = self.query_ids.tolist()
        return {s: dict(zip(qids, (self.scores[s][m] - base).tolist(), strict=True))
                for s in self.candidates}

    def per_query_rows(self) -> list[tuple[str, str, str, float]]:
        """Long format ``(system, query, measure, value)`` for every score."""
        qids = self.query_ids.tolist()
        return [(s, q, m, v) for s in self.systems for m in self.measures
                for q, v in zip(qids, self.scores[s][m].tolist(), strict=True)]

    def regressions(
        self, measures: Sequence[str] | None = None, min_delta: float = 0.0
    ) -> list[PairStat]:
        """Pairs significantly worse than the baseline (after correction) on ``measures``
        whose drop ``−Δ`` is at least ``min_delta`` (a smaller significant drop passes)."""
        wanted = self.measures if measures is None else [self._measure(m) for m in measures]
        return [r for r in self.stats if r.measure in wanted and r.direction < 0
                and -r.delta >= min_delta]

    def provenance_shares(self) -> dict[str, int]:
        """How many compared queries are real, synthetic, verified, unverified ({} when
        the query provenance is not known)."""

        return provenance_shares(self.query_ids, self.query_provenance)

    def provenance_split(self, measure: str | None = None) -> list[Any]:
        """Each system's mean of ``measure`` (default: the first) per query provenance
        group (:func:`searchbench.comparison._provenance.provenance_split`)."""

        m = self._measure(measure) if measure is not None else self.measures[0]
        return provenance_split(self.query_ids, self.scores, m, self.query_provenance)

    # -- exports ------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """Test settings, for report captions and the JSON export."""
        return {"baseline": self.baseline, "test": self.test, "correction": self.correction,
                "alpha": self.alpha, "confidence": self.confidence, "seed": self.seed,
                "n_permutations": self.n_permutations, "missing": self.missing,
                "n_queries": len(self.query_ids)}

    @property
    def judged_label(self) -> str | None:
        """``Judged@10`` (the judged-coverage column), or None when it is not known."""
        return f"Judged@{self.judged_k}" if self.judged and self.judged_k else None

    def to_dict(self) -> dict[str, Any]:
        """Plain data: settings, systems, means, pair statistics and notes."""
        return {**self.settings(), "systems": list(self.systems),
                "measures": list(self.measures),
                "means": {s: {m: json_safe(v) for m, v in d.items()}
                          for s, d in self.means.items()},
                "comparisons": [r.to_dict() for r in self.stats], "notes": list(self.notes),
                "judged": ({"cutoff": self.judged_k,
                            "means": {s: json_safe(v) for s, v in self.judged.items()}}
                           if self.judged_label else None),
                "query_provenance": ({"shares": self.provenance_shares(), "split": [
                    {"group": r.group, "queries": r.queries, "measure": self.measures[0],
                     "means": {k: json_safe(v) for k, v in r.means.items()}}
                    for r in self.provenance_split()]} if self.query_provenance else None),
                "queries": self.scored.to_dict() if self.scored else None}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_frame(self, per_query: bool = False) -> Any:
        """pandas DataFrame: a row per (system, measure), or the long per-query format."""
        import pandas as pd  # lazy: the pandas extra

        if per_query:
            return pd.DataFrame(self.per_query_rows(),
                                columns=["system", "query", "measure", "value"])
        return pd.DataFrame(summary_rows(self))

    def to_csv(self, per_query: bool = False) -> str:
        return render_csv(self, per_query=per_query)

    def to_markdown(self, decimals: int = 4) -> str:
        return render_markdown(self, decimals=decimals)

    def to_latex(self, decimals: int = 4) -> str:
        return render_latex(self, decimals=decimals)

    def __str__(self) -> str:
        return self.to_markdown()

    def __repr__(self) -> str:
        return (f"Comparison(baseline={self.baseline!r}, systems={self.systems}, "
                f"measures={self.measures}, test={self.test!r}, "
                f"correction={self.correction!r}, queries={len(self.query_ids)})")


# -- building -------------------------------------------------------------------------------
def _named_runs(runs: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    """``{name: run}`` from a mapping or a list of runs named by ``run.name``."""
    if isinstance(runs, Mapping):
        named = {str(k): v for k, v in runs.items()}
    else:
        named = {}
        for run in runs:
            name = str(getattr(run, "name", "") or f"run{len(named) + 1}")
            if name in named:
                raise ConfigError(f"two runs are named {name!r}; pass a dict "
                                  "{name: run} or give the runs distinct names")
            named[name] = run
    if len(named) < 2:
        raise ConfigError(f"a comparison needs at least 2 systems, got {len(named)}: "
                          f"{', '.join(named) or 'none'}; pass a baseline and a candidate")
    return named


def _baseline_name(named: Mapping[str, Any], baseline: Any) -> str:
    """The baseline's name: ``None`` → the first system; a run object or a name."""
    if baseline is None:
        return next(iter(named))
    for name, run in named.items():
        if baseline is run:
            return name
    key = str(getattr(baseline, "name", baseline))
    if key not in named:
        raise ConfigError(f"baseline {key!r} is not among the runs ({', '.join(named)}); "
                          "pass the name of one of them")
    return key


def _renamed(run: Any, name: str) -> Any:
    """``run`` named ``name`` (a shallow copy; the caller's run is left as it is), so the
    engine's warnings name the run as the comparison does."""
    if getattr(run, "name", name) == name:
        return run

    renamed = copy.copy(run)
    renamed.name = name
    return renamed


def query_coverage(qrels: Any, runs: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per run, the qrels queries it has no results for (sorted)."""
    judged = set(np.asarray(qrels.query_ids).tolist())
    return {name: sorted(judged - set(np.asarray(run.query_ids).tolist()))
            for name, run in runs.items()}


def coverage_message(qrels: Any, runs: Mapping[str, Any]) -> str | None:
    """One sentence when the runs answer different sets of qrels queries, else ``None``."""
    lacking = query_coverage(qrels, runs)
    if len({tuple(v) for v in lacking.values()}) <= 1:
        return None
    common = len(qrels.query_ids) - len(set().union(*map(set, lacking.values())))
    parts = [f"{n} lacks {len(v)} of {len(qrels.query_ids)} qrels queries"
             + (f" (e.g. {', '.join(v[:3])})" if v else "") for n, v in lacking.items() if v]
    return (f"runs cover different query sets: {'; '.join(parts)}; "
            f"{common} queries are answered by every run")


def _coverage_notes(named: Mapping[str, Any], qrels: Any, missing: str) -> list[str]:
    """Say which runs lack qrels queries, and which policy scored them."""
    lacking = query_coverage(qrels, named)
    if not any(lacking.values()):
        return []
    policy = ("scored 0 (missing='zero')" if missing == "zero"
              else "compared on the queries every run answers (missing='skip')")
    head = coverage_message(qrels, named) or "; ".join(
        f"{n} lacks {len(v)} of {len(qrels.query_ids)} qrels queries"
        for n, v in lacking.items() if v)
    return [f"{head}: {policy}"]


def _align(results: Mapping[str, Any], measures: list[str], missing: str
           ) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]], dict[str, dict[str, float]]]:
    """Query ids, per-query scores and means on the queries common to all results.

    Identical query sets (always the case under ``missing="zero"``) keep the engine's
    means; under ``"skip"`` the scores are restricted to the common queries and the means
    recomputed on them (counts such as ``NumRet`` summed), so both sides of every pair
    average over the same queries.
    """

    sets = {name: np.asarray(r.query_ids) for name, r in results.items()}
    common = sorted(set.intersection(*(set(q.tolist()) for q in sets.values())))
    same = all(len(q) == len(common) for q in sets.values())
    if not same and missing != "skip":
        sizes = ", ".join(f"{n}: {len(q)}" for n, q in sets.items())
        raise DataFormatError(
            f"the results cover different query sets ({sizes}; {len(common)} in common) "
            f"under missing={missing!r}; evaluate every run with the same policy")
    if len(common) < 2:
        raise DataFormatError(f"the comparison has {len(common)} evaluated queries in "
                              "common; a paired test needs at least 2")
    query_ids = np.asarray(common)
    scores, means = {}, {}
    for name, r in results.items():
        idx = np.searchsorted(sets[name].astype(str), query_ids.astype(str))
        scores[name] = {m: np.asarray(r.scores[m], dtype=np.float64)[idx] for m in measures}
        means[name] = ({m: float(r.mean[m]) for m in measures} if same else
                       {m: float(v.sum() if parse_measure(m).is_count else v.mean())
                        for m, v in scores[name].items()})
    return query_ids, scores, means


def compare(
    qrels: Any,
    runs: Mapping[str, Any] | Sequence[Any],
    measures: Sequence[str] | str,
    *,
    baseline: Any = None,
    test: str = DEFAULT_STATS.test,
    correction: str = DEFAULT_STATS.correction,
    alpha: float = DEFAULT_STATS.alpha,
    confidence: float = DEFAULT_STATS.confidence,
    seed: int = DEFAULT_STATS.seed,
    n_permutations: int = DEFAULT_STATS.n_permutations,
    missing: str = "zero",
    depth: int | None = None,
    queries: Any = None,
    unanswerable: str = "skip",
) -> Comparison:
    """Evaluate ``runs`` on ``qrels`` and test every candidate against ``baseline``.

    ``runs`` is ``{name: Run}`` or a list of runs (named by ``Run.name``); ``baseline`` is a
    name or one of the runs (default: the first). See the module docstring for the
    statistics; ``missing`` and ``depth`` go to the measures engine. ``queries`` (the
    set's :class:`~searchbench.data.Queries`, or ``{query_id: (source, verified)}``) adds
    the query provenance: shares and the main measure split by it; queries it marks
    ``no_answer`` are left out of every measure under ``unanswerable="skip"`` (the default)
    and scored as trec_eval does under ``"zero"``. The notes say how many compared queries
    have no relevant document (scored 0, as trec_eval does) and how many were marked
    (:mod:`searchbench.measures`).

    Judged coverage (mean ``Judged@k`` at the main cutoff, see
    :mod:`searchbench.measures`) is computed in the same pass for every system:
    ``Comparison.judged``. A system whose top
    k is almost entirely unjudged raises a :class:`~searchbench.measures.SearchbenchWarning`
    naming the likely cause; one mostly unjudged adds a note.
    """

    StatsSettings(canonical_test(test), canonical_correction(correction), alpha, confidence,
                  seed, n_permutations).validated()  # before any evaluation
    named = _named_runs(runs)
    base = _baseline_name(named, baseline)
    wanted = [m.name for m in parse_measures([measures] if isinstance(measures, str)
                                             else list(measures))]
    scorer = Scorer(qrels, wanted, missing=missing, depth=depth,
                    no_answer=no_answer_ids(queries), unanswerable=unanswerable)
    raw = {name: scorer.evaluate(_renamed(run, name)) for name, run in named.items()}
    kept = _common_queries(raw)
    # the one scoring step (measures.scoring): warns when a run is unjudged
    done = {name: scorer.finish(raw[name], run, name) for name, run in named.items()}
    results = {name: d.result for name, d in done.items()}
    return compare_results(
        results, baseline=base, test=test, correction=correction, alpha=alpha,
        confidence=confidence, seed=seed, n_permutations=n_permutations, missing=missing,
        notes=_coverage_notes(named, qrels, missing),
        judged={name: d.coverage.mean for name, d in done.items()}, judged_k=scorer.probe.k,
        queries=queries, scored=scorer.scored_queries(_common_queries(results), kept),
    )


def _common_queries(results: Mapping[str, Any]) -> list[str]:
    """The query ids every result scored (sorted): the queries a comparison compares."""
    return sorted(set.intersection(*(set(np.asarray(r.query_ids).tolist())
                                     for r in results.values())))


def compare_results(
    results: Mapping[str, Any],
    *,
    baseline: str | None = None,
    test: str = DEFAULT_STATS.test,
    correction: str = DEFAULT_STATS.correction,
    alpha: float = DEFAULT_STATS.alpha,
    confidence: float = DEFAULT_STATS.confidence,
    seed: int = DEFAULT_STATS.seed,
    n_permutations: int = DEFAULT_STATS.n_permutations,
    missing: str = "zero",
    notes: Sequence[str] = (),
    judged: Mapping[str, float] | None = None,
    judged_k: int | None = None,
    queries: Any = None,
    scored: ScoredQueries | None = None,
) -> Comparison:
    """Compare already evaluated systems: ``{name: EvalResult}`` (same measures, same
    queries), see :func:`compare`. ``judged`` is each system's mean Judged@``judged_k``
    (shown beside the means; a note when it is mostly unjudged), when known; ``queries``
    as in :func:`compare`; ``scored`` (queries without a relevant document, queries marked
    ``no_answer``) adds its notes and its counts to the export."""

    settings = StatsSettings(canonical_test(test), canonical_correction(correction), alpha,
                             confidence, seed, n_permutations).validated()
    test, correction, alpha = settings.test, settings.correction, settings.alpha
    named = _named_runs(results)
    base = _baseline_name(named, baseline)
    measures = list(named[base].measures)
    query_ids, scores, means = _align(named, measures, missing)
    pairs = [(s, m) for s in named if s != base for m in measures]
    diffs = np.column_stack([scores[s][m] - scores[base][m] for s, m in pairs])
    tested = paired_test(diffs, test, n_permutations=n_permutations, seed=seed,
                         confidence=confidence)
    adjusted = correct(tested.p_values, correction)
    counts = {m for m in measures if _is_count(m)}
    stats = _pair_stats(pairs, diffs, means, base, tested, adjusted, alpha, counts)
    return Comparison(
        systems=list(named), baseline=base, measures=measures, query_ids=query_ids,
        means=means, scores=scores, stats=stats, test=test, correction=correction,
        alpha=alpha, confidence=confidence, seed=seed, n_permutations=n_permutations,
        missing=missing, notes=[*notes, *judged_notes(judged or {}, judged_k or 0),
                                *(scored.notes() if scored else [])],
        judged=dict(judged or {}) if judged_k else {}, judged_k=judged_k if judged else None,
        query_provenance=provenance_of(queries), scored=scored,
    )


def _is_count(measure: str) -> bool:
    """Whether ``measure`` is summed over queries (a label the grammar does not know is not)."""

    try:
        return parse_measure(measure).is_count
    except UnknownMeasureError:
        return False


def _pair_stats(pairs, diffs, means, base, tested, adjusted, alpha, counts) -> list[PairStat]:
    """Assemble one :class:`PairStat` per (candidate, measure) column of ``diffs``; a count
    measure's Δ and interval are sums over queries, like its means."""
    wtl = wins_ties_losses(diffs)
    dz = effect_size(diffs)
    rows = []
    for k, (s, m) in enumerate(pairs):
        scale = diffs.shape[0] if m in counts else 1
        delta = float(diffs[:, k].sum() if m in counts else diffs[:, k].mean())
        b = means[base][m]
        rows.append(PairStat(
            system=s, measure=m, mean=means[s][m], baseline_mean=b, delta=delta,
            relative=delta / b if b != 0 else math.nan,
            ci_low=float(tested.ci_low[k]) * scale, ci_high=float(tested.ci_high[k]) * scale,
            p_value=float(tested.p_values[k]), p_adjusted=float(adjusted[k]),
            significant=bool(adjusted[k] < alpha), wins=int(wtl[0, k]),
            ties=int(wtl[1, k]), losses=int(wtl[2, k]), effect_size=float(dz[k]),
            queries_needed=queries_for_power(float(dz[k]), alpha=alpha, power=0.8),
        ))
    return rows
