"""Provenance of an experiment run: library versions, machine, git commit of the user's repo."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from .._util import library_versions, machine, utc_now

__all__ = ["git_state", "run_provenance"]


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
    return {"started": utc_now(), "libraries": library_versions(), "machine": machine(),
            "git": git_state(config_dir)}
