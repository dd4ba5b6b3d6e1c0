"""``searchbench experiment init|run|report|list``: one-line errors with exit 1, outputs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from searchbench.cli.main import main
from searchbench.experiment import SCHEMA_VERSION


def _data_module():
    """The tiny evaluation set of the experiment unit tests (loaded by path)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "unit" / "experiment" / "_data.py"
    spec = importlib.util.spec_from_file_location("_experiment_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def config(tmp_path: Path) -> Path:
    data = _data_module()
    data.write_set(tmp_path / "set")
    path = tmp_path / "exp.toml"
    path.write_text(data.CONFIG, encoding="utf-8")
    return path


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_init_writes_a_valid_config_and_refuses_to_overwrite(tmp_path, capsys):
    path = tmp_path / "new.toml"
    assert main(["experiment", "init", str(path)]) == 0
    text = path.read_text()
    assert text.lstrip().startswith("#") and "[[retrievers]]" in text
    assert main(["experiment", "init", str(path)]) == 1
    assert "--force" in _one_error_line(capsys)
    assert main(["experiment", "init", str(path), "--force"]) == 0


@pytest.mark.parametrize("text, needle", [
    ('evalset = "set"\nbogus = 1\n[[retrievers]]\ntype = "bm25"\n', "unknown top-level key"),
    ('evalset = "set"\nk = "ten"\n[[retrievers]]\ntype = "bm25"\n', "key 'k'"),
    ('evalset = "set"\n', "grid is empty"),
    ('evalset = "nowhere"\n[[retrievers]]\ntype = "bm25"\n', "key 'evalset'"),
    ('evalset = "set"\n[[retrievers]]\ntype = "dense"\nmodel = "gpt-9"\n', "key 'model'"),
])
def test_bad_config_is_one_line_and_no_work(config, capsys, text, needle):
    config.write_text(text)
    assert main(["experiment", "run", str(config)]) == 1
    assert needle in _one_error_line(capsys)
    assert not config.with_suffix(".sqlite").exists()  # nothing started


def test_run_report_list(config, capsys, monkeypatch):
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    assert "9 cells run, 0 already in the store" in capsys.readouterr().out
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    assert "0 cells run, 9 already in the store" in capsys.readouterr().out
    out_dir = config.parent / "out"
    assert main(["experiment", "report", str(config), "-o", str(out_dir), "--quiet",
                 "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "set · document level" in out and "json: " in out
    assert [p.name for p in out_dir.iterdir()] == ["tiny.json"]
    data = json.loads((out_dir / "tiny.json").read_text())
    assert len(data["groups"]) == 2 and data["missing_cells"] == []
    monkeypatch.chdir(config.parent)
    assert main(["experiment", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("store\tid\tname") and "\ttiny\t9\t" in lines[1]


def test_report_without_results_and_newer_store(config, capsys):
    assert main(["experiment", "report", str(config)]) == 1
    assert "experiment run" in _one_error_line(capsys)
    store = config.with_suffix(".sqlite")
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    capsys.readouterr()
    con = sqlite3.connect(store)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    assert main(["experiment", "run", str(config), "--quiet"]) == 1
    assert "newer" in _one_error_line(capsys)


def test_demo_prints_tables_and_report_path(tmp_path, capsys, monkeypatch):
    """The demo's flow on the tiny set (the packaged pyref config is swapped out)."""
    import searchbench.cli.demo_cmd as demo

    data = _data_module()
    data.write_set(tmp_path / "set")

    def tiny_config(out: Path) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "demo.toml"
        path.write_text(data.CONFIG.replace('evalset = "set"',
                                            f'evalset = "{tmp_path / "set"}"'))
        return path

    monkeypatch.setattr(demo, "_config_file", tiny_config)
    out = tmp_path / "demo-out"
    assert main(["demo", "-o", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "set · document level · 6 queries" in text
    assert "set · chunk level (evidence spans) · 6 queries" in text
    assert "9 cells run, 0 reused" in text
    html = Path(text.strip().splitlines()[-1].split("HTML report: ")[1])
    assert html.is_file() and html.parent == (out / "report").resolve()
    assert main(["demo", "-o", str(out), "--quiet"]) == 0
    assert "0 cells run, 9 reused" in capsys.readouterr().out


def test_packaged_demo_config_is_the_issue_grid(tmp_path):
    """pyref over BM25, MiniLM and hybrid RRF, three chunk sizes, both levels (validated
    without running it); BM25 runs first, then the model-based cells per chunk size."""
    from searchbench.cli.demo_cmd import _config_file, demo_stages
    from searchbench.experiment import load_config

    cfg = load_config(_config_file(tmp_path))
    assert cfg.evalsets == ["pyref"] and cfg.levels == ["doc", "chunk"]
    assert len(cfg.chunkers) == 3
    kinds = {(r.type, r.settings.get("model"), r.settings.get("fusion")) for r in cfg.retrievers}
    assert kinds == {("bm25", None, None), ("dense", "minilm", None), ("hybrid", None, "rrf")}
    assert len(cfg.cells()) == 3 * 3 * 2
    stages = demo_stages(cfg)
    assert [r.name for r in stages[0].retrievers] == ["bm25"] and len(stages) == 4


@pytest.mark.parametrize("name", ["a\\b", "..", "a/b", "a\x00b", "x" * 101, " bm25"])
def test_hostile_retriever_name_is_one_error_line_before_any_work(config, capsys, name):
    import tomllib

    text = ('evalset = "set"\n[[retrievers]]\ntype = "bm25"\nname = '
            + json.dumps(name) + "\n")
    assert tomllib.loads(text)["retrievers"][0]["name"] == name  # the TOML says what we mean
    config.write_text(text)
    assert main(["experiment", "run", str(config)]) == 1
    line = _one_error_line(capsys)
    assert str(config) in line and "name" in line and "expected" in line
    assert not config.with_suffix(".sqlite").exists()


def test_report_refuses_a_changed_run_file_naming_it(config, capsys):
    from searchbench.experiment import ResultsStore

    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    with ResultsStore(config.with_suffix(".sqlite")) as db:
        [exp] = db.experiments()
        cell = db.cells(exp["id"])[0]
    Path(cell.run_path).write_text("q1 Q0 d1 1 9.5 forged\n")
    capsys.readouterr()
    assert main(["experiment", "report", str(config), "--quiet"]) == 1
    line = _one_error_line(capsys)
    assert f"run file {cell.run_path} changed" in line and "experiment run" in line
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "1 cells were computed again" in captured.out
    assert main(["experiment", "report", str(config), "--quiet"]) == 0


def test_renamed_retriever_is_reported_under_its_new_name(config, capsys):
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    config.write_text(config.read_text().replace('"bm25-plain"', '"plain \\\\ renamed"'))
    capsys.readouterr()
    assert main(["experiment", "run", str(config), "--quiet"]) == 1  # a backslash: refused
    assert "contains a backslash" in _one_error_line(capsys)
    config.write_text(config.read_text().replace('"plain \\\\ renamed"', '"plain renamed"'))
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out  # plain's and the hybrid's (its component renamed) cells
    assert "6 cells run, 3 already in the store" in out
    assert "6 of the cells run reused the run file and scores" in out
    out_dir = config.parent / "out"
    assert main(["experiment", "report", str(config), "-o", str(out_dir), "--format", "json",
                 "--no-tables"]) == 0
    assert "not in the store" not in capsys.readouterr().err
    data = json.loads((out_dir / "tiny.json").read_text())
    systems = {c["system"] for g in data["groups"] for c in g["cells"]}
    assert "plain renamed" in systems and "bm25-plain" not in systems
    assert data["missing_cells"] == []


def test_report_of_an_old_store_with_hostile_names_renders(config, tmp_path):
    """Names stored before validation existed (backslash, quotes, markup) cannot break the
    report: no regex is built from them and the SVG label is escaped."""
    from searchbench.report.experiment import experiment_report

    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    hostile = 'a\\1 \\g<0> x" onload="alert(1)'
    con = sqlite3.connect(config.with_suffix(".sqlite"))
    con.execute("UPDATE cells SET system = ? WHERE system = 'hybrid'", (hostile,))
    con.commit()
    con.close()
    report = experiment_report(config.with_suffix(".sqlite"))
    written = report.write(tmp_path / "report")
    from html.parser import HTMLParser

    attributes: list[str] = []

    class Attributes(HTMLParser):
        def handle_starttag(self, tag, attrs):
            attributes.extend(name for name, _ in attrs)

    Attributes().feed(written["html"].read_text())
    assert "role" in attributes and not any(a.startswith("on") for a in attributes)
    assert hostile in {c.system for g in report.groups for c in g.cells}


def test_list_shows_hostile_stored_names_inert(config, capsys):
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    store = config.with_suffix(".sqlite")
    con = sqlite3.connect(store)
    con.execute("UPDATE experiments SET name = ?", ("a\tb\n\x1b[31mred\u202e",))
    con.commit()
    con.close()
    capsys.readouterr()
    assert main(["experiment", "list", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and len(lines[1].split("\t")) == 6
    assert "\x1b" not in lines[1] and "\u202e" not in lines[1]
    assert "a\\u0009b\\u000a\\u001b[31mred\\u202e" in lines[1]


def test_report_in_one_format_keeps_the_other_formats_files(config, capsys):
    """``--format html`` writes the HTML file only: an earlier Markdown report of the same
    experiment and the user's own files in the folder stay as they were."""
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    out_dir = config.parent / "out"
    assert main(["experiment", "report", str(config), "-o", str(out_dir), "--quiet",
                 "--no-tables", "--format", "markdown"]) == 0
    markdown = (out_dir / "tiny.md").read_bytes()
    (out_dir / "notes.txt").write_text("mine")
    assert main(["experiment", "report", str(config), "-o", str(out_dir), "--quiet",
                 "--no-tables", "--format", "html"]) == 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["notes.txt", "tiny.html", "tiny.md"]
    assert (out_dir / "tiny.md").read_bytes() == markdown
    capsys.readouterr()


def test_experiments_whose_names_read_alike_keep_their_own_report_files(config, capsys):
    """``a b`` and ``a+b`` used to share ``a-b.html``: the second report replaced the first."""
    out_dir = config.parent / "out"
    stems = []
    for name in ("a b", "a+b"):
        config.write_text(config.read_text().replace('name = "tiny"', f'name = "{name}"'))
        assert main(["experiment", "run", str(config), "--quiet"]) == 0
        assert main(["experiment", "report", str(config), "-o", str(out_dir), "--quiet",
                     "--no-tables", "--format", "json"]) == 0
        config.write_text(config.read_text().replace(f'name = "{name}"', 'name = "tiny"'))
        stems.append(capsys.readouterr().out.strip().splitlines()[-1])
    assert stems[0] != stems[1]
    names = {json.loads(p.read_text())["experiment"] for p in out_dir.iterdir()}
    assert names == {"a b", "a+b"}


def test_a_grid_needing_a_missing_store_is_one_error_line_before_any_work(tmp_path, capsys):
    """Checked before any cell: the error names the config key, the store and the
    `db load` command to run; no results store, no store file is created."""
    pytest.importorskip("sqlite_vec")
    cfg = tmp_path / "exp.toml"
    cfg.write_text(f'evalset = "pyref"\nchunkers = ["tokens:64"]\n[[retrievers]]\n'
                   f'name = "mine"\ntype = "db"\n'
                   f'url = "sqlite-vec://{tmp_path}/nowhere.db?table=docs_{{chunker}}"\n')
    assert main(["experiment", "run", str(cfg)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "key 'retrievers.mine.url'" in err[0] and "nowhere.db?table=docs_tokens_64" in err[0]
    assert "searchbench db load" in err[0] and "--chunk tokens:64" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.toml"]
