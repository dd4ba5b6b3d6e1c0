"""A full disk while an experiment or a run is written: one clear error, nothing half-written
(no cell without its run file, no run file without its sidecar, no temporary file left), and
the next run completes what is missing.

Each case runs twice: on a real, small tmpfs that is full (when running as root; skipped with
the reason otherwise) and with ENOSPC injected at the write, which runs everywhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchbench.cli.main import main
from searchbench.errors import OutputError
from searchbench.experiment import ResultsStore, StoreError
from searchbench.experiment.naming import run_file_problem

from ._data import write_set

CONFIG = """name = "full"
evalset = "set"
measures = ["nDCG@10", "R@10"]
n_permutations = 100
runs_dir = "RUNS"

[[retrievers]]
name = "bm25"
type = "bm25"
"""
MORE = """
[[retrievers]]
name = "plain"
type = "bm25"
stemmer = false

[[retrievers]]
name = "hybrid"
type = "hybrid"
of = ["bm25", "plain"]
"""


@contextlib.contextmanager
def _tmpfs(folder: Path, size: str = "512k") -> Iterator[Path]:
    """A small tmpfs mounted at ``folder`` (skips the test when it cannot be mounted)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the ENOSPC-injection twin runs instead")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` to the last byte; returns the filler file."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as fh:
        for block in (1 << 16, 4096, 1):
            with contextlib.suppress(OSError):
                while fh.write(b"\0" * block):
                    pass
    return filler


def _stray(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*")
                  if p.name.endswith((".tmp", ".pending")) or p.name.startswith("tmp"))


def _setup(tmp_path: Path, runs: Path) -> Path:
    write_set(tmp_path / "set")
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG.replace('"RUNS"', f'"{runs}"') + MORE)
    return path


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _all_cells_intact(store: Path) -> int:
    with ResultsStore(store) as db:
        [exp] = db.experiments()
        assert db._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        cells = db.cells(exp["id"])
        assert db.run_file_problems(exp["id"]) == {}
    return len(cells)


# -- run files of an experiment ---------------------------------------------------------------
def _check_run_files_disk_full(tmp_path: Path, runs: Path, capsys, free) -> None:
    config = _setup(tmp_path, runs)
    assert main(["experiment", "run", str(config), "--quiet"]) == 1
    line = _one_error_line(capsys)
    assert "cannot write the run file" in line and "no space left" in line
    assert str(runs) in line and "Traceback" not in line
    assert _stray(runs) == []
    store = config.with_suffix(".sqlite")
    with ResultsStore(store) as db:  # no cell without its run file
        [exp] = db.experiments()
        for cell in db.cells(exp["id"]):
            assert run_file_problem(cell.run_path, cell.run_hash) is None
        before = len(db.cells(exp["id"]))
    assert before < 3
    free()
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    assert f"{3 - before} cells run, {before} already" in capsys.readouterr().out
    assert _all_cells_intact(store) == 3


def test_run_files_on_a_full_tmpfs(tmp_path, capsys):
    with _tmpfs(tmp_path / "mnt") as runs:
        filler = _fill(runs)
        _check_run_files_disk_full(tmp_path, runs, capsys, filler.unlink)


def test_run_files_with_enospc_injected(tmp_path, capsys, monkeypatch):
    from searchbench.data.run import Run

    real = Run.to_file

    def no_space(self, path, **kw):
        real(self, path, **kw)  # the full file, then the device is full at its rename
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Run, "to_file", no_space)
    _check_run_files_disk_full(tmp_path, tmp_path / "runs", capsys,
                               lambda: monkeypatch.setattr(Run, "to_file", real))


# -- the results store ------------------------------------------------------------------------
def _check_store_disk_full(tmp_path: Path, store: Path, capsys, fill, free) -> None:
    config = _setup(tmp_path, tmp_path / "runs")
    config.write_text(config.read_text().replace(MORE, ""))
    assert main(["experiment", "run", str(config), "--store", str(store), "--quiet"]) == 0
    capsys.readouterr()
    config.write_text(config.read_text() + MORE)
    fill()
    assert main(["experiment", "run", str(config), "--store", str(store), "--quiet"]) == 1
    line = _one_error_line(capsys)
    assert str(store) in line and "no space left on the device" in line
    assert "rollback" not in line
    free()  # (opening a WAL store needs a little space too)
    assert _all_cells_intact(store) == 1
    assert main(["experiment", "run", str(config), "--store", str(store), "--quiet"]) == 0
    assert "2 cells run, 1 already" in capsys.readouterr().out
    assert _all_cells_intact(store) == 3


def test_store_on_a_full_tmpfs(tmp_path, capsys):
    with _tmpfs(tmp_path / "mnt", "2m") as mnt:
        holder = []
        _check_store_disk_full(tmp_path, mnt / "s.sqlite", capsys,
                               lambda: holder.append(_fill(mnt)), lambda: holder[0].unlink())


def test_store_full_with_a_page_limit(tmp_path, capsys, monkeypatch):
    """SQLite's own SQLITE_FULL (``max_page_count`` reached) inside save_cell."""
    real = ResultsStore.save_cell
    full = []

    def capped(self, exp_id, rec, texts):
        if full:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            self._db.execute(f"PRAGMA max_page_count = {pages}")
        return real(self, exp_id, rec, texts)

    monkeypatch.setattr(ResultsStore, "save_cell", capped)
    _check_store_disk_full(tmp_path, tmp_path / "s.sqlite", capsys, lambda: full.append(1),
                           full.clear)


def test_a_commit_failing_after_sqlite_rolled_back_is_one_store_error(tmp_path):
    """The original crash: ROLLBACK after SQLite had already rolled back by itself."""
    db = ResultsStore(tmp_path / "s.sqlite")
    exp = db.upsert_experiment("e", None, "", {}, {})
    with pytest.raises(StoreError, match="nothing was changed") as err, db.transaction() as con:
        con.execute("INSERT INTO meta VALUES ('x', '1')")
        con.execute("ROLLBACK")  # what SQLite does by itself on SQLITE_FULL at COMMIT
    assert "cannot rollback" not in str(err.value)
    assert db.finished_keys(exp) == set() and not db._db.in_transaction
    db.close()


def test_unreadable_store_is_a_store_error(tmp_path):
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as db:
        db.upsert_experiment("e", None, "", {}, {})
    db = ResultsStore(path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE cells")
    with pytest.raises(StoreError, match="cannot read the results store"):
        db.finished_keys(1)
    db.close()


# -- ``searchbench run``: run file and sidecar --------------------------------------------------
def _check_run_and_sidecar(tmp_path: Path, out: Path, capsys, fail, free) -> None:
    write_set(tmp_path / "set")
    target = out / "r.trec"
    assert main(["run", str(tmp_path / "set"), "-o", str(target), "--quiet"]) == 0
    old_run, old_side = target.read_bytes(), (out / "r.trec.json").read_bytes()
    fail()
    assert main(["run", str(tmp_path / "set"), "-r", "bm25", "--k1", "0.5", "-o", str(target),
                 "--force", "--quiet"]) == 1
    line = _one_error_line(capsys)
    assert "no space left" in line and str(out) in line and ".tmp" not in line
    assert target.read_bytes() == old_run  # the previous pair is untouched
    assert (out / "r.trec.json").read_bytes() == old_side
    assert _stray(out) == [] and sorted(p.name for p in out.iterdir()
                                        if p.name != "filler") == ["r.trec", "r.trec.json"]
    free()
    assert main(["run", str(tmp_path / "set"), "-r", "bm25", "--k1", "0.5", "-o", str(target),
                 "--force", "--quiet"]) == 0
    import json

    from searchbench.retrieval.provenance import file_digest

    assert json.loads((out / "r.trec.json").read_text())["run"]["sha256"] == file_digest(target)
    assert target.read_bytes() != old_run


def test_run_and_sidecar_on_a_full_tmpfs(tmp_path, capsys):
    with _tmpfs(tmp_path / "mnt") as out:
        holder = []
        _check_run_and_sidecar(tmp_path, out, capsys, lambda: holder.append(_fill(out)),
                               lambda: holder[0].unlink())


def test_run_and_sidecar_with_enospc_injected_at_the_sidecar(tmp_path, capsys, monkeypatch):
    real = os.fsync

    def no_space(fd):  # the run is written; its sidecar's flush hits a full disk
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    _check_run_and_sidecar(tmp_path, tmp_path / "out", capsys,
                           lambda: monkeypatch.setattr(os, "fsync", no_space),
                           lambda: monkeypatch.setattr(os, "fsync", real))


def test_publish_run_refuses_nothing_it_cannot_write(tmp_path):
    from searchbench.data.run import Run
    from searchbench.experiment.naming import publish_run

    run = Run.from_dict({"q1": {"d1": 2.0, "d2": 1.0}})
    folder = tmp_path / "runs"
    path, digest = publish_run(run, folder, "sys", tag="sys")
    again, same = publish_run(run, folder, "sys", tag="sys")  # identical bytes: shared
    assert (again, same) == (path, digest) and _stray(folder) == []
    path.write_text("q1 Q0 d9 1 5 sys\n")  # edited by hand
    fixed, _ = publish_run(run, folder, "sys", tag="sys")
    assert fixed == path and run_file_problem(path, digest) is None
    assert [p.read_text() for p in folder.glob("sys.*.changed-*")] == ["q1 Q0 d9 1 5 sys\n"]
    (folder / "blocker").write_text("")
    with pytest.raises(OutputError, match="cannot write the run file"):
        publish_run(run, folder / "blocker", "sys", tag="sys")
    assert _stray(folder) == []


def test_run_and_sidecar_sweep_what_a_killed_writer_left(tmp_path):
    import json

    from searchbench.data.run import Run
    from searchbench.retrieval.provenance import write_run_and_sidecar

    dead = subprocess.run(["python3", "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f".r.trec.{dead}.0badc0de.pending"
    stale.write_text("half a run")
    side = write_run_and_sidecar(Run.from_dict({"q1": {"d1": 1.0}}), tmp_path / "r.trec",
                                 {"run": {"name": "r"}})
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.trec", "r.trec.json"]
    assert json.loads(side.read_text())["run"]["file"] == "r.trec"


def test_publish_run_without_hard_links(tmp_path, monkeypatch):
    """A file system that refuses hard links (EPERM, as FAT or some network mounts)."""
    from searchbench.data.run import Run
    from searchbench.experiment.naming import publish_run

    def no_links(src, dst, *a, **k):
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "link", no_links)
    run = Run.from_dict({"q1": {"d1": 2.0, "d2": 1.0}})
    path, digest = publish_run(run, tmp_path, "sys", tag="sys")
    assert run_file_problem(path, digest) is None
    assert publish_run(run, tmp_path, "sys", tag="sys") == (path, digest)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
