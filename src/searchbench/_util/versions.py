"""Provenance facts shared by every writer of provenance: library versions and the machine."""

from __future__ import annotations

import functools
import os
import platform
import time
from typing import Any

__all__ = ["LIBRARIES", "library_versions", "machine", "package_version", "utc_now"]

#: Every library whose version can change a result searchbench writes.
LIBRARIES = ("searchbench", "numpy", "scipy", "pyarrow", "bm25s", "PyStemmer", "torch",
             "sentence-transformers", "transformers", "model2vec", "faiss-cpu", "hnswlib",
             "onnxruntime")


def library_versions(packages: tuple[str, ...] = LIBRARIES) -> dict[str, str | None]:
    """``{"python": "3.11.7", "numpy": "2.1.0", ..., "torch": None}`` (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    out.update((name, package_version(name)) for name in packages)
    return out


@functools.cache
def package_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None: not installed); looked up once
    per process (a metadata scan costs about a millisecond)."""
    # lazy: keeps importlib.metadata out of start-up
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """Platform, processor and CPU count of this machine."""
    return {"platform": platform.platform(), "processor": platform.machine(),
            "cpus": os.cpu_count()}


def utc_now() -> str:
    """The current time as ``2026-12-01T08:31:51Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
