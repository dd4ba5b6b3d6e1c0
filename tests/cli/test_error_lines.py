"""Every failure a user can cause ends in ONE ``error: ...`` line on stderr and exit code 1:
OS errors name the target (never the temporary file of an atomic write) and say what to do;
an input that ends early (EOFError) is not Click's bare ``Aborted!``."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from searchbench.cli.main import app, main, os_error_message
from searchbench.errors import OutputError


@pytest.mark.parametrize(("code", "hint"), [
    (errno.ENOSPC, "free some space or write somewhere else"),
    (errno.EEXIST, "remove it or choose another path"),
    (errno.EISDIR, "expected a file path, found a folder"),
    (errno.EACCES, "check the permissions"),
])
def test_os_errors_name_the_target_not_the_temp_file(code: int, hint: str) -> None:
    exc = OSError(code, os.strerror(code), "/data/out/.results.json.k3j_9x2a.tmp")
    assert os_error_message(exc) == f"/data/out/results.json: {os.strerror(code)}; {hint}"
    plain = OSError(code, os.strerror(code), "/data/out/results.json")
    assert os_error_message(plain) == f"/data/out/results.json: {os.strerror(code)}; {hint}"


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.fixture
def vectors(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "b.npy", rng.random((50, 4), dtype=np.float32))
    np.save(tmp_path / "q.npy", rng.random((5, 4), dtype=np.float32))
    return tmp_path / "b.npy", tmp_path / "q.npy"


def test_an_output_that_is_a_folder_is_one_line(vectors, tmp_path: Path, capsys) -> None:
    base, queries = vectors
    folder = tmp_path / "out"
    folder.mkdir()
    rc = main(["ann", "groundtruth", "--vectors", str(base), "--queries", str(queries),
               "-k", "3", "-o", str(folder)])
    assert rc == 1
    assert str(folder) in one_error_line(capsys)


def test_output_errors_and_eof_errors_are_one_line(capsys) -> None:
    def fail_output() -> None:
        raise OutputError("cannot write /x/y.json: No space left on device")

    def fail_eof() -> None:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    app.command("fail-output")(fail_output)
    app.command("fail-eof")(fail_eof)
    try:
        assert main(["fail-output"]) == 1
        assert one_error_line(capsys) == "error: cannot write /x/y.json: No space left on device"
        assert main(["fail-eof"]) == 1
        line = one_error_line(capsys)
        assert line.startswith("error: an input file ends early (Compressed file ended")
    finally:
        app.commands.pop("fail-output")
        app.commands.pop("fail-eof")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                    reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_one_line(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    np.save(tmp_path / "big.npy", rng.random((3000, 8), dtype=np.float32))
    np.save(tmp_path / "qq.npy", rng.random((300, 8), dtype=np.float32))
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        out = subprocess.run(
            [sys.executable, "-m", "searchbench", "ann", "groundtruth", "--vectors",
             str(tmp_path / "big.npy"), "--queries", str(tmp_path / "qq.npy"), "-k", "100",
             "-o", str(mount / "gt.npz")], capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run(["umount", str(mount)], check=True)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1, out.stderr
    assert lines[0].startswith("error: ")
    assert re.search(r"no space left on (the )?device", lines[0], re.IGNORECASE), lines[0]


def test_a_failed_rename_names_its_target_once(tmp_path: Path) -> None:
    target = tmp_path / "run.trec"
    exc = OSError(errno.EISDIR, os.strerror(errno.EISDIR),
                  str(tmp_path / ".run.trec.a1b2c3d4.tmp"), str(target))
    assert os_error_message(exc) == f"{target}: {os.strerror(errno.EISDIR)}; expected a file " \
                                    "path, found a folder"
