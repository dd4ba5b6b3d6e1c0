"""``searchbench demo``: the main job on built-in data (for now: evaluate sample runs)."""

from __future__ import annotations

import os
from pathlib import Path

from .main import app

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _sample_files() -> tuple[Path, list[Path]]:
    """trec_eval's sample files from the shared data if present, else the shipped example."""
    root = os.environ.get("SEARCHBENCH_DATA") or os.environ.get("SEARCHBENCH_TEST_DATA")
    candidates = [Path(root)] if root else []
    candidates.append(Path.cwd().parent / "shared" / "data")
    for base in candidates:
        folder = base / "trec_eval"
        if (folder / "qrels.test").is_file():
            return folder / "qrels.test", [folder / "results.test", folder / "results.trunc"]
    from ..errors import SearchbenchError

    if not (EXAMPLES / "qrels.txt").is_file():
        raise SearchbenchError("no demo data: set SEARCHBENCH_DATA to the shared data folder")
    return EXAMPLES / "qrels.txt", sorted(EXAMPLES.glob("*.trec"))


@app.command("demo")
def demo_command() -> None:
    """Evaluate sample runs with the default measures and print the table."""
    from ._output import Format
    from .eval_cmd import eval_command

    qrels, runs = _sample_files()
    print(f"searchbench demo: evaluating {', '.join(r.name for r in runs)} against {qrels}")
    eval_command(qrels=qrels, runs=runs, measure=None, per_query=False, missing="zero",
                 depth=None, keep=None, output_format=Format.table, trec_names=False,
                 decimals=4, quiet=False)
