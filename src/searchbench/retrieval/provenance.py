"""Run provenance: a sidecar JSON beside each run file with what is needed to reproduce it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .._util import library_versions, machine, utc_now, write_json
from ..data.run import Run

__all__ = ["provenance", "sidecar_path", "write_sidecar"]


def provenance(run: Run, evalset: Any = None, spec: str | None = None,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything that defines ``run``: evaluation set + hash, retriever config (from the
    run's metadata: model identity, chunker, level, k, timings), versions, machine."""
    info: dict[str, Any] = {
        "created": utc_now(),
        "run": {"name": run.name, "queries": run.n_queries, "entries": len(run)},
        "retrieval": dict(run.metadata),
        "versions": library_versions(),
        "machine": machine(),
        "command": sys.argv,
    }
    if evalset is not None:
        info["evalset"] = {"spec": spec, "name": getattr(evalset, "name", None),
                           "hash": _hash(evalset), "documents": len(evalset.corpus),
                           "queries": len(evalset.queries)}
    info.update(extra or {})
    return info


def _hash(evalset: Any) -> str | None:
    fn = getattr(evalset, "content_hash", None)
    return fn() if callable(fn) else None


def sidecar_path(run_path: str | os.PathLike[str]) -> Path:
    """``runs/x.trec`` -> ``runs/x.trec.json``."""
    p = Path(run_path)
    return p.with_name(p.name + ".json")


def write_sidecar(run_path: str | os.PathLike[str], info: dict[str, Any]) -> Path:
    """Write the provenance JSON beside ``run_path`` atomically (same mode as the run
    file: the umask's); returns its path."""
    return write_json(sidecar_path(run_path), info)
