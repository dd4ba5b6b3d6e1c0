"""``searchbench compare``: formats, the regression gate, one-line errors with exit 1."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from searchbench.cli.main import main

N_Q = 30


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _run_lines(good: bool, n_q: int = N_Q, tag: str = "sys") -> list[str]:
    """Per query: relevant docs r0, r1 and non-relevant n0..n3; 'good' ranks r* first on
    every query, the other on only every sixth query."""
    out = []
    for i in range(n_q):
        first = ["r0", "r1"] if good or i % 6 == 0 else ["n0", "n1", "n2", "n3"]
        rest = [d for d in ["r0", "r1", "n0", "n1", "n2", "n3"] if d not in first]
        out += [f"q{i:02d} Q0 {d} {k + 1} {10 - k} {tag}" for k, d in enumerate(first + rest)]
    return out


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    qrels = [f"q{i:02d} 0 {d} {g}" for i in range(N_Q)
             for d, g in [("r0", 2), ("r1", 1), ("n0", 0), ("n1", 0)]]
    return {
        "qrels": _write(tmp_path / "qrels.txt", qrels),
        "main": _write(tmp_path / "main.trec", _run_lines(True)),
        "pr": _write(tmp_path / "pr.trec", _run_lines(False)),
        "same": _write(tmp_path / "same.trec", _run_lines(True, tag="other")),
        "short": _write(tmp_path / "short.trec", _run_lines(True, n_q=N_Q - 4)),
    }


def _args(files, *runs: str) -> list[str]:
    return ["compare", files["qrels"], *(files[r] for r in runs)]


def test_table_marks_baseline_and_significant_loss(files, capsys) -> None:
    assert main([*_args(files, "main", "pr", "same"), "--baseline", files["main"],
                 "-m", "nDCG@10", "-m", "RR@10"]) == 0
    out = capsys.readouterr().out
    assert "main.trec (baseline)" in out
    assert re.search(r"\d▼", out) and not re.search(r"\d▲", out)
    assert "holm" in out and "30 queries" in out


def test_markdown_latex_csv_json(files, capsys) -> None:
    base = [*_args(files, "main", "pr"), "-m", "ndcg_cut.10", "-t", "t", "-c", "bonferroni"]
    assert main([*base, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("| system | nDCG@10 |") and "| main.trec (baseline) | **" in md
    assert main([*base, "--format", "latex"]) == 0
    assert r"\toprule" in capsys.readouterr().out
    assert main([*base, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["system"] for r in rows] == ["main.trec", "pr.trec"]
    assert rows[1]["significant"] == "True" and float(rows[1]["delta"]) < 0
    assert main([*base, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["test"] == "t" and data["correction"] == "bonferroni"
    assert data["comparisons"][0]["system"] == "pr.trec"


def test_per_query_long_format(files, capsys) -> None:
    assert main([*_args(files, "main", "pr"), "-m", "RR@10", "-f", "csv", "--per-query"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 2 * N_Q and list(rows[0]) == ["system", "query", "measure", "value"]
    assert main([*_args(files, "main", "pr"), "--per-query"]) == 2  # a usage error
    assert "--per-query needs --format csv" in capsys.readouterr().err


def test_same_seed_same_p_values(files, capsys) -> None:
    args = [*_args(files, "main", "pr"), "-m", "nDCG@10", "-f", "json", "--seed", "7",
            "--permutations", "500"]
    outs = []
    for _ in range(2):
        assert main(args) == 0
        outs.append(json.loads(capsys.readouterr().out)["comparisons"][0]["p_value"])
    assert outs[0] == outs[1] and outs[0] >= 1 / 501


def test_gate_fails_on_significant_regression(files, capsys) -> None:
    code = main([*_args(files, "main", "pr"), "--baseline", "main.trec", "-m", "RR@10",
                 "--fail-if-worse", "ndcg_cut.10", "-f", "csv"])
    assert code == 1
    captured = capsys.readouterr()
    measures = [r["measure"] for r in csv.DictReader(io.StringIO(captured.out))]
    assert measures == ["RR@10", "nDCG@10"] * 2  # the gate's measure is compared too
    reasons = captured.err.strip().splitlines()
    assert len(reasons) == 1 and reasons[0].startswith(
        "regression: pr.trec is significantly worse than main.trec on nDCG@10")


def test_gate_passes_identical_runs_and_small_drops(files, capsys) -> None:
    assert main([*_args(files, "main", "same"), "--fail-if-worse", "nDCG@10,RR@10"]) == 0
    assert main([*_args(files, "main", "pr"), "--fail-if-worse", "nDCG@10",
                 "--min-delta", "0.99"]) == 0
    assert "regression" not in capsys.readouterr().err


@pytest.mark.parametrize(("extra", "message"), [
    (["--baseline", "nope.trec"], "baseline 'nope.trec' is not among the runs"),  # usage: 2
    ([], "runs cover different query sets: short.trec lacks 4 of 30 qrels queries "
         "(e.g. q26, q27, q28); 26 queries are answered by every run; choose a policy: "
         "--missing zero"),
    (["--missing", "zero", "--alpha", "2"], "alpha is 2.0; expected a number strictly "
                                             "between 0 and 1"),
    (["-m", "nDCG@x"], ""),
])
def test_bad_input_one_line_exit_1(files, capsys, extra, message) -> None:
    assert main([*_args(files, "main", "short"), *extra]) == (2 if "--baseline" in extra
                                                              else 1)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert "Traceback" not in err


def test_single_run_and_too_few_queries(files, tmp_path, capsys) -> None:
    assert main(_args(files, "main")) == 2  # a usage error
    assert "at least 2 different runs" in capsys.readouterr().err
    one = _write(tmp_path / "one.txt", ["q00 0 r0 1"])
    assert main(["compare", one, files["main"], files["pr"]]) == 1
    assert "a paired test needs at least 2" in capsys.readouterr().err


def test_different_query_sets_with_an_explicit_policy(files, capsys) -> None:
    assert main([*_args(files, "main", "short"), "-f", "markdown", "--missing", "zero"]) == 0
    captured = capsys.readouterr()
    assert "short.trec lacks 4 of 30 qrels queries" in captured.out
    assert "scored 0 (missing='zero')" in captured.out
    assert "warning: run 'short.trec': 4 qrels queries have no results" in captured.err
    assert main([*_args(files, "main", "short"), "-f", "json", "--missing", "skip"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_queries"] == 26 and data["missing"] == "skip"


@pytest.mark.parametrize(("extra", "option"), [
    (["--test", "anova"], "--test"),
    (["--correction", "sidak"], "--correction"),
    (["--missing", "sometimes"], "--missing"),
    (["--seed", "-1"], "--seed"),
    (["--permutations", "100000000000"], "--permutations"),
])
def test_bad_option_values_are_usage_errors(files, capsys, extra, option) -> None:
    assert main([*_args(files, "main", "pr"), *extra]) == 2
    err = capsys.readouterr().err
    assert "Invalid value" in err and option in err and "Traceback" not in err


def test_choices_are_case_insensitive(files, capsys) -> None:
    assert main([*_args(files, "main", "pr"), "-m", "P@5", "-t", "T", "-c", "BH",
                 "-f", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["test"], data["correction"]) == ("t", "bh")


def test_same_run_file_twice_is_one_error_line(files, tmp_path, capsys, monkeypatch) -> None:
    assert main(_args(files, "main", "pr", "main")) == 2  # a usage error
    err = capsys.readouterr().err
    assert err.startswith("error: run file ") and "is given twice" in err
    assert len(err.strip().splitlines()) == 1
    monkeypatch.chdir(tmp_path)
    assert main(["compare", files["qrels"], "main.trec", "./main.trec"]) == 2
    assert "is given twice" in capsys.readouterr().err


def test_option_combinations_are_checked_before_loading(files, tmp_path, capsys) -> None:
    missing = str(tmp_path / "absent.trec")
    assert main(["compare", files["qrels"], files["main"], missing, "--per-query"]) == 2
    assert capsys.readouterr().err.strip() == "error: --per-query needs --format csv or " \
                                              "--format json"


def test_trec_eval_cutoff_lists_as_in_eval(files, capsys) -> None:
    assert main([*_args(files, "main", "pr"), "-m", "P.5,10", "-m", "ndcg_cut.5,10",
                 "--fail-if-worse", "P.5,10", "-f", "csv", "--min-delta", "1"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["measure"] for r in rows[:4]] == ["P@5", "P@10", "nDCG@5", "nDCG@10"]
