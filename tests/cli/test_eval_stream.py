"""``searchbench eval --stream``: the same output as without it; unsorted input refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures" / "trec_eval"


def _eval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "searchbench", "eval", *args],
                          capture_output=True, text=True, check=False)


def test_stream_prints_what_the_whole_file_gives(tmp_path):
    qrels, run = FIXTURES / "qrels.test", FIXTURES / "results.test"
    args = [str(qrels), str(run), "-m", "nDCG@10,AP,RR,Bpref", "--per-query", "-f", "trec"]
    whole, streamed = _eval(*args), _eval(*args, "--stream")
    assert whole.returncode == streamed.returncode == 0, streamed.stderr
    assert streamed.stdout == whole.stdout
    assert streamed.stderr == whole.stderr


def test_unsorted_run_is_one_error_line(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("a 0 x 1\nb 0 y 1\n")
    run = tmp_path / "run.trec"
    run.write_text("a Q0 x 1 1 t\nb Q0 y 1 1 t\na Q0 y 2 0.5 t\n")
    done = _eval(str(qrels), str(run), "--stream")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: {run}:3: query 'a' appears again after other queries began; streaming "
        f"evaluation (--stream) needs each query's lines together: sort it by query id first: "
        f"LC_ALL=C sort -s -k1,1 {run} > sorted.trec, or evaluate without --stream"]
    assert done.stdout == ""
