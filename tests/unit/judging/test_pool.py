"""Pooling: the union of the runs' top d minus what is judged (qrels and store), in judging
order, and Judged@10 before/after — checked against a plain-Python computation from the
definition; bad input named with counts and examples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import searchbench as sb
from searchbench.data import Run
from searchbench.errors import ConfigError, DataFormatError
from searchbench.judging import Judgment, JudgmentStore, read_pool


def _set(tmp_path: Path, n_docs: int = 40, n_queries: int = 6) -> Path:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(
        f'{{"id": "d{i}", "text": "text {i}"}}\n' for i in range(n_docs)))
    # queries.jsonl order differs from sorted id order: the pool follows the file
    (folder / "queries.jsonl").write_text("".join(
        f'{{"id": "q{i}", "text": "query {i}"}}\n' for i in reversed(range(n_queries))))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n")
    return folder


def _runs(seed: int, n_runs: int = 3, n_docs: int = 40, n_queries: int = 6,
          k: int = 25) -> list[dict[str, dict[str, float]]]:
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(n_runs):
        run = {}
        for q in range(n_queries):
            docs = rng.choice(n_docs, size=k, replace=False)
            run[f"q{q}"] = {f"d{d}": float(k - r) for r, d in enumerate(docs)}
        runs.append(run)
    return runs


def _ranked(run: dict[str, float]) -> list[str]:
    """Rank order: score descending (the generated scores are distinct per query)."""
    return [d for d, _ in sorted(run.items(), key=lambda x: -x[1])]


def _expected(runs: list[dict], judged: set[tuple[str, str]], depth: int,
              query_order: list[str]) -> list[tuple[str, str, int, int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        for q, docs in run.items():
            for rank, d in enumerate(_ranked(docs)[:depth], 1):
                found.setdefault((q, d), []).append(rank)
    rows = [(q, d, len(r), min(r)) for (q, d), r in found.items() if (q, d) not in judged]
    return sorted(rows, key=lambda x: (query_order.index(x[0]), -x[2], x[3], x[1]))


def _judged_at_10(run: dict, judged: set[tuple[str, str]]) -> float:
    return float(np.mean([sum((q, d) in judged for d in _ranked(docs)[:10]) / 10
                          for q, docs in run.items()]))


def test_pool_equals_the_definition_and_reports_judged_at_10(tmp_path: Path) -> None:
    folder = _set(tmp_path)
    raw = _runs(0)
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\td{d}\t{(q + d) % 3}\n" for q in range(6) for d in range(0, 40, 3)))
    with JudgmentStore(folder) as store:
        store.record(Judgment("q1", "d1", "alice", 2))
        store.record(Judgment("q2", "d2", "alice", None))  # a skip is not a judgment
    judged = {(f"q{q}", f"d{d}") for q in range(6) for d in range(0, 40, 3)} | {("q1", "d1")}
    runs = [Run.from_dict(r, name=f"r{i}") for i, r in enumerate(raw)]
    result = sb.pool(folder, runs, depth=7, output=folder / "pool.jsonl")
    order = [f"q{i}" for i in reversed(range(6))]
    expected = _expected(raw, judged, 7, order)
    got = [(i.query_id, i.doc_id, i.n_runs, i.best_rank) for i in result.items]
    assert got == expected
    assert [(i.query_id, i.doc_id) for i in read_pool(folder / "pool.jsonl")] == \
        [g[:2] for g in got]
    after = judged | {(q, d) for q, d, _, _ in expected}
    for cov, run in zip(result.runs, raw, strict=True):
        assert cov.judged_now == pytest.approx(_judged_at_10(run, judged))
        assert cov.judged_after == pytest.approx(_judged_at_10(run, after))
    assert result.already_judged == len({(q, d) for q, d in _all_pairs(raw, 7)} & judged)
    assert "Judged@10" in result.to_text()


def _all_pairs(runs: list[dict], depth: int) -> set[tuple[str, str]]:
    return {(q, d) for run in runs for q, docs in run.items() for d in _ranked(docs)[:depth]}


def test_a_deep_pool_judges_every_top_10(tmp_path: Path) -> None:
    folder = _set(tmp_path)
    runs = [Run.from_dict(r, name=f"r{i}") for i, r in enumerate(_runs(1))]
    result = sb.pool(folder, runs, depth=10)
    assert all(c.judged_now == 0.0 and c.judged_after == 1.0 for c in result.runs)


def test_pool_from_files_and_an_evalset_object(tmp_path: Path) -> None:
    folder = _set(tmp_path)
    raw = _runs(2, n_runs=2)
    paths = []
    for i, r in enumerate(raw):
        path = tmp_path / f"r{i}.trec"
        Run.from_dict(r).to_file(path)
        paths.append(path)
    from_files = sb.pool(folder, paths, depth=5)
    es = sb.load_evalset(str(folder))
    from_object = sb.pool(es, [Run.from_dict(r) for r in raw], depth=5)
    assert from_files.items == from_object.items
    assert [c.name for c in from_files.runs] == ["r0.trec", "r1.trec"]


def test_pool_bad_input(tmp_path: Path) -> None:
    folder = _set(tmp_path)
    with pytest.raises(ConfigError, match="at least one run"):
        sb.pool(folder, [])
    stray = Run.from_dict({"q1": {"d1": 3.0, "x9": 2.0, "x8": 1.0}, "q2": {"x9": 1.0}},
                          name="other")
    with pytest.raises(DataFormatError, match=r"other: 3 of 4 entries name 2 documents "
                                              r"missing from the corpus \(e.g. 'x8', 'x9'\)"):
        sb.pool(folder, [stray])
    unknown = Run.from_dict({"q1": {"d1": 1.0}, "zz": {"d2": 1.0}}, name="u")
    with pytest.raises(DataFormatError, match=r"u: 1 of 2 queries are not in the set "
                                              r"\(e.g. 'zz'\)"):
        sb.pool(folder, [unknown])
    (folder / "queries.jsonl").write_text("")
    with pytest.raises(DataFormatError, match="no queries; add some first"):
        sb.pool(folder, [unknown])


def test_a_one_line_trec_qrels_is_a_judgment_not_a_header(tmp_path: Path) -> None:
    folder = _set(tmp_path)
    (folder / "qrels.tsv").write_text("query1 0 d1 1\n")
    from searchbench.judging.pool import judged_pairs

    assert judged_pairs(folder) == [("query1", "d1")]
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n")
    assert judged_pairs(folder) == []

