"""Runner: shared indexes, each cell once, resume after SIGKILL, chunk-level judgments."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from searchbench.experiment import ResultsStore, load_config, run_experiment


def test_runs_every_cell_once_and_shares_indexes(tiny_config, monkeypatch):
    from searchbench.retrieval import BM25

    calls = []
    orig = BM25.index
    monkeypatch.setattr(BM25, "index",
                        lambda self, corpus, chunker=None: calls.append(chunker) or
                        orig(self, corpus, chunker))
    cfg = load_config(tiny_config)
    summary = run_experiment(cfg)
    assert len(summary.computed) == 9 and summary.skipped == []
    # 2 base retrievers × 2 chunkers: one index each, shared by levels and the hybrid
    assert len(calls) == 4
    again = run_experiment(cfg)
    assert again.computed == [] and sorted(again.skipped) == sorted(summary.computed)
    assert len(calls) == 4
    with ResultsStore(summary.store_path) as db:
        cells = db.cells(summary.experiment_id)
    assert len(cells) == 9
    for c in cells:
        assert Path(c.run_path).is_file()
        assert c.run_hash.startswith("sha256:")
        assert set(c.scores) == {"nDCG@10", "RR@10", "R@10", "RR"}
        assert len(c.scores["RR"]) == 6
        assert len(c.extras["recall_curve"]) == 100
        assert c.provenance["evalset_hash"].startswith("sha256:")
        ids = {line.split()[2] for line in Path(c.run_path).read_text().splitlines()}
        assert all(("#" in i) == (c.level == "chunk") for i in ids)
        if c.level == "chunk":  # judged by evidence overlap: more judged units than docs
            assert c.extras["judged_units"] > 8


_KILLED = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from searchbench.experiment import load_config, run_experiment, store

    marker = Path(sys.argv[2])
    orig = store.ResultsStore.save_cell
    count = []

    def save_cell(self, exp_id, rec, texts):
        count.append(1)
        if len(count) < 3:
            return orig(self, exp_id, rec, texts)
        with self.transaction() as db:  # half a cell written, then killed
            db.execute("INSERT INTO cells (experiment_id, cell_key, system, evalset, "
                       "evalset_hash, level, chunker, retriever, config_json, run_path, "
                       "run_hash, timings, extras, provenance, finished) VALUES "
                       "(?, ?, 'partial', '', '', '', '', '', '{}', '', '', '{}', '{}', "
                       "'{}', 0)", (exp_id, rec.cell_key))
            marker.write_text("inside")
            time.sleep(120)

    store.ResultsStore.save_cell = save_cell
    run_experiment(load_config(sys.argv[1]))
""")


def test_resume_after_sigkill_mid_grid(tiny_config, tmp_path):
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen([sys.executable, "-c", _KILLED, str(tiny_config), str(marker)],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + 90
        while not marker.exists():
            if proc.poll() is not None:
                pytest.fail(f"the run ended before the kill: "
                            f"{proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail("the run never reached its third cell")
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    cfg = load_config(tiny_config)
    store = tiny_config.with_suffix(".sqlite")
    with ResultsStore(store) as db:
        [exp] = db.experiments()
        before = {c.cell_key: c.finished for c in db.cells(exp["id"])}
        systems = [c.system for c in db.cells(exp["id"])]
    assert len(before) == 2 and "partial" not in systems  # the half-written cell is gone
    summary = run_experiment(cfg)
    assert len(summary.skipped) == 2 and len(summary.computed) == 7
    with ResultsStore(store) as db:
        after = {c.cell_key: c.finished for c in db.cells(exp["id"])}
    assert len(after) == 9
    assert all(after[k] == v for k, v in before.items())  # finished cells not redone


def test_a_new_measure_recomputes_cells_that_lack_it(tiny_config):
    summary = run_experiment(load_config(tiny_config))
    assert len(summary.computed) == 9
    text = tiny_config.read_text().replace('measures = ["nDCG@10", "RR@10", "R@10"]',
                                           'measures = ["nDCG@10", "RR@10", "R@10", "P@5"]')
    tiny_config.write_text(text)
    again = run_experiment(load_config(tiny_config))
    assert len(again.computed) == 9 and again.skipped == []
    with ResultsStore(again.store_path) as db:
        cells = db.cells(again.experiment_id)
    assert len(cells) == 9 and all("P@5" in c.scores for c in cells)


_KILLED_AFTER_RUN_FILE = textwrap.dedent("""
    import os, signal, sys
    from searchbench.experiment import load_config, run_experiment, store

    orig = store.ResultsStore.save_cell
    count = []

    def save_cell(self, exp_id, rec, texts):  # the run file is written, the cell not stored
        count.append(1)
        if len(count) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return orig(self, exp_id, rec, texts)

    store.ResultsStore.save_cell = save_cell
    run_experiment(load_config(sys.argv[1]))
""")


def _python(script: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_kill_between_run_file_and_store_is_redone_and_reuses_the_file(tiny_config, tmp_path):
    proc = _python(_KILLED_AFTER_RUN_FILE, str(tiny_config))
    _, err = proc.communicate(timeout=300)  # reads and closes the pipes
    assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
    runs = tiny_config.parent / "runs"
    orphans = sorted(p for p in runs.rglob("*.trec"))
    assert len(orphans) == 3  # three run files, two of them stored
    with ResultsStore(tiny_config.with_suffix(".sqlite")) as db:
        [exp] = db.experiments()
        assert len(db.cells(exp["id"])) == 2
    summary = run_experiment(load_config(tiny_config))
    assert len(summary.computed) == 7 and len(summary.skipped) == 2
    with ResultsStore(summary.store_path) as db:
        cells = db.cells(summary.experiment_id)
        assert db.run_file_problems(summary.experiment_id) == {}
    assert len(cells) == 9 and set(orphans) <= {Path(c.run_path) for c in cells}
    assert sorted(p.name for p in runs.rglob("*") if p.is_file()) == sorted(
        Path(c.run_path).name for c in cells)  # no pending or stray file


def test_killed_while_writing_a_run_file_leaves_nothing_after_the_next_run(tiny_config):
    from searchbench.data.run import Run
    from searchbench.experiment.naming import publish_run

    folder = tiny_config.parent / "runs" / "x"
    folder.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = folder / f".sys.{dead}.abcd1234.pending"  # what a kill -9 mid-write leaves
    stale.write_text("q1 Q0 d1 1 1 sys\n")
    mine = folder / f".sys.{os.getpid()}.abcd1234.pending"  # a live writer's: kept
    mine.write_text("")
    publish_run(Run.from_dict({"q1": {"d1": 1.0}}), folder, "sys", tag="sys")
    assert not stale.exists() and mine.exists()


_RUN = "import sys; from searchbench.cli.main import main; sys.exit(main(sys.argv[1:]))"


def test_concurrent_runs_on_one_store_and_one_runs_folder(tiny_config):
    """Two processes run the same config and a third another config naming its retrievers
    the same, all at once on one store: every cell stored once, every run file intact."""
    other = tiny_config.with_name("other.toml")
    other.write_text(tiny_config.read_text().replace('name = "tiny"', 'name = "other"')
                     .replace('[[retrievers]]\nname = "bm25"\ntype = "bm25"\n',
                              '[[retrievers]]\nname = "bm25"\ntype = "bm25"\nk1 = 0.3\n'))
    store = tiny_config.with_name("shared.sqlite")
    procs = [_python(_RUN, "experiment", "run", str(cfg), "--store", str(store), "--quiet")
             for cfg in (tiny_config, tiny_config, other)]
    for p in procs:
        _, err = p.communicate(timeout=600)  # reads and closes the pipes
        assert p.returncode == 0, err.decode()[-2000:]
    with ResultsStore(store) as db:
        assert db._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        exps = {e["name"]: e for e in db.experiments()}
        assert set(exps) == {"tiny", "other"} and all(e["cells"] == 9 for e in exps.values())
        for e in exps.values():
            assert db.run_file_problems(e["id"]) == {}
        tiny = {c.system: c for c in db.cells(exps["tiny"]["id"]) if c.level == "doc"}
        mine = {c.system: c for c in db.cells(exps["other"]["id"]) if c.level == "doc"}
    assert tiny["bm25"].run_path != mine["bm25"].run_path  # different settings, own file
    assert tiny["bm25"].run_hash != mine["bm25"].run_hash


def test_an_unjudged_cell_is_warned_flagged_and_stored_as_such(tmp_path):
    """Never a silent 0: each query's only judged document shares no word with it, so BM25
    ranks only unjudged documents (Judged@10 = 0 by hand); the cell warns as `eval` does,
    its progress line says so and the stored result records it."""
    import json

    from searchbench.errors import SearchbenchWarning

    folder = tmp_path / "set"
    folder.mkdir()
    docs = {"a": "apples and pears", "b": "boats and rivers", "c": "clouds and rain"}
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"id": i, "title": "", "text": t}) + "\n" for i, t in docs.items()))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": q, "text": t}) + "\n" for q, t in (("q1", "apples"),
                                                            ("q2", "rivers"))))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tc\t1\nq2\tc\t1\n")
    (tmp_path / "exp.toml").write_text('evalset = "set"\nmeasures = ["nDCG@10"]\n'
                                       '[[retrievers]]\nname = "bm25"\ntype = "bm25"\n')
    lines: list[str] = []
    with pytest.warns(SearchbenchWarning, match=r"run 'bm25': only 0.0% of its top 10"):
        summary = run_experiment(load_config(tmp_path / "exp.toml"), log=lines.append)
    done = [line for line in lines if "done" in line]
    assert done == ["  done doc   bm25  nDCG@10=0.0000  (Judged@10 0.00: mostly unjudged, "
                    "a lower bound)"]
    with ResultsStore(summary.store_path) as db:
        (cell,) = db.cells(summary.experiment_id)
    assert cell.extras["judged"] == {"k": 10, "mean": 0.0, "low": True}
