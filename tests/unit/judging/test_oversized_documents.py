"""``evalset init --docs`` and files too large to be one document (issue 24 item 15):
skipped with the reason past a documented, configurable limit, and never read past it,
so a huge file under an address-space limit is a report line, not a MemoryError."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchbench.data import read_corpus_jsonl
from searchbench.errors import ConfigError
from searchbench.judging import init_evalset
from searchbench.judging.folder import MAX_FILE_BYTES, parse_size

ROOT = Path(__file__).resolve().parents[3]


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:  # truncate -s: no disk blocks, reads as zeros
        fh.truncate(size)


def test_oversized_document_files_are_skipped_with_a_reason(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Small\nkept\n")
    (docs / "exact.md").write_text("x" * 1000)
    _sparse(docs / "big.md", 1001)
    report = init_evalset(tmp_path / "set", docs, max_file_bytes=1000)
    assert report.added == ["a.md", "exact.md"]  # a file of exactly the limit is kept
    assert report.skipped == [("big.md", "1001 bytes, over the 1000 bytes limit for one "
                                         "document; split it, or raise the limit "
                                         "(--max-file-size)")]
    assert [d.id for d in read_corpus_jsonl(tmp_path / "set" / "corpus.jsonl")] == \
        ["a.md", "exact.md"]


def test_the_default_limit_skips_a_sparse_file_past_it(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Small\nkept\n")
    _sparse(docs / "big.txt", MAX_FILE_BYTES + 1)
    report = init_evalset(tmp_path / "set", docs)
    assert report.added == ["a.md"]
    [(path, why)] = report.skipped
    assert path == "big.txt" and "over the 50.0 MiB limit" in why


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS semantics")
def test_a_huge_file_under_an_address_space_limit_is_a_report_line(tmp_path):
    """The reported case: an 8 GiB file, a 6 GiB address-space limit (before: MemoryError)."""
    import resource

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Small\nkept\n")
    _sparse(docs / "huge.md", 8 * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-m", "searchbench", "evalset", "init",
                           str(tmp_path / "set"), "--docs", str(docs)], capture_output=True,
                          text=True, check=False, preexec_fn=limit, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote {tmp_path / 'set' / 'corpus.jsonl'}: 1 documents (1 added, 0 updated, "
        "0 unchanged, 0 removed)",
        "skipped huge.md: 8192.0 MiB, over the 50.0 MiB limit for one document; split it, "
        "or raise the limit (--max-file-size)"]
    assert done.stderr == ""


@pytest.mark.parametrize("text, expected", [("50MB", 50 * 10**6), ("200MiB", 200 * 2**20),
                                            ("1G", 10**9), ("1.5kib", 1536), ("123", 123),
                                            (" 2 GiB ", 2 * 2**30)])
def test_max_file_size_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["12x", "", "-5MB", "0", "MB"])
def test_max_file_size_refuses_what_is_not_a_size(text):
    with pytest.raises(ConfigError, match="--max-file-size"):
        parse_size(text, "--max-file-size")
