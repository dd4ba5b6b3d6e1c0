"""Reading TREC files and evaluating never imports pandas (pyarrow would, ~0.15 s)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def test_read_and_evaluate_leave_pandas_unimported(tmp_path: Path) -> None:
    pytest.importorskip("pandas")  # the check means something only where pandas exists
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    (tmp_path / "run").write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 2.0 t\nq2 Q0 d9 1 1.0 t\n")
    script = textwrap.dedent(f"""
        import sys
        import searchbench as sb
        q = sb.Qrels.from_file({str(tmp_path / "qrels")!r})
        r = sb.Run.from_file({str(tmp_path / "run")!r})
        res = sb.evaluate(q, r, ["nDCG@10", "RR@10", "R@100", "AP", "P@10"])
        assert res.mean["RR@10"] == 0.25, res.mean
        print("pandas" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
