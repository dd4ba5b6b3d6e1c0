"""Whole-process subject: ``searchbench eval QRELS RUN -m nDCG@10,RR@10,R@100,AP,P@5``.

The command a user types, in this process (the console script does the same import), with
``-f json -q``: the means are read back from its JSON for the agreement check. The TREC
reader is the compiled one unless ``SEARCHBENCH_PURE_READER=1`` is set (the benchmark
runs both); ``SEARCHBENCH_EVAL_STREAM=1`` (read by this runner only) adds ``--stream``.

    python run_searchbench_cli.py QRELS RUN   -> JSON of the means on stdout
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys

MEASURES = ["nDCG@10", "RR@10", "R@100", "AP", "P@5"]


def main(qrels_path: str, run_path: str) -> dict[str, float]:
    """Run the command; return its means keyed by measure name."""
    from searchbench.cli.main import run

    sys.argv = ["searchbench", "eval", qrels_path, run_path, "-m", ",".join(MEASURES),
                "-f", "json", "-q"]
    if os.environ.get("SEARCHBENCH_EVAL_STREAM") == "1":
        sys.argv.append("--stream")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            run()
        except SystemExit as exc:
            if exc.code:
                raise
    return {k: float(v) for k, v in json.loads(out.getvalue())["measures"].items()}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3])))
