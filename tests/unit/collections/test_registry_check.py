"""Spec parsing, the pyref contract, and the check helpers (detectable difference)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbench.collections import registry
from searchbench.collections.check import check_evalset, detectable_difference, evalset_stats
from searchbench.collections.registry import list_datasets, load_evalset, parse_spec
from searchbench.errors import ConfigError


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("pyref", ("pyref", "")), ("beir:a/b", ("beir", "a/b")),
     ("beir-download:scifact", ("beir-download", "scifact")),
     ("cranfield:/x", ("cranfield", "/x")), ("some/folder", ("native", "some/folder")),
     ("native:d", ("native", "d")), ("trec:a,b,c", ("trec", "a,b,c"))],
)
def test_parse_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_spec(spec) == expected


def test_bad_specs() -> None:
    with pytest.raises(ConfigError, match="unknown evaluation set 'trek:x'"):
        parse_spec("trek:x")
    with pytest.raises(ConfigError, match="nothing after 'beir:'"):
        parse_spec("beir:")
    with pytest.raises(ConfigError, match="expected 'trec:DOCS,TOPICS,QRELS'"):
        parse_spec("trec:")
    with pytest.raises(ConfigError, match="no such folder"):
        load_evalset("/no/such/folder")


def test_pyref_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(registry, "PYREF_DIR", tmp_path / "pyref")
    with pytest.raises(ConfigError, match="built-in set 'pyref' is not part of this installation"):
        load_evalset("pyref")
    assert next(r for r in list_datasets() if r["spec"] == "pyref")["available"] is False


def test_pyref_loads_a_native_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    folder = tmp_path / "pyref"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"id": "d", "text": "for loops"}\n')
    (folder / "queries.jsonl").write_text(
        '{"id": "q", "text": "loop?", "source": "curated", "verified": true}\n')
    (folder / "qrels.tsv").write_text("q\td\t3\n")
    (folder / "evidence.jsonl").write_text(
        json.dumps({"query_id": "q", "doc_id": "d", "grade": 3, "quote": "loops"}) + "\n")
    monkeypatch.setattr(registry, "PYREF_DIR", folder)
    es = load_evalset("pyref")
    assert es.name == "pyref" and es.provenance["format"] == "builtin"
    assert es.evidence[0].start == 4
    assert check_evalset(es).ok


def test_detectable_difference() -> None:
    # (t_{.975,29} + t_{.8,29}) * 0.2 / sqrt(30) = (2.0452 + 0.8538) * 0.2 / 5.4772
    assert detectable_difference(30) == pytest.approx(0.10586, abs=1e-4)
    assert detectable_difference(30, sd=0.1) == pytest.approx(0.10586 / 2, abs=1e-4)
    assert detectable_difference(200) < detectable_difference(50) < detectable_difference(10)
    assert detectable_difference(1) == float("inf")


def test_stats_distributions(tmp_path: Path) -> None:
    from searchbench.data.evalset import EvalSet
    from searchbench.data.qrels import Qrels
    from searchbench.data.texts import Corpus, Document, Queries, Query

    es = EvalSet(Corpus([Document("a", "one two three"), Document("b", "four", "title")]),
                 Queries([Query("q", "x y")]), Qrels.from_dict({"q": {"a": 2, "b": 0}}))
    st = evalset_stats(es)
    assert st["grades"] == {0: 1, 2: 1}
    assert st["document_words"]["max"] == 3 and st["document_words"]["min"] == 2
    assert st["relevant_per_query"]["mean"] == 1 and st["judged_per_query"]["mean"] == 2


@pytest.mark.parametrize("n", [10, 30, 49])
def test_detectable_difference_has_the_stated_power(n: int) -> None:
    """At δ the exact noncentral-t power of the two-sided paired test is 0.8 (±0.005)."""
    import numpy as np
    from scipy import stats

    delta, df = detectable_difference(n, sd=0.2), n - 1
    nc, crit = delta * np.sqrt(n) / 0.2, stats.t.ppf(0.975, df)
    power = stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc)
    assert power == pytest.approx(0.8, abs=0.005)


@pytest.mark.parametrize("n", [2, 3, 10, 49])
def test_detectable_difference_solves_the_shared_power_function(n: int) -> None:
    from searchbench.stats.effects import paired_t_power

    for alpha in (0.05, 0.01):
        delta = detectable_difference(n, sd=0.2, alpha=alpha)
        assert paired_t_power(delta / 0.2, n, alpha) == pytest.approx(0.8, abs=1e-6)


def _tiny_set(n_judged: int):
    from searchbench.data.evalset import EvalSet
    from searchbench.data.qrels import Qrels
    from searchbench.data.texts import Corpus, Document, Queries, Query

    return EvalSet(Corpus([Document("a", "one two"), Document("b", "three")]),
                   Queries([Query(f"q{i}", "x y") for i in range(n_judged)]),
                   Qrels.from_dict({f"q{i}": {"a": 1, "b": 1} for i in range(n_judged)}))


def test_small_set_warning_for_one_judged_query_says_why() -> None:
    from searchbench.stats.effects import queries_for_power

    needed = queries_for_power(0.05 / 0.2, alpha=0.05, power=0.8)
    [one] = [w.message for w in check_evalset(_tiny_set(1)).warnings if w.kind == "small-set"]
    assert "inf" not in one and "only 1 judged query: a paired t-test needs at least 2" in one
    assert f"{needed} queries would detect an nDCG@10 difference of 0.05" in one
    [five] = [w.message for w in check_evalset(_tiny_set(5)).warnings if w.kind == "small-set"]
    assert f"{detectable_difference(5):.3f} or more" in five
    assert five.endswith(f"; {needed} queries would detect 0.05")


def test_list_datasets_expands_a_tilde_in_the_cache_variable(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from searchbench.collections.download import BEIR_MD5, MARKER, cache_root

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SEARCHBENCH_CACHE", "~/sbcache")
    name = next(iter(BEIR_MD5))
    marker = tmp_path / "sbcache" / "beir" / name / MARKER
    marker.parent.mkdir(parents=True)
    marker.write_text(BEIR_MD5[name])
    assert cache_root() == tmp_path / "sbcache"
    [row] = [r for r in list_datasets() if r["spec"] == f"beir-download:{name}"]
    assert row["available"] is True


def _evidence_set(evidence_docs: list[str]):
    from searchbench.data.evalset import EvalSet, Evidence
    from searchbench.data.qrels import Qrels
    from searchbench.data.texts import Corpus, Document, Queries, Query

    corpus = Corpus([Document("a", "the answer is here"), Document("b", "also relevant"),
                     Document("c", "off topic")])
    ev = tuple(Evidence("q1", d, 1, corpus[d].text[:4], 0, 4) for d in evidence_docs)
    return EvalSet(corpus, Queries([Query("q1", "x"), Query("q2", "y")]),
                   Qrels.from_dict({"q1": {"a": 1, "b": 2, "c": 0}, "q2": {"a": 1, "b": 1}}),
                   ev)


def test_partial_evidence_is_warned_with_the_unquoted_documents() -> None:
    [msg] = [w.message for w in check_evalset(_evidence_set(["a"])).warnings
             if w.kind == "partial-evidence"]
    assert msg.startswith("1 queries have evidence quotes for some relevant documents but not "
                          "for 1 others ('q1/b')")
    for complete in (["a", "b"], []):  # every relevant doc quoted, or no evidence at all
        kinds = [w.kind for w in check_evalset(_evidence_set(complete)).warnings]
        assert "partial-evidence" not in kinds
