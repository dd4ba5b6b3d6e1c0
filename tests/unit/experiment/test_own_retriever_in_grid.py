"""Your own retriever (``type = "python"``) in an experiment grid, alone and as a hybrid part:
its cells equal what the callable returns, and the hybrid equals fusing the parts' runs."""

from __future__ import annotations

import textwrap

import pytest

import searchbench as sb
from searchbench.errors import ConfigError
from searchbench.experiment import load_config, run_experiment

pytest.importorskip("bm25s")


def test_a_python_retriever_runs_in_a_grid_and_as_a_hybrid_part(tmp_path, monkeypatch):
    es = sb.load_evalset("pyref")
    ids = [d.id for d in es.corpus][:20]
    (tmp_path / "grid_mine.py").write_text(
        f"IDS = {ids!r}\n"
        "def build(offset=0):\n"
        "    def retrieve(queries: list[str], k: int):\n"
        "        return [[(IDS[(i + offset) % len(IDS)], 1.0 / (i + 1))\n"
        "                 for i in range(min(k, len(IDS)))]\n"
        "                for _ in queries]\n"
        "    return retrieve\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg_path = tmp_path / "grid.toml"
    cfg_path.write_text(textwrap.dedent("""
        name = "own"
        evalset = "pyref"
        k = 10
        chunkers = ["none"]
        levels = ["doc"]
        [[retrievers]]
        name = "bm25"
        type = "bm25"
        [[retrievers]]
        name = "mine"
        type = "python"
        target = "grid_mine:build"
        kwargs = { offset = 3 }
        [[retrievers]]
        name = "mix"
        type = "hybrid"
        of = ["bm25", "mine"]
        """), encoding="utf-8")
    cfg = load_config(cfg_path)
    with pytest.warns(sb.SearchbenchWarning, match=r"run 'mine': only"):  # a fixed list
        summary = run_experiment(cfg, tmp_path / "store.sqlite", quiet=True)
    qrels = es.qrels
    mine = sb.retrieval.from_callable(
        lambda q, k: [(ids[(i + 3) % len(ids)], 1.0 / (i + 1))
                      for i in range(min(k, len(ids)))])
    expected = mine.index(es.corpus).search(es.judged_queries, k=10)
    from searchbench.experiment import ResultsStore

    with ResultsStore(tmp_path / "store.sqlite") as db:
        cells = {c.system: c for c in db.cells(summary.experiment_id)}
    got = cells["mine"].scores["nDCG@10"]
    want = sb.evaluate(qrels, expected, ["nDCG@10"])
    assert got == pytest.approx(dict(zip(want.query_ids.tolist(),
                                         want.scores["nDCG@10"].tolist(), strict=True)))
    assert "mix" in cells and cells["mix"].scores["nDCG@10"]


def test_a_python_retriever_without_target_is_one_config_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('evalset = "pyref"\n[[retrievers]]\nname = "mine"\ntype = "python"\n',
                    encoding="utf-8")
    with pytest.raises(ConfigError, match="target"):
        load_config(path)
