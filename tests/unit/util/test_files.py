"""The one atomic writer: content, permissions, no-overwrite, failures leave nothing behind."""

from __future__ import annotations

import gzip
import json
import math
import os
import stat

import numpy as np
import pytest

from searchbench._util import (
    atomic_path,
    atomic_write,
    json_safe,
    replace,
    write_bytes,
    write_json,
    write_text,
)
from searchbench.errors import OutputError, SearchbenchError


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_text_is_written_with_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_text(tmp_path / "a" / "b.txt", "héllo\n")
    finally:
        os.umask(old)
    assert path.read_text(encoding="utf-8") == "héllo\n"
    assert _mode(path) == 0o644


def test_umask_077_gives_private_files(tmp_path):
    old = os.umask(0o077)
    try:
        path = write_json(tmp_path / "x.json", {"a": 1})
    finally:
        os.umask(old)
    assert _mode(path) == 0o600


def test_gz_names_are_compressed_deterministically(tmp_path):
    with atomic_write(tmp_path / "a.gz") as fh:
        fh.write("line\n")
    first = (tmp_path / "a.gz").read_bytes()
    with atomic_write(tmp_path / "a.gz") as fh:
        fh.write("line\n")
    assert (tmp_path / "a.gz").read_bytes() == first
    assert gzip.decompress(first) == b"line\n"


def test_failure_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = write_text(tmp_path / "t.txt", "old")
    with pytest.raises(RuntimeError), atomic_write(target) as fh:
        fh.write("new")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_no_overwrite_refuses_an_existing_target(tmp_path):
    target = write_text(tmp_path / "t.txt", "mine")
    with pytest.raises(OutputError, match=r"t\.txt: it exists already"):
        write_text(target, "theirs", overwrite=False)
    assert target.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_no_overwrite_loses_a_race_without_clobbering(tmp_path):
    target = tmp_path / "t.txt"
    with pytest.raises(OutputError, match="exists already"), \
            atomic_write(target, overwrite=False) as fh:
        fh.write("second")
        target.write_text("first")  # another process wins the name meanwhile
    assert target.read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_a_folder_target_names_the_target(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match=r"d: it is a folder"):
        write_bytes(tmp_path / "d", b"x")


def test_parent_is_a_file(tmp_path):
    write_text(tmp_path / "f", "x")
    with pytest.raises(SearchbenchError, match="cannot write"):
        write_text(tmp_path / "f" / "g.txt", "y")


def test_json_safe_and_non_finite(tmp_path):
    path = write_json(tmp_path / "j.json", {"a": math.nan, "b": np.float32(1.5),
                                             "c": np.arange(2), 3: [math.inf]})
    assert json.loads(path.read_text()) == {"a": None, "b": 1.5, "c": [0, 1], "3": [None]}
    assert json_safe((1, np.int64(2))) == [1, 2]


def test_atomic_path_publishes_what_a_library_saved(tmp_path):
    target = tmp_path / "models" / "m"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and not tmp.exists()
        tmp.mkdir()
        (tmp / "config.json").write_text("{}", encoding="utf-8")
        assert not target.exists()  # nothing visible before the block ends
    assert (target / "config.json").read_text(encoding="utf-8") == "{}"
    assert sorted(p.name for p in target.parent.iterdir()) == ["m"]


def test_atomic_path_removes_a_failed_folder(tmp_path):
    target = tmp_path / "m"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "half.bin").write_bytes(b"x")
        raise RuntimeError("export failed")
    assert list(tmp_path.iterdir()) == []


def test_replace_errors_name_the_target(tmp_path):
    target = tmp_path / "full"
    target.mkdir()
    (target / "keep").write_text("x", encoding="utf-8")
    source = tmp_path / "new"
    source.mkdir()
    with pytest.raises(OutputError, match=r"cannot write .*full"):
        replace(source, target)  # a folder never replaces a non-empty folder
    assert (target / "keep").exists()
