"""Shared fixtures: the real test collections of ../shared/data.

``SEARCHBENCH_TEST_DATA`` set (as in CI) and the data missing -> the test fails.
Unset -> tests that need it skip with a clear reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _data_root() -> Path | None:
    value = os.environ.get("SEARCHBENCH_TEST_DATA")
    return Path(value) if value else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Root of the shared collections; fails if configured but missing, skips if unset."""
    root = _data_root()
    if root is None:
        pytest.skip("SEARCHBENCH_TEST_DATA is not set: the shared collections are not configured")
    if not root.is_dir():
        pytest.fail(f"SEARCHBENCH_TEST_DATA={root} is set but is not a directory")
    return root


@pytest.fixture(scope="session")
def trec_eval_dir(shared_data: Path) -> Path:
    path = shared_data / "trec_eval"
    if not path.is_dir():
        pytest.fail(f"{path} is missing from the shared data")
    return path
