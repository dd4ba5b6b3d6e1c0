"""Load BEIR SciFact (test split) from the shared collections for retrieval tests."""

from __future__ import annotations

from pathlib import Path

import pytest


def load_scifact(shared_data: Path):
    """The EvalSet of ``beir/scifact`` via the public loader (fails if it is missing)."""
    folder = shared_data / "beir" / "scifact"
    if not folder.is_dir():
        pytest.fail(f"{folder} is missing from the shared data")
    import searchbench as sb

    if hasattr(sb, "load_evalset"):
        return sb.load_evalset(f"beir:{folder}")
    from searchbench.data.beir import read_beir

    return read_beir(folder)
