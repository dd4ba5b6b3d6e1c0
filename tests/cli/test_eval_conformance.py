"""``searchbench eval`` on the conformance edges: one error line, and the NumRel note."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchbench.cli.main import main


@pytest.fixture()
def case(tmp_path: Path) -> dict[str, str]:
    """The qrels/run checked against trec_eval, plus a run of other queries."""
    files = {"qrels": "1 0 a 1\n1 0 b 2\n", "run": "1 Q0 a 1 1 t\n", "other": "7 Q0 a 1 1 t\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in files}


def test_no_shared_query_under_skip_is_one_error_line(case, capsys) -> None:
    assert main(["eval", case["qrels"], case["run"], case["other"], "--missing", "skip"]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and captured.out == ""
    assert f"run file {case['other']} shares no query id with qrels file {case['qrels']}" \
        in err[0]
    assert "--missing zero" in err[0]


def test_no_shared_query_under_zero_still_scores(case, capsys) -> None:
    assert main(["eval", case["qrels"], case["other"], "-m", "AP", "-f", "tsv"]) == 0
    assert "other\tall\tAP\t0.0000" in capsys.readouterr().out


def test_trec_output_notes_the_num_rel_all_difference(case, capsys) -> None:
    args = ["eval", case["qrels"], case["run"], "-m", "NumRel(rel=2),num_rel", "-f", "trec",
            "--trec-names", "--per-query"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert [line.split() for line in captured.out.splitlines()] == [
        ["NumRel(rel=2)", "1", "1"], ["num_rel", "1", "2"], ["runid", "all", "t"],
        ["NumRel(rel=2)", "all", "1"], ["num_rel", "all", "2"]]
    assert captured.err.startswith("note: NumRel(rel=2) 'all' is the sum of the per-query")
    assert "trec_eval -c -l2" in captured.err


@pytest.mark.parametrize("extra", [["-q"], ["--missing", "skip"], ["-f", "json"]])
def test_no_note_when_quiet_skipping_or_not_trec(case, capsys, extra) -> None:
    args = ["eval", case["qrels"], case["run"], "-m", "NumRel(rel=2)", "-f", "trec", *extra]
    assert main(args) == 0
    assert "note:" not in capsys.readouterr().err
