"""Provenance of an experiment run: library versions, machine, git commit of the user's repo."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["git_state", "library_versions", "run_provenance"]

LIBRARIES = ("searchbench", "numpy", "scipy", "pyarrow", "bm25s", "PyStemmer", "torch",
             "sentence-transformers", "transformers", "model2vec", "faiss-cpu")


def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries a run can depend on (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git repository holding ``folder``, or None."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True,
                                  text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status)}


def run_provenance(config_dir: Path) -> dict[str, Any]:
    """Versions, machine and git state at the start of a run."""
    return {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "libraries": library_versions(),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "processor": platform.machine()},
            "git": git_state(config_dir)}
