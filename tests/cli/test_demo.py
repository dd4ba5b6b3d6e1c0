"""``searchbench demo`` runs the systems that need no model first and prints their table,
then fills in the model-based rows chunk size by chunk size, then the complete tables."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from searchbench.cli.demo_cmd import demo_stages
from searchbench.cli.main import main
from searchbench.experiment import ResultsStore, load_config


def _data_module():
    """The tiny evaluation set of the experiment unit tests (loaded by path)."""
    path = Path(__file__).resolve().parents[1] / "unit" / "experiment" / "_data.py"
    spec = importlib.util.spec_from_file_location("_experiment_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config(tmp_path: Path, retrievers: str, baseline: str = "bm25",
            chunkers: str = '["none", "tokens:8:2", "tokens:16"]') -> str:
    set_dir = tmp_path / "set"
    if not set_dir.is_dir():
        _data_module().write_set(set_dir)
    return (f'name = "staged"\nevalset = "{set_dir}"\nchunkers = {chunkers}\n'
            f'levels = ["doc", "chunk"]\nmeasures = ["nDCG@10", "R@10"]\n'
            f'baseline = "{baseline}"\nn_permutations = 200\n' + retrievers)


MIXED = """
[[retrievers]]
name = "bm25"
type = "bm25"

[[retrievers]]
name = "minilm"
type = "dense"
model = "minilm"

[[retrievers]]
name = "bm25-plain"
type = "bm25"
stemmer = false

[[retrievers]]
name = "hybrid"
type = "hybrid"
of = ["bm25", "minilm"]

[[retrievers]]
name = "lexical-hybrid"
type = "hybrid"
of = ["bm25", "bm25-plain"]
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "exp.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def _labels(cells) -> set[str]:
    return {f"{c.level} {c.system}" for c in cells}


def test_stages_run_the_lexical_retrievers_first_then_one_chunk_size_at_a_time(tmp_path):
    cfg = _load(tmp_path, _config(tmp_path, MIXED))
    stages = demo_stages(cfg)
    assert stages[-1] is cfg and len(stages) == 1 + len(cfg.chunkers)
    lexical = ["bm25", "bm25-plain", "lexical-hybrid"]
    assert [r.name for r in stages[0].retrievers] == lexical
    assert stages[0].chunkers == cfg.chunkers
    # then every retriever (config order) at the first chunker, the first two, …
    for i, stage in enumerate(stages[1:], start=1):
        assert [r.name for r in stage.retrievers] == [r.name for r in cfg.retrievers]
        assert stage.chunkers == cfg.chunkers[:i]
    # every sub-grid compares with the config's baseline system, named explicitly
    assert {s.baseline_system() for s in stages} == {"bm25"}
    assert all(s.baseline == "bm25" for s in stages[:-1])
    # each stage adds: all lexical cells, then the model cells of one more chunker
    seen: set[str] = set()
    added = []
    for stage in stages:
        cells = _labels(stage.cells())
        added.append(cells - seen)
        seen |= cells
    assert seen == _labels(cfg.cells())
    assert added[0] == {lbl for lbl in seen if lbl.split()[1].split("/")[0] in lexical}
    for chunker, new in zip(cfg.chunkers, added[1:], strict=True):
        system = {"none": "{}"}.get(chunker, "{}/" + chunker)
        assert new == {f"{lvl} {system.format(r)}" for r in ("minilm", "hybrid")
                       for lvl in cfg.levels if not (lvl == "chunk" and chunker == "none")}


@pytest.mark.parametrize("retrievers, baseline", [
    (MIXED, "minilm"),  # the baseline needs the model: no table before it is done
    (MIXED.split("[[retrievers]]\nname = \"minilm\"")[0], "bm25"),  # nothing needs a model
])
def test_no_stages_when_the_baseline_needs_a_model_or_nothing_does(tmp_path, retrievers,
                                                                   baseline):
    text = _config(tmp_path, retrievers, baseline)
    if "minilm" not in retrievers:
        text += '\n[[retrievers]]\nname = "plain"\ntype = "bm25"\nstemmer = false\n'
    cfg = _load(tmp_path, text)
    assert demo_stages(cfg) == [cfg]


@pytest.mark.slow  # loads the packaged MiniLM (seconds on the tiny set)
def test_demo_prints_the_bm25_table_first_then_fills_in_the_model_rows(tmp_path, capsys,
                                                                      monkeypatch):
    import searchbench.cli.demo_cmd as demo

    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    text = _config(tmp_path, MIXED.split("[[retrievers]]\nname = \"bm25-plain\"")[0]
                   + '[[retrievers]]\nname = "hybrid"\ntype = "hybrid"\n'
                     'of = ["bm25", "minilm"]\n', chunkers='["none", "tokens:8:2"]')

    def staged_config(out: Path) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        (out / "demo.toml").write_text(text, encoding="utf-8")
        return out / "demo.toml"

    monkeypatch.setattr(demo, "_config_file", staged_config)
    out = tmp_path / "demo-out"
    assert main(["demo", "-o", str(out), "--quiet"]) == 0
    stdout = capsys.readouterr().out
    first, rest = stdout.split("\nadded after ", 1)
    added, complete = rest.split("\ncomplete tables:", 1)
    # 1. BM25 alone, at both chunkings and both levels, before any model ran
    assert "first results after " in first and "3 of 9 cells finished; 6 still running" in first
    assert "set · document level · 6 queries · first results" in first
    assert "chunk level" not in first  # one system there so far: nothing to compare
    assert "bm25/tokens:8:2" in first and "minilm" not in first and "hybrid" not in first
    # 2. the rows the first chunker's model stage added (with the baseline's for reference)
    assert added.splitlines()[0].endswith(" s: 5 of 9 cells finished; 4 still running")
    rows = [line.split("│")[1].strip() for line in added.splitlines() if line.startswith("│")]
    assert rows == ["bm25 (baseline)", "minilm", "hybrid"]
    # bm25/tokens:8:2, minilm and hybrid against the baseline: Holm over those three so far
    assert "correction over the 3 systems compared so far" in " ".join(added.split())
    # 3. the complete tables: every system, the standard legend
    table_rows = [line.split("│")[1].strip() for line in complete.splitlines()
                  if line.startswith("│")]
    assert table_rows == ["bm25 (baseline)", "minilm", "hybrid", "bm25/tokens:8:2",
                          "minilm/tokens:8:2", "hybrid/tokens:8:2",  # document level
                          "bm25/tokens:8:2 (baseline)", "minilm/tokens:8:2",
                          "hybrid/tokens:8:2"]  # chunk level
    assert "9 cells run, 0 reused" in complete
    # the store ends as `experiment run` of the whole config leaves it
    with ResultsStore(out / "demo.sqlite") as db:
        [exp] = db.experiments()
        stored = db.experiment(exp["id"])["config"]
    assert [r["name"] for r in stored["retrievers"]] == ["bm25", "minilm", "hybrid"]
    assert stored["chunkers"] == ["none", "tokens:8:2"] and stored["baseline"] == "bm25"
    # a second run re-reads the store: no partial tables
    assert main(["demo", "-o", str(out), "--quiet"]) == 0
    again = capsys.readouterr().out
    assert "first results" not in again and "added after" not in again
    assert "0 cells run, 9 reused" in again
