"""Experiment config: validation errors name the key and the allowed values; the grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchbench.errors import ConfigError
from searchbench.experiment import example_config, expand_grid, load_config, parse_config

BASE = {"evalset": "pyref", "retrievers": [{"name": "bm25", "type": "bm25"}]}


def _cfg(**changes):
    data = {**BASE, **changes}
    return parse_config({k: v for k, v in data.items() if v is not None})


def _error(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def test_example_config_is_valid_and_expands(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(example_config(), encoding="utf-8")
    cfg = load_config(path)
    cells = cfg.cells()
    # 4 retrievers × 2 chunkers × 2 levels
    assert len(cells) == 16
    assert {c.level for c in cells} == {"doc", "chunk"}
    assert cfg.baseline_system() == "bm25/tokens:64:8"
    assert cfg.measures == ["nDCG@10", "RR@10", "R@10", "R@100", "AP", "P@10"]


def test_unknown_top_level_key(tmp_path):
    msg = _error(tmp_path / "a.toml", 'evalset = "pyref"\nchunker = ["none"]\n'
                                       '[[retrievers]]\ntype = "bm25"\n')
    assert "unknown top-level key 'chunker'" in msg
    assert "chunkers" in msg and "retrievers" in msg  # the allowed keys are listed


def test_unknown_retriever_key_lists_allowed(tmp_path):
    msg = _error(tmp_path / "a.toml", 'evalset = "pyref"\n[[retrievers]]\ntype = "bm25"\n'
                                       'k3 = 1.0\n')
    assert "key 'retrievers.bm25.k3'" in msg and "k1" in msg and "b" in msg


def test_wrong_type_names_key_and_expected_type():
    with pytest.raises(ConfigError, match=r"key 'k' is '100' \(str\); expected an integer"):
        _cfg(k="100")
    with pytest.raises(ConfigError, match=r"key 'seed' is True \(bool\); expected an integer"):
        _cfg(seed=True)


def test_invalid_toml_is_a_config_error(tmp_path):
    assert "not valid TOML" in _error(tmp_path / "a.toml", "evalset = \n")


def test_missing_file_says_how_to_create_one(tmp_path):
    with pytest.raises(ConfigError, match="experiment init"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize("changes, needle", [
    ({"retrievers": []}, "grid is empty"),
    ({"evalset": []}, "the grid is empty"),
    ({"levels": ["chunk"], "chunkers": ["none"]}, "grid is empty"),
    ({"levels": []}, "expected a non-empty list of doc, chunk"),
])
def test_empty_grid(changes, needle):
    with pytest.raises(ConfigError, match=needle):
        _cfg(**changes)


def test_unknown_level_and_type_list_allowed_values():
    with pytest.raises(ConfigError, match="unknown level 'page'; expected one of doc, chunk"):
        _cfg(levels=["page"])
    with pytest.raises(ConfigError, match="expected one of bm25, dense, hybrid"):
        _cfg(retrievers=[{"type": "splade"}])


def test_bad_chunker_measure_test_correction():
    with pytest.raises(ConfigError, match=r"key 'chunkers'.*tokens:SIZE"):
        _cfg(chunkers=["tokens:abc"])
    with pytest.raises(ConfigError, match="key 'measures'"):
        _cfg(measures=["nDCG@ten"])
    with pytest.raises(ConfigError, match=r"key 'test'.*randomization"):
        _cfg(test="anova")
    with pytest.raises(ConfigError, match=r"key 'correction'.*holm"):
        _cfg(correction="sidak")


def test_hybrid_needs_known_components():
    retrievers = [{"name": "bm25", "type": "bm25"},
                  {"name": "h", "type": "hybrid", "of": ["bm25", "dense"]}]
    with pytest.raises(ConfigError, match=r"key 'retrievers.h.of'.*bm25"):
        _cfg(retrievers=retrievers)
    retrievers[1] = {"name": "h", "type": "hybrid", "of": ["bm25", "bm25b"], "fusion": "max"}
    retrievers.append({"name": "bm25b", "type": "bm25", "k1": 1.2})
    with pytest.raises(ConfigError, match=r"key 'retrievers.h.fusion'.*rrf, weighted"):
        _cfg(retrievers=retrievers)


def test_duplicate_names_and_unknown_baseline():
    with pytest.raises(ConfigError, match=r"unique.*bm25"):
        _cfg(retrievers=[{"type": "bm25"}, {"type": "bm25"}])
    with pytest.raises(ConfigError, match="key 'baseline' is 'dense'; allowed values: bm25"):
        _cfg(baseline="dense")


def test_unknown_model_and_evalset_fail_before_work(tmp_path):
    msg = _error(tmp_path / "m.toml", 'evalset = "pyref"\n[[retrievers]]\ntype = "dense"\n'
                                      'model = "bert-huge"\n')
    assert "key 'model' is 'bert-huge'" in msg and "minilm" in msg and "static" in msg
    msg = _error(tmp_path / "e.toml", 'evalset = "no-such-folder"\n[[retrievers]]\n'
                                      'type = "bm25"\n')
    assert "key 'evalset'" in msg and "pyref" in msg
    msg = _error(tmp_path / "p.toml", 'evalset = "msmarco:x"\n[[retrievers]]\ntype = "bm25"\n')
    assert "evalset" in msg and "pyref" in msg


@pytest.mark.parametrize("name", ["9" * 5000, "a/" * 3000 + "x", "beir:" + "d" * 300])
def test_a_path_the_system_refuses_is_a_config_error(tmp_path, name):
    """A folder name too long for the system (or with a component too long) is "not
    found" for an evaluation set and a model folder: one ConfigError, never an OSError."""
    msg = _error(tmp_path / "e.toml", f'evalset = "{name}"\n[[retrievers]]\ntype = "bm25"\n')
    assert "key 'evalset'" in msg or "evaluation set" in msg
    msg = _error(tmp_path / "m.toml", 'evalset = "pyref"\n[[retrievers]]\nname = "d"\n'
                                      f'type = "dense"\nmodel = "sentence-transformers:{name}"\n')
    assert "key 'model'" in msg


def test_dense_needs_a_model():
    with pytest.raises(ConfigError, match="needs key 'model'"):
        _cfg(retrievers=[{"type": "dense"}])


def test_grid_skips_chunk_level_without_chunker_and_keys_differ():
    cfg = _cfg(chunkers=["none", "tokens:64:8"], levels=["doc", "chunk"],
               retrievers=[{"type": "bm25"}, {"name": "b2", "type": "bm25", "k1": 1.5}])
    cells = expand_grid(cfg)
    labels = [(c.level, c.system) for c in cells]
    assert ("chunk", "bm25") not in labels
    assert len(cells) == 2 * 2 + 2  # doc: 2 chunkers × 2 retrievers; chunk: 1 × 2
    keys = {c.key("h") for c in cells}
    assert len(keys) == len(cells)
    # the key is the result, names included: renaming a retriever changes it (the report
    # finds the cell under its new name); the work key leaves names out (work is reused)
    renamed = _cfg(retrievers=[{"name": "other", "type": "bm25"}])
    assert renamed.cells()[0].key("h") != _cfg().cells()[0].key("h")
    assert renamed.cells()[0].work_key("h") == _cfg().cells()[0].work_key("h")
    assert _cfg().cells()[0].key("h") != _cfg().cells()[0].key("h2")
    assert _cfg().cells()[0].work_key("h") != _cfg().cells()[0].work_key("h2")
    tuned = _cfg(retrievers=[{"name": "bm25", "type": "bm25", "k1": 1.5}])
    assert tuned.cells()[0].work_key("h") != _cfg().cells()[0].work_key("h")


def test_relative_model_and_evalset_folders_resolve_against_the_config(tmp_path):
    from searchbench.experiment.config import resolve_evalset, resolve_model

    (tmp_path / "models" / "mine").mkdir(parents=True)
    (tmp_path / "set").mkdir()
    path = tmp_path / "exp.toml"
    path.write_text('evalset = "set"\n[[retrievers]]\ntype = "dense"\n'
                    'model = "model2vec:models/mine"\n')
    cfg = load_config(path)  # validated against the config's folder, not the cwd
    assert cfg.retrievers[0].name == "mine"
    spec = cfg.retrievers[0].settings["model"]
    assert resolve_model(spec, cfg.base_dir) == f"model2vec:{tmp_path / 'models' / 'mine'}"
    assert resolve_model("minilm", cfg.base_dir) == "minilm"
    assert resolve_evalset("set", cfg.base_dir) == str(tmp_path / "set")
    assert resolve_evalset("beir:set", cfg.base_dir) == f"beir:{tmp_path / 'set'}"
    assert resolve_evalset("pyref", cfg.base_dir) == "pyref"


def _hybrid_keys(a: str, b: str, order: tuple[int, int] = (0, 1),
                 k1: float = 1.2) -> tuple[str, str]:
    parts = [{"name": a, "type": "bm25", "k1": k1}, {"name": b, "type": "bm25", "b": 0.5}]
    cfg = _cfg(retrievers=[*parts, {"name": "h", "type": "hybrid", "fusion": "weighted",
                                    "weights": [0.7, 0.3],
                                    "of": [parts[i]["name"] for i in order]}])
    cell = next(c for c in cfg.cells() if c.retriever.type == "hybrid")
    comps = cfg.components(cell.retriever)
    return cell.key("h", comps), cell.work_key("h", comps)


def test_hybrid_work_key_ignores_component_names_but_not_their_order():
    key, work = _hybrid_keys("a", "b")
    renamed_key, renamed_work = _hybrid_keys("x", "y")
    assert renamed_work == work and renamed_key != key
    assert _hybrid_keys("a", "b", order=(1, 0))[1] != work  # weights now apply the other way
    assert _hybrid_keys("a", "b", k1=0.4)[1] != work
