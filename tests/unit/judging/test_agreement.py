"""Agreement statistics against their references: sklearn's cohen_kappa_score (unweighted,
linear, quadratic), statsmodels' fleiss_kappa and the krippendorff package, on the same
generated labels (missing labels included); Kendall's tau of the ranking effect against
pytrec_eval + scipy."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pytest
import pytrec_eval
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import searchbench as sb
from searchbench.data import Run
from searchbench.errors import ConfigError
from searchbench.judging import Judgment, cohen_kappa, fleiss_kappa, krippendorff_alpha
from searchbench.judging.agreement import disagreements, label_matrix, majority_grade


def _labels(seed: int, n_items: int = 150, n_raters: int = 4, noise: float = 0.8,
            missing: float = 0.0) -> np.ndarray:
    """Items × raters grades 0-3: a true grade plus rater noise; NaN where missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n_items)
    noisy = truth[:, None] + np.rint(rng.normal(0, noise, (n_items, n_raters)))
    labels = np.clip(noisy, 0, 3).astype(float)
    labels[rng.random(labels.shape) < missing] = np.nan
    return labels


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weights", ["none", "linear", "quadratic"])
def test_cohen_kappa_equals_sklearn(seed: int, weights: str) -> None:
    labels = _labels(seed, missing=0.2)
    a, b = labels[:, 0], labels[:, 1]
    both = ~np.isnan(a) & ~np.isnan(b)
    expected = cohen_kappa_score(a[both].astype(int), b[both].astype(int), labels=[0, 1, 2, 3],
                                 weights=None if weights == "none" else weights)
    got = cohen_kappa(a, b, weights=weights, n_boot=0)
    assert got.value == pytest.approx(expected, abs=1e-12)
    assert got.n_items == int(both.sum())


def test_cohen_kappa_with_a_grade_nobody_used_equals_sklearn_on_the_full_scale() -> None:
    a = np.array([0, 1, 3, 3, 1, 0, 3, 1], dtype=float)  # nobody says 2
    b = np.array([0, 1, 3, 1, 1, 0, 3, 3], dtype=float)
    for weights in ("linear", "quadratic"):
        expected = cohen_kappa_score(a.astype(int), b.astype(int), labels=[0, 1, 2, 3],
                                     weights=weights)
        assert cohen_kappa(a, b, weights=weights, n_boot=0).value == pytest.approx(expected)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("raters", [3, 5])
def test_fleiss_kappa_equals_statsmodels(seed: int, raters: int) -> None:
    labels = _labels(seed, n_raters=raters)
    table, _ = aggregate_raters(labels.astype(int), n_cat=4)
    assert fleiss_kappa(labels, n_boot=0).value == pytest.approx(sm_fleiss_kappa(table),
                                                                 abs=1e-12)


def test_fleiss_kappa_uses_the_items_every_annotator_labelled() -> None:
    labels = _labels(4, n_raters=3, missing=0.15)
    complete = labels[~np.isnan(labels).any(axis=1)]
    table, _ = aggregate_raters(complete.astype(int), n_cat=4)
    got = fleiss_kappa(labels, n_boot=0)
    assert got.value == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)
    assert got.n_items == len(complete)


@pytest.mark.parametrize("level", ["ordinal", "nominal", "interval"])
@pytest.mark.parametrize(("seed", "missing"), [(0, 0.0), (1, 0.3), (2, 0.5)])
def test_krippendorff_alpha_equals_the_krippendorff_package(level: str, seed: int,
                                                             missing: float) -> None:
    labels = _labels(seed, missing=missing)
    expected = krippendorff.alpha(reliability_data=labels.T, level_of_measurement=level,
                                  value_domain=[0, 1, 2, 3])
    assert krippendorff_alpha(labels, level=level, n_boot=0).value == pytest.approx(
        expected, abs=1e-10)


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate() -> None:
    labels = _labels(7, missing=0.2)
    one = krippendorff_alpha(labels, n_boot=300, seed=11)
    two = krippendorff_alpha(labels, n_boot=300, seed=11)
    other = krippendorff_alpha(labels, n_boot=300, seed=12)
    assert (one.low, one.high) == (two.low, two.high)
    assert (one.low, one.high) != (other.low, other.high)
    assert one.low < one.value < one.high


def test_bootstrap_matches_a_direct_resampling_of_the_items() -> None:
    """The weighted (multiplicity) form equals recomputing sklearn on resampled items."""
    labels = _labels(5)
    a, b = labels[:, 0], labels[:, 1]
    got = cohen_kappa(a, b, n_boot=200, seed=3)
    rng = np.random.default_rng(3)
    n = len(a)
    values = []
    for mult in rng.multinomial(n, np.full(n, 1.0 / n), size=200):
        idx = np.repeat(np.arange(n), mult)
        values.append(cohen_kappa_score(a[idx].astype(int), b[idx].astype(int)))
    low, high = np.percentile(values, [2.5, 97.5])
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)


def test_unknown_weights_or_level_are_config_errors() -> None:
    a = np.array([0.0, 1.0])
    with pytest.raises(ConfigError, match="linear or quadratic"):
        cohen_kappa(a, a, weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="ordinal, nominal or interval"):
        krippendorff_alpha(np.array([[0.0, 1.0]]), level="ratio")  # type: ignore[arg-type]


def _judgments(labels: np.ndarray, names: list[str], kinds: list[str]) -> list[Judgment]:
    out = []
    for i, j in itertools.product(range(labels.shape[0]), range(labels.shape[1])):
        if not np.isnan(labels[i, j]):
            out.append(Judgment(f"q{i // 5}", f"d{i % 5}", names[j], int(labels[i, j]),
                                kind=kinds[j]))  # type: ignore[arg-type]
    return out


def test_agreement_report_people_and_llm_against_the_references() -> None:
    labels = _labels(9, n_items=60, n_raters=4, missing=0.1)
    names = ["alice", "bob", "carol", "llm:m@v1"]
    judgments = _judgments(labels, names, ["human", "human", "human", "llm"])
    judgments.append(Judgment("q0", "d0", "alice", None))  # a later skip: no label
    report = sb.judging.agreement(judgments, n_boot=50)
    people = labels[:, :3].copy()
    people[0, 0] = np.nan
    both = ~np.isnan(people[:, 0]) & ~np.isnan(people[:, 1])
    assert report.pairs["alice vs bob"]["kappa_quadratic"].value == pytest.approx(
        cohen_kappa_score(people[both, 0].astype(int), people[both, 1].astype(int),
                          labels=[0, 1, 2, 3], weights="quadratic"))
    complete = people[~np.isnan(people).any(axis=1)]
    table, _ = aggregate_raters(complete.astype(int), n_cat=4)
    assert report.fleiss is not None
    assert report.fleiss.value == pytest.approx(sm_fleiss_kappa(table))
    assert report.alpha is not None
    assert report.alpha.value == pytest.approx(krippendorff.alpha(
        reliability_data=people.T, level_of_measurement="ordinal"))
    # the LLM against the people's majority (a tie goes to the lowest tied grade)
    majority = []
    for row in people:
        grades = row[~np.isnan(row)].astype(int)
        counts = np.bincount(grades, minlength=4)
        majority.append(float(np.flatnonzero(counts == counts.max())[0]) if len(grades)
                        else np.nan)
    ref = np.array(majority)
    llm = labels[:, 3]
    ok = ~np.isnan(ref) & ~np.isnan(llm)
    stats = report.llm["llm:m@v1"]
    assert stats["kappa"].value == pytest.approx(
        cohen_kappa_score(ref[ok].astype(int), llm[ok].astype(int)))
    assert stats["exact"] == pytest.approx(float((ref[ok] == llm[ok]).mean()))
    assert "alice" in report.to_text() and "llm:m@v1" in report.summary()


def test_majority_ties_go_to_the_lowest_grade() -> None:
    rows = np.array([[1, 3, np.nan], [2, 2, 0], [np.nan, np.nan, np.nan]])
    got = majority_grade(rows)
    assert got[:2].tolist() == [1.0, 2.0] and np.isnan(got[2])


def test_disagreements_list_wide_spreads_ties_and_far_llm_labels() -> None:
    judgments = [
        Judgment("q1", "d1", "a", 0), Judgment("q1", "d1", "b", 3),   # spread 3 (and tie)
        Judgment("q1", "d2", "a", 1), Judgment("q1", "d2", "b", 2),   # tie, spread 1
        Judgment("q1", "d3", "a", 2), Judgment("q1", "d3", "b", 2),   # agree
        Judgment("q1", "d3", "llm:x@1", 0, kind="llm"),               # LLM 2 away
        Judgment("q2", "d1", "a", 3), Judgment("q2", "d1", "b", 3),   # agree
        Judgment("q2", "d1", "llm:x@1", 2, kind="llm"),               # LLM 1 away
    ]
    found = {(d.query_id, d.doc_id): d for d in disagreements(label_matrix(judgments))}
    assert set(found) == {("q1", "d1"), ("q1", "d2"), ("q1", "d3")}
    assert found[("q1", "d1")].spread == 3
    assert "tied" in found[("q1", "d2")].reason
    assert "LLM" in found[("q1", "d3")].reason
    assert next(iter(found)) == ("q1", "d1")  # the largest spread first


def test_ranking_effect_kendall_tau_against_pytrec_eval_and_scipy() -> None:
    rng = np.random.default_rng(2)
    docs = [f"d{i}" for i in range(12)]
    judgments = []
    for q in ("q1", "q2", "q3"):
        for d in docs:
            human = int(rng.integers(0, 4))
            judgments.append(Judgment(q, d, "alice", human))
            llm = int(np.clip(human + rng.integers(-2, 3), 0, 3))
            judgments.append(Judgment(q, d, "llm:m@v1", llm, kind="llm"))
    runs = []
    for r in range(4):
        ranking = {q: {d: float(rng.random()) for d in docs} for q in ("q1", "q2", "q3")}
        runs.append((f"run{r}", ranking))
    report = sb.judging.agreement(judgments, runs=[Run.from_dict(x, name=n) for n, x in runs],
                                  n_boot=0)
    stats = report.llm["llm:m@v1"]

    def means(annotator: str) -> list[float]:
        qrels = {}
        for j in judgments:
            if j.annotator == annotator:
                qrels.setdefault(j.query_id, {})[j.doc_id] = j.grade
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
        return [float(np.mean([v["ndcg_cut_10"] for v in ev.evaluate(x).values()]))
                for _, x in runs]

    expected = kendalltau(means("alice"), means("llm:m@v1")).statistic
    assert stats["kendall_tau"] == pytest.approx(expected)
    assert [h for h, _ in stats["systems"].values()] == pytest.approx(means("alice"))
