"""An output path that is one of the command's inputs (or inside an input folder) is refused
with one ``error:`` line before any work, and the input is left byte for byte as it was."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from searchbench._util import refuse_sources
from searchbench.cli.main import main
from searchbench.errors import OutputError


def _beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "hello world"}\n'
                                       '{"_id": "d2", "text": "foo bar"}\n')
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "hello"}\n')
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize("target", ["queries.jsonl", "qrels/test.tsv", "new.trec",
                                    "link-to-queries"])
def test_run_output_inside_the_source_set_is_refused(tmp_path, capsys, target):
    root = _beir(tmp_path / "set")
    if target == "link-to-queries":
        output = tmp_path / target
        output.symlink_to(root / "queries.jsonl")
    else:
        output = root / target
    before = _snapshot(root)
    assert main(["run", f"beir:{root}", "-o", str(output), "--quiet"]) == 1
    assert "is inside the input" in _one_error_line(capsys)
    assert _snapshot(root) == before


@pytest.mark.parametrize("which", ["vectors", "queries"])
def test_groundtruth_output_that_is_an_input_is_refused(tmp_path, capsys, which):
    rng = np.random.default_rng(0)
    paths = {"vectors": tmp_path / "base.npy", "queries": tmp_path / "queries.npy"}
    np.save(paths["vectors"], rng.random((20, 4)).astype("float32"))
    np.save(paths["queries"], rng.random((3, 4)).astype("float32"))
    before = paths[which].read_bytes()
    output = Path(os.path.relpath(paths[which]))  # another spelling of the same file
    assert main(["ann", "groundtruth", "--vectors", str(paths["vectors"]), "--queries",
                 str(paths["queries"]), "-k", "2", "-o", str(output), "--quiet"]) == 1
    assert "is the input" in _one_error_line(capsys)
    assert paths[which].read_bytes() == before


def test_refuse_sources_sees_hard_links_and_ignores_stdin(tmp_path):
    source = tmp_path / "run.trec"
    source.write_text("1 Q0 a 1 1 t\n")
    os.link(source, tmp_path / "alias.trec")
    with pytest.raises(OutputError, match="is the input"):
        refuse_sources(tmp_path / "alias.trec", [source])
    refuse_sources(tmp_path / "other.trec", [source, "-"])  # no error


@pytest.mark.parametrize("command", ["convert", "run", "groundtruth"])
def test_an_output_that_is_a_symlink_loop_is_one_error_line(tmp_path, capsys, command):
    """Path.resolve() raises a bare RuntimeError on a link loop in Python 3.11: it was a
    traceback; now one error line naming the output."""
    root = _beir(tmp_path / "set")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    out = str(tmp_path / "loop-a")
    np.save(tmp_path / "v.npy", np.eye(3, dtype="float32"))
    args = {"convert": ["evalset", "convert", f"beir:{root}", "-o", out],
            "run": ["run", f"beir:{root}", "-o", out, "--quiet"],
            "groundtruth": ["ann", "groundtruth", "--vectors", str(tmp_path / "v.npy"),
                            "--queries", str(tmp_path / "v.npy"), "-k", "1", "-o", out]}
    assert main(args[command]) == 1
    assert "is a loop of symbolic links" in _one_error_line(capsys)
