"""The run sidecar (``RUN.json``) gets the run file's permissions: the umask's, not 0600."""

from __future__ import annotations

import json
import os
import stat

import pytest

import searchbench as sb
from searchbench.data.trec import write_run
from searchbench.retrieval.provenance import run_provenance, sidecar_path, write_sidecar


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600)])
def test_sidecar_mode_follows_the_umask_like_the_run_file(tmp_path, umask, expected):
    run = sb.Run.from_dict({"q1": {"d1": 2.0, "d2": 1.0}}, name="bm25")
    old = os.umask(umask)
    try:
        write_run(run, tmp_path / "bm25.trec")
        side = write_sidecar(tmp_path / "bm25.trec", run_provenance(run))
    finally:
        os.umask(old)
    assert side == sidecar_path(tmp_path / "bm25.trec") == tmp_path / "bm25.trec.json"
    assert _mode(tmp_path / "bm25.trec") == _mode(side) == expected
    info = json.loads(side.read_text(encoding="utf-8"))
    assert info["run"] == {"name": "bm25", "queries": 1, "entries": 2}
    assert set(info["machine"]) == {"platform", "processor", "cpus"}


def test_the_recorded_command_line_holds_no_credentials(monkeypatch):
    """The sidecar keeps the command line; a password or key in an ``--endpoint`` URL
    (either spelling of the option) must not reach the file."""
    import sys as _sys

    import searchbench as sb
    from searchbench.retrieval.provenance import run_provenance

    argv = ["searchbench", "run", "pyref", "--endpoint",
            "https://bob:PASSWORD9@api.example/v1?api-key=QKEY7&x=1",
            "--endpoint=http://u:TOKEN5@h:8080/v1", "--k1", "1.2"]
    monkeypatch.setattr(_sys, "argv", argv)
    command = run_provenance(sb.Run.from_dict({"q": {"d": 1.0}}))["command"]
    text = " ".join(command)
    assert not any(secret in text for secret in ("PASSWORD9", "QKEY7", "TOKEN5", "bob"))
    assert command[4] == "https://api.example/v1?api-key=[redacted]&x=1"
    assert command[5] == "--endpoint=http://h:8080/v1"
    assert command[:4] == argv[:4] and command[6:] == argv[6:]
