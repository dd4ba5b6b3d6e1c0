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
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(tiny_config), str(marker)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while not marker.exists():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before the kill: {proc.stderr.read().decode()[-2000:]}")
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
