"""The test suite never reads or writes the user's cache, home or XDG folders.

A sample of tests that write the searchbench cache (embeddings, the distilled static model),
matplotlib's font cache and a judging store runs in a child pytest whose ``HOME`` and
``XDG_*`` point at empty folders and which inherits no test-run folder: afterwards those
folders must still be empty, and the run's own folder (tests/conftest.py) must be gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = [
    # distils the static model and caches chunk embeddings in the default searchbench cache
    "tests/cli/test_chunk_qrels.py::test_dense_chunk_run_counts_model_tokens",
    "tests/cli/test_run_cmd.py::test_bm25_run_writes_trec_and_sidecar",
    "tests/unit/report/test_experiment.py",         # matplotlib (font cache under XDG/HOME)
    "tests/unit/judging/test_store.py",
]
# Everything conftest.py redirects: none of it may reach the child from this run.
REDIRECTED = ("SEARCHBENCH_TEST_ROOT", "SEARCHBENCH_CACHE", "XDG_CONFIG_HOME",
              "XDG_DATA_HOME", "XDG_STATE_HOME", "MPLCONFIGDIR", "HF_HOME", "TORCH_HOME")


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_run_of_tests_leaves_home_and_user_caches_untouched(tmp_path):
    home, xdg, tmp = tmp_path / "home", tmp_path / "xdg-cache", tmp_path / "tmp"
    for folder in (home, xdg, tmp):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in REDIRECTED}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(xdg), TMPDIR=str(tmp),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
         f"--basetemp={tmp_path / 'basetemp'}", *SAMPLE],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout
    assert _listing(home) == [], "tests wrote into HOME"
    assert _listing(xdg) == [], "tests wrote into XDG_CACHE_HOME (the user's cache)"
    assert [p.name for p in tmp.iterdir() if p.name.startswith("searchbench-tests-")] == [], \
        "the test run's own folder was not removed"
