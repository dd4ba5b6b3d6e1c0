"""Fixtures of the experiment tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._data import CONFIG, write_set


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    """``tmp_path/exp.toml`` over ``tmp_path/set`` (3 retrievers × 2 chunkers, 9 cells)."""
    write_set(tmp_path / "set")
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path
