"""The compiled TREC scanner (``data/_scan.c``), when it was built, and which reader is active.

``pip install`` builds the extension where a C compiler and Python's headers exist; without
them, or with ``SEARCHBENCH_PURE_READER=1`` in the environment (the tests run both paths),
the pure numpy/pyarrow reader reads every file; so it does when the built extension is
of an older ``_scan.c`` (its ``ABI`` differs: rebuild with ``pip install -e .``). Either
way the values and the error messages are the same: the scanner takes only lines it fully
understands and hands any other file to the pure reader.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["FORCE_PURE", "reader_path", "scanner"]

FORCE_PURE = "SEARCHBENCH_PURE_READER"
ABI = 5  # the interface of data/_scan.c this code expects (its ABI constant)


def scanner() -> ModuleType | None:
    """The compiled ``_scan`` module, or None (not built, or the pure reader forced)."""
    if os.environ.get(FORCE_PURE, "") not in ("", "0"):
        return None

    try:
        module = importlib.import_module(f"{__package__}._scan")
    except ImportError:
        return None
    # a build of an older _scan.c (an in-place .so not rebuilt after an update) reads
    # differently: the pure reader is used until it is rebuilt
    return module if getattr(module, "ABI", 1) == ABI else None


def reader_path() -> str:
    """``"compiled"`` or ``"pure"``: the TREC reader in use (``searchbench --version``)."""
    return "compiled" if scanner() is not None else "pure"
