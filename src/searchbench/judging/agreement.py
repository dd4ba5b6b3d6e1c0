"""Agreement between annotators, people and LLM judges (ARCHITECTURE §12.4).

Labels are the grades 0–3 of :class:`~searchbench.judging.Judgment` records; a skip
(``grade=None``) is no label. An *item* is a (query, document) pair. Statistics, each with
a percentile bootstrap interval over items (``n_boot`` resamples, ``seed``):

- **Cohen's κ** for two annotators, on the items both labelled:
  ``κ = 1 − Σ w_ij O_ij / Σ w_ij E_ij`` with ``O`` the observed proportions of the
  4 × 4 confusion matrix over the grade scale 0–3, ``E_ij = O_i· O_·j`` the proportions
  expected by chance, and weights ``w_ij = [i ≠ j]`` (unweighted), ``|i − j|`` (linear)
  or ``(i − j)²`` (quadratic). Cohen (1960), Cohen (1968).
- **Fleiss' κ** for three or more annotators, on the items all of them labelled:
  ``κ = (P̄ − P̄_e) / (1 − P̄_e)`` with ``P_i = (Σ_j n_ij² − m) / (m (m − 1))`` the agreement
  on item i (n_ij annotators chose grade j, m annotators), ``P̄`` its mean and
  ``P̄_e = Σ_j p_j²``, ``p_j`` the share of all labels that are grade j. Fleiss (1971).
- **Krippendorff's α** (ordinal by default; nominal and interval too), on every item with
  at least two labels, missing labels allowed: ``α = 1 − (n − 1) Σ o_ck δ_ck /
  Σ n_c n_k δ_ck`` with ``o`` the coincidence matrix (each item adds
  ``(n_u n_uᵀ − diag n_u) / (m_u − 1)``), ``n_c`` its margins, ``n`` their sum and the
  ordinal distance ``δ_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²``. Krippendorff (2019), ch. 12.

Inter-annotator statistics are computed among people; each LLM judge (annotator
``llm:<model>@<prompt-version>``, kind ``llm``) is compared with the people's majority
label on the items both labelled, and — given runs — by how much using its labels instead
of the people's reorders the systems (Kendall's τ between the two orderings).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._util import json_safe
from ..data import Qrels
from ..errors import ConfigError
from ..measures import evaluate
from .labels import GRADES, Judgment, PoolItem

__all__ = ["AgreementReport", "Disagreement", "Estimate", "LabelMatrix", "agreement",
           "cohen_kappa", "disagreements", "fleiss_kappa", "krippendorff_alpha",
           "label_matrix", "majority_grade"]

K = len(GRADES)
Weights = Literal["none", "linear", "quadratic"]
Level = Literal["ordinal", "nominal", "interval"]
_CHUNK_CELLS = 2_000_000  # bootstrap weights built in blocks of at most this many cells


@dataclass(frozen=True)
class Estimate:
    """A statistic, its bootstrap interval (``low``, ``high``; NaN when undefined) and the
    number of items it rests on."""

    value: float
    low: float
    high: float
    n_items: int

    def to_dict(self) -> dict[str, Any]:
        return {"value": _num(self.value), "low": _num(self.low), "high": _num(self.high),
                "n_items": self.n_items}

    def text(self) -> str:
        if np.isnan(self.value):
            return f"undefined (n={self.n_items})"
        ci = "" if np.isnan(self.low) else f" [{self.low:.3f}, {self.high:.3f}]"
        return f"{self.value:.3f}{ci} (n={self.n_items})"


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


# -- labels ---------------------------------------------------------------------------------
@dataclass
class LabelMatrix:
    """Items × annotators grades (NaN: no label); ``kinds`` maps annotator → human|llm."""

    items: list[tuple[str, str]]
    annotators: list[str]
    kinds: dict[str, str]
    grades: np.ndarray

    def column(self, annotator: str) -> np.ndarray:
        return self.grades[:, self.annotators.index(annotator)]

    def of_kind(self, kind: str) -> list[str]:
        return [a for a in self.annotators if self.kinds[a] == kind]


def label_matrix(judgments: Sequence[Judgment]) -> LabelMatrix:
    """The grades of ``judgments`` (the last label per item and annotator wins; skips are
    no label), items sorted by (query, doc), annotators by name."""
    last: dict[tuple[str, str, str], int | None] = {}
    kinds: dict[str, str] = {}
    for j in judgments:
        last[(j.query_id, j.doc_id, j.annotator)] = j.grade
        kinds[j.annotator] = j.kind
    labelled = {k: g for k, g in last.items() if g is not None}
    items = sorted({(q, d) for q, d, _ in labelled})
    annotators = sorted({a for _, _, a in labelled})
    row = {it: i for i, it in enumerate(items)}
    col = {a: i for i, a in enumerate(annotators)}
    grades = np.full((len(items), len(annotators)), np.nan)
    for (q, d, a), g in labelled.items():
        grades[row[(q, d)], col[a]] = g
    return LabelMatrix(items, annotators, {a: kinds[a] for a in annotators}, grades)


def majority_grade(labels: np.ndarray) -> np.ndarray:
    """Per row of ``labels`` (NaN = none): the most frequent grade, a tie going to the
    lowest tied grade (a doubt is not relevance); NaN for a row without labels."""
    counts = _counts(labels)
    best = counts.argmax(axis=1).astype(float)
    best[counts.sum(axis=1) == 0] = np.nan
    return best


def _counts(labels: np.ndarray) -> np.ndarray:
    """Rows × K: how many labels of each grade."""
    return np.stack([(labels == g).sum(axis=1) for g in GRADES], axis=1)


# -- bootstrap ------------------------------------------------------------------------------
def _bootstrap(stat: Callable[[np.ndarray], np.ndarray], n: int, n_boot: int,
               seed: int) -> tuple[float, float]:
    """Percentile 95 % interval of ``stat`` over item resamples. ``stat`` takes a
    (B × n) matrix of item multiplicities and returns B values."""
    if n < 2 or n_boot < 1:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    block = max(1, _CHUNK_CELLS // n)
    values = []
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        values.append(stat(rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(float)))
    found = np.concatenate(values)
    found = found[~np.isnan(found)]
    if not len(found):
        return float("nan"), float("nan")
    low, high = np.percentile(found, [2.5, 97.5])
    return float(low), float(high)


def _estimate(stat: Callable[[np.ndarray], np.ndarray], n: int, n_boot: int,
              seed: int) -> Estimate:
    value = float(stat(np.ones((1, n)))[0]) if n else float("nan")
    low, high = _bootstrap(stat, n, n_boot, seed) if not np.isnan(value) else (np.nan, np.nan)
    return Estimate(value, low, high, n)


# -- Cohen ----------------------------------------------------------------------------------
def _weight_matrix(weights: Weights) -> np.ndarray:
    i, j = np.meshgrid(np.arange(K), np.arange(K), indexing="ij")
    if weights == "none":
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j).astype(float)
    if weights == "quadratic":
        return ((i - j) ** 2).astype(float)
    raise ConfigError(f"weights {weights!r}; expected none, linear or quadratic")


def cohen_kappa(a: np.ndarray, b: np.ndarray, *, weights: Weights = "none",
                n_boot: int = 1000, seed: int = 0) -> Estimate:
    """Cohen's κ of two label vectors (NaN = no label) over the items both labelled."""
    w = _weight_matrix(weights)
    both = ~np.isnan(a) & ~np.isnan(b)
    cells = (a[both] * K + b[both]).astype(np.int64)
    onehot = np.zeros((len(cells), K * K))
    onehot[np.arange(len(cells)), cells] = 1.0

    def stat(mult: np.ndarray) -> np.ndarray:
        conf = (mult @ onehot).reshape(-1, K, K)
        total = conf.sum(axis=(1, 2))[:, None, None]
        observed = conf / total
        expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :]
        den = (w * expected).sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, 1.0 - (w * observed).sum(axis=(1, 2)) / den, np.nan)

    return _estimate(stat, len(cells), n_boot, seed)


# -- Fleiss ---------------------------------------------------------------------------------
def fleiss_kappa(labels: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> Estimate:
    """Fleiss' κ of an items × annotators matrix over the items every annotator labelled."""
    complete = labels[~np.isnan(labels).any(axis=1)]
    m = labels.shape[1]
    counts = _counts(complete).astype(float)
    per_item = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1)) if m > 1 else counts[:, 0]

    def stat(mult: np.ndarray) -> np.ndarray:
        n = mult.sum(axis=1)
        p_bar = (mult @ per_item) / n
        p_j = (mult @ counts) / (n * m)[:, None]
        p_e = (p_j ** 2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(p_e < 1, (p_bar - p_e) / (1 - p_e), np.nan)

    if m < 2:
        return Estimate(float("nan"), float("nan"), float("nan"), len(complete))
    return _estimate(stat, len(complete), n_boot, seed)


# -- Krippendorff ---------------------------------------------------------------------------
def _distance(level: Level, margins: np.ndarray) -> np.ndarray:
    """δ²: B × K × K for ``margins`` (B × K)."""
    values = np.asarray(GRADES, dtype=float)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(K), (len(margins), K, K))
    if level == "interval":
        return np.broadcast_to((values[:, None] - values[None, :]) ** 2,
                               (len(margins), K, K))
    if level != "ordinal":
        raise ConfigError(f"level {level!r}; expected ordinal, nominal or interval")
    cum = np.concatenate([np.zeros((len(margins), 1)), np.cumsum(margins, axis=1)], axis=1)
    lo = np.minimum(np.arange(K)[:, None], np.arange(K)[None, :])
    hi = np.maximum(np.arange(K)[:, None], np.arange(K)[None, :])
    between = cum[:, hi + 1] - cum[:, lo]  # Σ_{g=lo..hi} n_g
    return (between - (margins[:, :, None] + margins[:, None, :]) / 2) ** 2


def krippendorff_alpha(labels: np.ndarray, *, level: Level = "ordinal", n_boot: int = 1000,
                       seed: int = 0) -> Estimate:
    """Krippendorff's α of an items × annotators matrix (NaN = no label) over the items
    with at least two labels."""
    counts = _counts(labels).astype(float)
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    counts, m_u = counts[pairable], m_u[pairable]
    contrib = (counts[:, :, None] * counts[:, None, :]
               - counts[:, :, None] * np.eye(K)[None]) / (m_u - 1)[:, None, None]
    contrib = contrib.reshape(len(counts), K * K)
    _distance(level, np.zeros((1, K)))  # an unknown level fails before any work

    def stat(mult: np.ndarray) -> np.ndarray:
        o = (mult @ contrib).reshape(-1, K, K)
        margins = o.sum(axis=2)
        n = margins.sum(axis=1)
        delta = _distance(level, margins)
        observed = (o * delta).sum(axis=(1, 2))
        expected = (margins[:, :, None] * margins[:, None, :] * delta).sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(expected > 0, 1.0 - (n - 1) * observed / expected, np.nan)

    return _estimate(stat, len(counts), n_boot, seed)


# -- disagreements --------------------------------------------------------------------------
@dataclass(frozen=True)
class Disagreement:
    """An item to adjudicate: its labels, their spread and why it is listed."""

    query_id: str
    doc_id: str
    labels: dict[str, int]
    spread: int
    reason: str


def disagreements(matrix: LabelMatrix, *, min_spread: int = 2) -> list[Disagreement]:
    """Items to adjudicate, largest spread first: the people's labels differ by at least
    ``min_spread`` grades or their majority is tied (two grades share the top count), or an
    LLM judge's label is ``min_spread`` or more from the people's majority. Every label of
    a listed item is shown."""
    people = matrix.grades[:, [matrix.annotators.index(a) for a in matrix.of_kind("human")]]
    n_labels = (~np.isnan(people)).sum(axis=1)
    missing = np.isnan(people)
    spread = np.where(n_labels > 0, np.where(missing, -np.inf, people).max(axis=1)
                      - np.where(missing, np.inf, people).min(axis=1), 0)
    counts = _counts(people)
    tied = (n_labels >= 2) & ((counts == counts.max(axis=1)[:, None]).sum(axis=1) > 1)
    wide = (n_labels >= 2) & (spread >= min_spread)
    majority = majority_grade(people)
    llm_off = np.zeros(len(matrix.items), dtype=bool)
    for name in matrix.of_kind("llm"):
        gap = np.abs(matrix.column(name) - majority)
        llm_off |= np.nan_to_num(gap, nan=0.0) >= min_spread
    listed = np.flatnonzero(wide | tied | llm_off)
    listed = listed[np.lexsort((listed, -spread[listed]))]
    out = []
    for i in listed.tolist():
        labels = {a: int(g) for a, g in zip(matrix.annotators, matrix.grades[i].tolist(),
                                            strict=True) if not np.isnan(g)}
        reasons = [f"people differ by {int(spread[i])}" if wide[i] else "",
                   "people's majority tied" if tied[i] else "",
                   "an LLM judge is far from the people" if llm_off[i] else ""]
        out.append(Disagreement(*matrix.items[i], labels, int(spread[i]),
                                "; ".join(r for r in reasons if r)))
    return out


# -- the report -----------------------------------------------------------------------------
@dataclass
class AgreementReport:
    """Everything ``judge agreement`` prints (``to_text``) or writes (``to_dict``)."""

    annotators: dict[str, str]
    items: int
    pairs: dict[str, dict[str, Estimate]] = field(default_factory=dict)
    fleiss: Estimate | None = None
    alpha: Estimate | None = None
    llm: dict[str, dict[str, Any]] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def est(e: Any) -> Any:
            return e.to_dict() if isinstance(e, Estimate) else e

        return json_safe({
            "annotators": self.annotators, "items": self.items,
            "pairs": {p: {k: est(v) for k, v in s.items()} for p, s in self.pairs.items()},
            "fleiss_kappa": est(self.fleiss), "krippendorff_alpha_ordinal": est(self.alpha),
            "llm": {a: {k: est(v) for k, v in s.items()} for a, s in self.llm.items()},
            "disagreements": [d.__dict__ for d in self.disagreements],
        })

    def adjudication_pool(self) -> list[PoolItem]:
        """The items to adjudicate as pool items (largest spread first), for the judging
        app; ``n_runs`` holds the number of labels, ``best_rank`` the position in the list."""
        return [PoolItem(d.query_id, d.doc_id, len(d.labels), i)
                for i, d in enumerate(self.disagreements, 1)]

    def summary(self) -> str:
        """One line for ``evalset check``: the headline agreement figures."""
        humans = [a for a, k in self.annotators.items() if k == "human"]
        parts = [f"{len(humans)} people, {len(self.annotators) - len(humans)} LLM judges, "
                 f"{self.items} items"]
        if self.alpha is not None:
            parts.append(f"Krippendorff α (ordinal) {self.alpha.text()}")
        for name, stats in self.llm.items():
            parts.append(f"{name} vs people κ {stats['kappa'].text()}")
        return "; ".join(parts)

    def to_text(self, *, max_disagreements: int = 20) -> str:
        lines = ["annotators: " + ", ".join(f"{a} ({k})" for a, k in self.annotators.items()),
                 f"items labelled: {self.items}"]
        for pair, stats in self.pairs.items():
            lines.append(f"{pair}: Cohen κ {stats['kappa'].text()}; linear "
                         f"{stats['kappa_linear'].text()}; quadratic "
                         f"{stats['kappa_quadratic'].text()}")
        if self.fleiss is not None:
            lines.append(f"Fleiss κ (people): {self.fleiss.text()}")
        if self.alpha is not None:
            lines.append(f"Krippendorff α, ordinal (people): {self.alpha.text()}")
        for name, s in self.llm.items():
            lines.append(f"{name} vs people's majority: exact agreement {s['exact']:.3f}, "
                         f"κ {s['kappa'].text()}, quadratic κ {s['kappa_quadratic'].text()}")
            if "kendall_tau" in s:
                lines.append(f"  system ranking, people's labels vs {name}'s: Kendall τ "
                             f"{s['kendall_tau']:.3f} over {len(s['systems'])} runs "
                             f"({s['ranking_measure']}); " + ", ".join(
                                 f"{r}: {h:.4f} vs {v:.4f}" for r, (h, v) in
                                 s["systems"].items()))
        if not self.pairs and self.alpha is None and not self.llm:
            lines.append("no statistic: agreement needs two annotators labelling the same items")
        shown = self.disagreements[:max_disagreements]
        lines.append(f"to adjudicate: {len(self.disagreements)} items")
        lines += [f"  {d.query_id} / {d.doc_id}: " + ", ".join(
            f"{a}={g}" for a, g in d.labels.items()) + f" ({d.reason})" for d in shown]
        if len(self.disagreements) > len(shown):
            lines.append(f"  … {len(self.disagreements) - len(shown)} more (--json for all)")
        return "\n".join(lines)


def agreement(judgments: Sequence[Judgment], *, runs: Sequence[Any] = (),
              measure: str = "nDCG@10", n_boot: int = 1000, seed: int = 0,
              min_spread: int = 2) -> AgreementReport:
    """Agreement among the people, each LLM judge against the people, and the items to
    adjudicate (see the module docstring for the statistics). ``runs`` (``Run`` objects,
    at least two) add Kendall's τ between the systems' orderings by ``measure`` under the
    people's majority labels and under each LLM judge's, on the items both labelled."""
    matrix = label_matrix(judgments)
    report = AgreementReport(dict(matrix.kinds), len(matrix.items))
    humans = matrix.of_kind("human")
    human_grades = matrix.grades[:, [matrix.annotators.index(a) for a in humans]]
    variants: tuple[tuple[str, Weights], ...] = (("", "none"), ("_linear", "linear"),
                                                 ("_quadratic", "quadratic"))
    for a, b in itertools.combinations(humans, 2):
        x, y = matrix.column(a), matrix.column(b)
        report.pairs[f"{a} vs {b}"] = {
            f"kappa{suffix}": cohen_kappa(x, y, weights=w, n_boot=n_boot, seed=seed)
            for suffix, w in variants}
    if len(humans) >= 3:
        report.fleiss = fleiss_kappa(human_grades, n_boot=n_boot, seed=seed)
    if len(humans) >= 2:
        report.alpha = krippendorff_alpha(human_grades, n_boot=n_boot, seed=seed)
    people = majority_grade(human_grades) if humans else np.full(len(matrix.items), np.nan)
    for name in matrix.of_kind("llm"):
        report.llm[name] = _llm_vs_people(matrix, name, people, runs, measure, n_boot, seed)
    report.disagreements = disagreements(matrix, min_spread=min_spread)
    return report


def _llm_vs_people(matrix: LabelMatrix, name: str, people: np.ndarray, runs: Sequence[Any],
                   measure: str, n_boot: int, seed: int) -> dict[str, Any]:
    llm = matrix.column(name)
    both = ~np.isnan(llm) & ~np.isnan(people)
    out: dict[str, Any] = {
        "items": int(both.sum()),
        "exact": float((llm[both] == people[both]).mean()) if both.any() else float("nan"),
        "kappa": cohen_kappa(people, llm, n_boot=n_boot, seed=seed),
        "kappa_quadratic": cohen_kappa(people, llm, weights="quadratic", n_boot=n_boot,
                                       seed=seed),
    }
    if len(runs) >= 2 and both.any():
        out.update(ranking_effect(matrix, people, llm, runs, measure))
    return out


def ranking_effect(matrix: LabelMatrix, reference: np.ndarray, other: np.ndarray,
                   runs: Sequence[Any], measure: str) -> dict[str, Any]:
    """Kendall's τ (τ-b, scipy) between the systems' mean ``measure`` under the
    ``reference`` labels and under the ``other`` labels, both restricted to the items
    labelled in both (so only the labels differ, not which documents are judged)."""
    from scipy.stats import kendalltau  # lazy: loads scipy, numpy on first use

    both = np.flatnonzero(~np.isnan(reference) & ~np.isnan(other))
    qids = [matrix.items[i][0] for i in both]
    dids = [matrix.items[i][1] for i in both]
    ref_q = Qrels.from_columns(qids, dids, reference[both].astype(np.int64))
    oth_q = Qrels.from_columns(qids, dids, other[both].astype(np.int64))
    systems: dict[str, tuple[float, float]] = {}
    for run in runs:
        a = evaluate(ref_q, run, [measure]).mean
        b = evaluate(oth_q, run, [measure]).mean
        key = next(iter(a))
        systems[run.name] = (a[key], b[key])
    tau = kendalltau([v[0] for v in systems.values()], [v[1] for v in systems.values()])
    return {"kendall_tau": float(tau.statistic), "ranking_measure": measure,
            "systems": systems}
