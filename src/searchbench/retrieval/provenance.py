"""Run provenance: a sidecar JSON beside each run file with what is needed to reproduce it."""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..data.run import Run

__all__ = ["library_versions", "provenance", "sidecar_path", "write_sidecar"]

_PACKAGES = ("searchbench", "numpy", "bm25s", "PyStemmer", "torch", "sentence-transformers",
             "transformers", "model2vec", "faiss-cpu", "onnxruntime")


def library_versions() -> dict[str, str | None]:
    """Installed versions of searchbench and the retrieval libraries (None if absent)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def provenance(run: Run, evalset: Any = None, spec: str | None = None,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything that defines ``run``: evaluation set + hash, retriever config (from the
    run's metadata: model identity, chunker, level, k, timings), versions, machine."""
    info: dict[str, Any] = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run": {"name": run.name, "queries": run.n_queries, "entries": len(run)},
        "retrieval": dict(run.metadata),
        "versions": library_versions(),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
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
    """Write the provenance JSON beside ``run_path`` atomically; returns its path."""
    target = sidecar_path(run_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
    os.replace(tmp, target)
    return target
