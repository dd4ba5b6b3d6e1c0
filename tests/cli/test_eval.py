"""``searchbench eval``: formats, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchbench.cli.main import main

QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n"
RUN = "q1 Q0 b 1 2.0 sys\nq1 Q0 a 2 1.0 sys\nq2 Q0 c 1 1.0 sys\n"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.trec").write_text(RUN)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.trec")


def test_json_per_query(files, capsys) -> None:
    assert main(["eval", *files, "-m", "ndcg_cut.10", "-m", "recip_rank",
                 "--per-query", "--format", "json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["run"] == "run.trec" and obj["num_q"] == 2
    assert obj["measures"]["RR"] == pytest.approx(0.75)
    assert obj["per_query"]["RR"] == {"q1": 0.5, "q2": 1.0}


def test_trec_layout_with_trec_names(files, capsys) -> None:
    assert main(["eval", *files, "-m", "P@1,RR", "-f", "trec", "--trec-names"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines == [["runid", "all", "sys"], ["P_1", "all", "0.5000"],
                     ["recip_rank", "all", "0.7500"]]


def test_trec_layout_is_trec_eval_s(files, capsys) -> None:
    """Query by query, then 'all'; counts as integers; num_q only for 'all'."""
    assert main(["eval", *files, "-m", "num_ret,num_q,P.1", "-f", "trec", "--trec-names",
                 "--per-query"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines == [["num_ret", "q1", "2"], ["P_1", "q1", "0.0000"],
                     ["num_ret", "q2", "1"], ["P_1", "q2", "1.0000"],
                     ["runid", "all", "sys"], ["num_ret", "all", "3"], ["num_q", "all", "2"],
                     ["P_1", "all", "0.5000"]]


def test_trec_layout_diffs_clean_against_trec_eval(trec_eval_dir: Path, capsys) -> None:
    """Our -f trec output equals trec_eval's own lines for the same measures, -q included."""
    names = ["num_ret", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P_5", "P_10"]
    for flag, expected in (([], "out.test"), (["--per-query"], "out.test.aq")):
        assert main(["eval", str(trec_eval_dir / "qrels.test"), str(trec_eval_dir / "results.test"),
                     "-m", ",".join(n.replace("_", ".") if n.startswith("P_") else n
                                    for n in names),
                     "-f", "trec", "--trec-names", "--missing", "skip", "-q", *flag]) == 0
        ours = capsys.readouterr().out.splitlines()
        theirs = [line for line in (trec_eval_dir / expected).read_text().splitlines()
                  if line.split()[0] in {"runid", *names}]
        assert ours == theirs


def test_trec_names_keep_measures_with_other_rel_apart(files, capsys) -> None:
    assert main(["eval", *files, "-m", "P@1", "-m", "P(rel=2)@1", "--trec-names",
                 "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["measures"] == {"P_1": 0.5, "P(rel=2)@1": 0.5}


def test_tsv_and_table(files, capsys) -> None:
    assert main(["eval", *files, "-m", "P@1", "-f", "tsv", "--per-query"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "run\tquery\tmeasure\tvalue" and "run.trec\tq2\tP@1\t1.0000" in out
    assert main(["eval", *files, "-m", "P@1"]) == 0
    assert "0.5000" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "foo"], "unknown measure 'foo'"),
        (["-m", "P@0"], "positive integer"),
        (["-m", "AP(rel=0)"], "rel must be a positive integer"),
    ],
)
def test_user_errors_exit_1_with_one_line(files, capsys, args, message) -> None:
    assert main(["eval", *files, *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]


def test_bad_file_exits_1(tmp_path: Path, files, capsys) -> None:
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 a 1 notanumber t\n")
    assert main(["eval", files[0], str(bad)]) == 1
    assert f"{bad}:1: found score 'notanumber', expected a number" in capsys.readouterr().err


def test_usage_error_exits_2(files, capsys) -> None:
    assert main(["eval"]) == 2
    assert main(["eval", *files, "--missing", "drop"]) == 2
    assert main(["eval", *files, "--keep", "last"]) == 2


def test_corrupt_gzip_is_one_line(tmp_path: Path, files, capsys) -> None:
    import gzip

    bad = tmp_path / "cut.trec.gz"
    bad.write_bytes(gzip.compress(RUN.encode() * 50)[:-30])
    assert main(["eval", files[0], str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}: the compressed file is truncated or corrupt" in err[0]


def test_run_names_are_not_markup(tmp_path: Path, files, capsys) -> None:
    odd = tmp_path / "[bold]x[.trec"
    odd.write_text(RUN)
    assert main(["eval", files[0], str(odd), "-m", "P@1"]) == 0
    assert "[bold]x[.trec" in capsys.readouterr().out


def test_tsv_rows_survive_a_run_name_with_tab_and_newline(tmp_path: Path, files,
                                                          capsys) -> None:
    """A file name may hold a tab or a newline: each TSV row keeps exactly four fields."""
    odd = tmp_path / "a\tb\nc.trec"
    odd.write_text(RUN)
    assert main(["eval", files[0], str(odd), "-m", "P@1", "-f", "tsv", "--per-query"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 1 + 3  # header, q1, q2, all
    assert all(len(row.split("\t")) == 4 for row in rows), rows
    assert rows[1].startswith("a\\u0009b\\u000ac.trec\tq1\t")


def test_console_script_and_module_entry(files) -> None:
    exe = Path(sys.executable).parent / "searchbench"
    for cmd in ([str(exe)], [sys.executable, "-m", "searchbench"]):
        out = subprocess.run([*cmd, "eval", *files, "-m", "P@1", "-f", "json"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["measures"]["P@1"] == 0.5
        bad = subprocess.run([*cmd, "eval", *files, "-m", "nope"], capture_output=True,
                             text=True)
        assert bad.returncode == 1 and "Traceback" not in bad.stderr


def test_eval_asks_openblas_for_one_thread_unless_told(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """Before numpy loads, ``eval`` sets ``OPENBLAS_NUM_THREADS=1`` (its idle threads spin
    on the core the run scan needs); a number the user set is kept, and once numpy is
    loaded nothing is set (it would change nothing)."""
    import numpy

    from searchbench.cli import eval_cmd

    monkeypatch.delenv(eval_cmd.BLAS_THREADS, raising=False)
    eval_cmd.one_blas_thread()
    assert eval_cmd.BLAS_THREADS not in os.environ  # numpy is loaded here
    monkeypatch.delitem(sys.modules, "numpy")
    eval_cmd.one_blas_thread()
    assert os.environ[eval_cmd.BLAS_THREADS] == "1"
    monkeypatch.setenv(eval_cmd.BLAS_THREADS, "4")
    eval_cmd.one_blas_thread()
    assert os.environ[eval_cmd.BLAS_THREADS] == "4"
    monkeypatch.setitem(sys.modules, "numpy", numpy)


def test_eval_process_runs_openblas_on_one_thread(tmp_path: Path) -> None:
    """The whole command, in its own process, asks numpy's OpenBLAS for one thread."""
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    code = ("import sys\nfrom searchbench.cli.main import main\n"
            f"sys.argv = ['searchbench', 'eval', '-q', {str(qrels)!r}, {str(run)!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "import os\nprint('threads', os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.splitlines()[-1] == "threads 1"
