"""Run files of experiments: never shared by two different results, hashed in the store,
checked on every run and report; renamed retrievers are found under their new name."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest

from searchbench.errors import SearchbenchWarning
from searchbench.experiment import ResultsStore, StoreError, load_config, run_experiment
from searchbench.report.experiment import experiment_report

from ._data import write_set


def _config(folder: Path, stem: str, retrievers: str, name: str | None = None) -> Path:
    path = folder / f"{stem}.toml"
    head = f'name = "{name}"\n' if name else ""
    path.write_text(head + 'evalset = "set"\nmeasures = ["nDCG@10", "R@10"]\n'
                    'n_permutations = 100\n' + retrievers, encoding="utf-8")
    return path


def _bm25(name: str, extra: str = "") -> str:
    return f'[[retrievers]]\nname = "{name}"\ntype = "bm25"\n{extra}\n'


def _cells(store: Path, exp_id: int) -> list:
    with ResultsStore(store) as db:
        return db.cells(exp_id)


def _sha256(path: str) -> str:
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _lines(path: str) -> list[str]:
    return Path(path).read_text().splitlines()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_set(tmp_path / "set")
    return tmp_path


def test_two_configs_in_one_folder_keep_their_own_run_files(folder):
    """Both name their retriever 'bm25' with different settings (and even the experiments
    have the same name); neither file is replaced."""
    a = run_experiment(load_config(_config(folder, "a", _bm25("bm25", "k1 = 0.1\nb = 0.0"),
                                           name="same")))
    b = run_experiment(load_config(_config(folder, "b", _bm25("bm25", "k1 = 3.0\nb = 1.0"),
                                           name="same")))
    assert a.store_path != b.store_path
    [ca], [cb] = _cells(a.store_path, a.experiment_id), _cells(b.store_path, b.experiment_id)
    assert ca.run_path != cb.run_path
    assert _sha256(ca.run_path) == ca.run_hash and _sha256(cb.run_path) == cb.run_hash
    assert ca.run_hash != cb.run_hash  # really different runs, each still on disk
    for cell in (ca, cb):  # every file name part is a slug under the config's runs folder
        assert Path(cell.run_path).resolve().is_relative_to((folder / "runs").resolve())


def test_names_with_the_same_slug_get_different_files(folder):
    retrievers = "".join(_bm25(n) for n in ("bm25 a", "bm25+a", "bm25_a"))
    s = run_experiment(load_config(_config(folder, "exp", retrievers)))
    cells = _cells(s.store_path, s.experiment_id)
    assert len({c.run_path for c in cells}) == 3
    tags = set()
    for c in cells:
        assert _sha256(c.run_path) == c.run_hash
        [tag] = {line.split()[5] for line in _lines(c.run_path)}
        tags.add(tag)
    assert len(tags) == 3  # the run tag tells the systems apart too


def test_hostile_experiment_and_evalset_names_stay_inside_the_runs_folder(folder):
    write_set(folder / "..a\\b é")  # the evaluation set's name is its folder's name
    cfg = _config(folder, "exp", _bm25("a\u00e9 b"), name="..hidden name")
    cfg.write_text(cfg.read_text().replace('evalset = "set"', "evalset = '..a\\b é'"))
    s = run_experiment(load_config(cfg))
    [cell] = _cells(s.store_path, s.experiment_id)
    assert cell.evalset == "..a\\b é"
    runs = (folder / "runs").resolve()
    assert Path(cell.run_path).resolve().is_relative_to(runs)
    parts = Path(cell.run_path).relative_to(folder / "runs").parts
    assert len(parts) == 4 and all(not p.startswith(".") and "\\" not in p for p in parts)


def _run_then_change(folder: Path) -> tuple[Path, object]:
    cfg = _config(folder, "exp", _bm25("bm25") + _bm25("plain", 'stemmer = false'))
    s = run_experiment(load_config(cfg))
    return cfg, s


def test_a_changed_run_file_stops_the_report_and_is_recomputed(folder):
    cfg, s = _run_then_change(folder)
    cell = _cells(s.store_path, s.experiment_id)[0]
    original = Path(cell.run_path).read_bytes()
    lines = _lines(cell.run_path)
    Path(cell.run_path).write_text("\n".join(lines[:-1]) + "\n")  # a line lost
    with pytest.raises(StoreError, match=f"run file {cell.run_path} changed after it was "
                                         "stored"):
        experiment_report(s.store_path, config=load_config(cfg))
    with pytest.warns(SearchbenchWarning, match="changed after it was stored.*computed again"):
        again = run_experiment(load_config(cfg))
    assert again.redone == [f"doc {cell.system}"] and len(again.computed) == 1
    [redone] = [c for c in _cells(s.store_path, s.experiment_id) if c.system == cell.system]
    assert _sha256(redone.run_path) == redone.run_hash
    assert Path(redone.run_path).read_bytes() == original  # same work, same bytes
    kept = list(Path(cell.run_path).parent.glob("*.changed-*"))  # the edited file kept aside
    assert len(kept) == 1 and len(kept[0].read_text().splitlines()) == len(lines) - 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = experiment_report(s.store_path, config=load_config(cfg))
    assert report.missing == []


def test_a_deleted_run_file_is_a_report_warning_and_redone_by_run(folder):
    cfg, s = _run_then_change(folder)
    cell = _cells(s.store_path, s.experiment_id)[1]
    Path(cell.run_path).unlink()
    with pytest.warns(SearchbenchWarning, match=f"run file {cell.run_path} is missing"):
        experiment_report(s.store_path, config=load_config(cfg))
    with pytest.warns(SearchbenchWarning, match="is missing; the cell is computed again"):
        again = run_experiment(load_config(cfg))
    assert again.redone == [f"doc {cell.system}"] and Path(cell.run_path).is_file()


def test_renaming_a_retriever_reuses_its_work_and_reports_the_new_name(folder, monkeypatch):
    from searchbench.retrieval import BM25

    cfg = _config(folder, "exp", _bm25("bm25") + _bm25("plain", "stemmer = false"))
    first = run_experiment(load_config(cfg))
    old = {c.system: c for c in _cells(first.store_path, first.experiment_id)}
    cfg.write_text(cfg.read_text().replace('"plain"', '"renamed"'))
    indexed = []
    monkeypatch.setattr(BM25, "index", lambda *a, **k: indexed.append(a))
    second = run_experiment(load_config(cfg))
    assert second.computed == ["doc renamed"] and second.reused == ["doc renamed"]
    assert indexed == []  # the retrieval was not redone
    report = experiment_report(first.store_path, config=load_config(cfg))
    assert report.missing == []
    [group] = report.groups
    assert [c.system for c in group.cells] == ["bm25", "renamed"]
    renamed = group.cell("renamed")
    assert renamed.scores == old["plain"].scores
    assert renamed.provenance["reused_from"]["system"] == "plain"
    # its own run file: the same rankings, tagged with the new name; the old file untouched
    assert renamed.run_path != old["plain"].run_path
    assert _sha256(renamed.run_path) == renamed.run_hash
    assert _sha256(old["plain"].run_path) == old["plain"].run_hash
    new_lines = [line.split() for line in _lines(renamed.run_path)]
    old_lines = [line.split() for line in _lines(old["plain"].run_path)]
    assert [r[:5] for r in new_lines] == [r[:5] for r in old_lines]
    assert {r[5] for r in new_lines} == {"renamed"} and {r[5] for r in old_lines} == {"plain"}
    assert run_experiment(load_config(cfg)).computed == []  # nothing left "incomplete"


def test_renaming_with_changed_settings_is_computed_not_reused(folder):
    cfg = _config(folder, "exp", _bm25("bm25"))
    run_experiment(load_config(cfg))
    cfg.write_text(cfg.read_text().replace('name = "bm25"', 'name = "b2"\nk1 = 0.5'))
    again = run_experiment(load_config(cfg))
    assert again.computed == ["doc b2"] and again.reused == []


def test_renaming_does_not_reuse_a_cell_whose_run_file_changed(folder):
    cfg = _config(folder, "exp", _bm25("bm25"))
    first = run_experiment(load_config(cfg))
    [cell] = _cells(first.store_path, first.experiment_id)
    Path(cell.run_path).write_text("q1 Q0 d5 1 9 bm25\n")
    cfg.write_text(cfg.read_text().replace('name = "bm25"', 'name = "b2"'))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the stale cell is not in the grid: no warning
        again = run_experiment(load_config(cfg))
    assert again.computed == ["doc b2"] and again.reused == [] and again.redone == []
    [_, new] = _cells(first.store_path, first.experiment_id)
    assert _sha256(new.run_path) == new.run_hash and len(_lines(new.run_path)) > 1


def test_a_store_with_keys_of_an_older_version_is_reused_not_recomputed(folder, monkeypatch):
    """Older versions keyed cells without names: every cell looks new, and is reused."""
    import sqlite3

    from searchbench.retrieval import BM25

    cfg = _config(folder, "exp", _bm25("bm25") + _bm25("plain", "stemmer = false"))
    first = run_experiment(load_config(cfg))
    con = sqlite3.connect(first.store_path)
    con.execute("UPDATE cells SET cell_key = 'v1-' || cell_key")
    con.commit()
    con.close()
    indexed = []
    monkeypatch.setattr(BM25, "index", lambda *a, **k: indexed.append(a))
    again = run_experiment(load_config(cfg))
    assert sorted(again.reused) == ["doc bm25", "doc plain"] and indexed == []
    assert experiment_report(first.store_path, config=load_config(cfg)).missing == []


def test_report_without_config_shows_only_the_current_cells(folder):
    cfg = _config(folder, "exp", _bm25("bm25") + _bm25("plain", "stemmer = false"))
    first = run_experiment(load_config(cfg))
    cfg.write_text(cfg.read_text().replace('"plain"', '"renamed"')
                   .replace('name = "bm25"', 'name = "bm25"\nk1 = 0.4'))
    run_experiment(load_config(cfg))
    with ResultsStore(first.store_path) as db:
        assert len(db.cells(first.experiment_id)) == 4  # the old cells stay in the store
    [group] = experiment_report(first.store_path).groups  # no config: the stored one
    assert sorted(c.system for c in group.cells) == ["bm25", "renamed"]
    assert group.cell("bm25").config["retriever"]["k1"] == 0.4
