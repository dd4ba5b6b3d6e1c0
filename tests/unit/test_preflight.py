"""``scripts/preflight.sh``: what `make demo`/`make test` would miss, named in one line first.

Each case runs the script with a reduced PATH (a folder of symlinks to every program of
/usr/bin but the ones the case takes away) and a package index on a closed local port, so
nothing reaches the network: a missing program or an unreachable registry is exactly one
``error: <what is missing>: <how to get it>`` line on stderr and exit 1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "preflight.sh"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the script targets Linux")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp: Path, *args: str, drop: frozenset[str] = frozenset(),
         index: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the script with PATH = symlinks to /usr/bin minus ``drop``; python3.11 = this
    interpreter (unless dropped)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    programs = {p.name: p for p in Path("/usr/bin").iterdir()}
    programs["python3.11"] = Path(os.path.realpath(sys.executable))
    for name, target in programs.items():
        if name not in drop and not (bin_dir / name).exists():
            (bin_dir / name).symlink_to(target)
    env = {"PATH": str(bin_dir), "HOME": str(tmp), "PYTHON": "python3.11",
           "PIP_INDEX_URL": index or f"http://127.0.0.1:{_closed_port()}/simple"}
    return subprocess.run(["/bin/sh", str(SCRIPT), *args], env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def test_missing_python311_is_named_with_how_to_get_it(tmp_path: Path) -> None:
    line = _one_error_line(_run(tmp_path, "--compilers", str(tmp_path / "stamp"),
                                drop=frozenset({"python3.11"})))
    assert line.startswith("error: python3.11 not found: install Python 3.11")
    assert "apt-get install python3.11 python3.11-venv" in line


def test_missing_gcc_is_named_before_the_registry_is_asked(tmp_path: Path) -> None:
    line = _one_error_line(_run(tmp_path, "--compilers", str(tmp_path / "stamp"),
                                drop=frozenset({"gcc"})))
    assert line.startswith("error: gcc not found")
    assert line.endswith(": apt-get install gcc")


@pytest.mark.skipif(not Path("/usr/bin/gcc").exists(), reason="gcc (checked first) is absent")
def test_missing_gplusplus_is_named(tmp_path: Path) -> None:
    line = _one_error_line(_run(tmp_path, "--compilers", drop=frozenset({"g++"})))
    assert line.startswith("error: g++ not found") and line.endswith(": apt-get install g++")


def test_unreachable_registry_is_one_line_without_the_password(tmp_path: Path) -> None:
    port = _closed_port()
    line = _one_error_line(_run(tmp_path, str(tmp_path / "stamp"),
                                index=f"http://u-sbtest:s3cr%40t@127.0.0.1:{port}/simple"))
    assert line.startswith(f"error: the package registry http://127.0.0.1:{port}/simple/pip/ "
                           "does not answer (")
    assert "s3cr" not in line and "u-sbtest" not in line


def test_fresh_stamps_skip_install_checks_so_reruns_work_offline(tmp_path: Path) -> None:
    stamp = tmp_path / "stamp"
    stamp.touch()  # newer than pyproject.toml and the lock: no install is due
    proc = _run(tmp_path, "--compilers", str(stamp), drop=frozenset({"gcc", "g++"}))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    # the same with the stamp missing: the install, hence gcc, is due
    stamp.unlink()
    assert _one_error_line(_run(tmp_path, "--compilers", str(stamp), drop=frozenset({"gcc"})))


def test_missing_chromium_without_apt_get_is_named(tmp_path: Path) -> None:
    stamp = tmp_path / "stamp"
    stamp.touch()
    line = _one_error_line(_run(tmp_path, "--chromium", str(stamp),
                                drop=frozenset({"chromium", "chromium-browser", "apt-get"})))
    assert line.startswith("error: chromium not found")
    assert "apt-get is not here" in line
