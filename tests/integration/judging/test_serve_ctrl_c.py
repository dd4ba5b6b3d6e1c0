"""Ctrl-C stops the judging app with one line saying where the labels are, exit 130 (the
app stops on it by design: never Click's bare ``Aborted!``, never a traceback)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from ._server import make_evalset


def test_ctrl_c_stops_the_app_with_one_line_saying_where_the_labels_are(tmp_path) -> None:
    pytest.importorskip("uvicorn")
    folder, pool = make_evalset(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "searchbench", "judge", "serve",
                             str(folder), "--pool", str(pool), "--annotator", "ann"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:  # the URL lines, then "Serving at … until Ctrl+C."
        if "Serving at" in line:
            break
    else:
        pytest.fail(f"the app did not start: {proc.communicate(timeout=30)}")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.splitlines() == [f"interrupted: every label given is stored in "
                                f"{folder / 'judging.sqlite'}; run the same command again "
                                "to go on"]
