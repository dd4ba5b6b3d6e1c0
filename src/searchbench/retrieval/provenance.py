"""Run provenance: a sidecar JSON beside each run file with what is needed to reproduce it."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from .._util import library_versions, machine, output_error, replace, utc_now, write_json
from .._util.secrets import REDACTED, redacted
from .._util.urls import public_url
from ..data import Run
from ..errors import ConfigError, OutputError

__all__ = [
    "file_digest",
    "public_command",
    "run_provenance",
    "sidecar_path",
    "sweep_pending",
    "write_error",
    "write_run_and_sidecar",
    "write_sidecar",
]



def run_provenance(run: Run, evalset: Any = None, spec: str | None = None,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything that defines ``run``: evaluation set + hash, retriever config (from the
    run's metadata: model identity, chunker, level, k, timings), versions, machine."""
    info: dict[str, Any] = {
        "created": utc_now(),
        "run": {"name": run.name, "queries": run.n_queries, "entries": len(run)},
        "retrieval": dict(run.metadata),
        "versions": library_versions(),
        "machine": machine(),
        "command": public_command(sys.argv),
    }
    if evalset is not None:
        info["evalset"] = {"spec": spec, "name": getattr(evalset, "name", None),
                           "hash": _hash(evalset), "documents": len(evalset.corpus),
                           "queries": len(evalset.queries)}
    info.update(extra or {})
    return info


_VALUE_FLAGS = ("--header", "-H")  # flags whose value is a secret: only a name is kept


def public_command(argv: list[str]) -> list[str]:
    """``argv`` as it may be written to a file: every URL (``--endpoint URL`` or
    ``--endpoint=URL``) without its user name, password and credential-like query values;
    ``--header 'Name: value'`` as ``Name: [redacted]``; every held secret redacted."""
    from ..db import ENGINES, parse_store_url  # lazy: loads db, knn on first use

    def url_arg(arg: str) -> str:
        if "://" not in arg:
            return arg
        flag, sep, url = arg.partition("=") if arg.startswith("-") else ("", "", arg)
        try:
            if url.partition("://")[0].lower() in ENGINES:  # a store URL keeps its form
                return flag + sep + parse_store_url(url).public
            return flag + sep + public_url(url)
        except (ValueError, ConfigError):  # not parseable as a URL: keep nothing of it
            return flag + sep + REDACTED

    out: list[str] = []
    for i, arg in enumerate(argv):
        flag, sep, value = arg.partition("=")
        if i and argv[i - 1] in _VALUE_FLAGS:
            out.append(_header_name(arg))
        elif sep and flag in _VALUE_FLAGS:
            out.append(f"{flag}={_header_name(value)}")
        else:
            out.append(url_arg(arg))
    return redacted(out)


def _header_name(header: str) -> str:
    """``'X-Key: value'`` → ``'X-Key: [redacted]'`` (nothing of a value without a name)."""
    name, sep, _ = header.partition(":")
    return f"{name.strip()}: {REDACTED}" if sep else REDACTED


def _hash(evalset: Any) -> str | None:
    fn = getattr(evalset, "content_hash", None)
    return fn() if callable(fn) else None


def sidecar_path(run_path: str | os.PathLike[str]) -> Path:
    """``runs/x.trec`` -> ``runs/x.trec.json``."""
    p = Path(run_path)
    return p.with_name(p.name + ".json")


def write_sidecar(run_path: str | os.PathLike[str], info: dict[str, Any]) -> Path:
    """Write the provenance JSON beside ``run_path`` atomically (same mode as the run
    file: the umask's), every secret the process holds redacted; returns its path."""
    return write_json(sidecar_path(run_path), redacted(info))


def write_run_and_sidecar(run: Run, run_path: str | os.PathLike[str], info: dict[str, Any],
                          *, tag: str | None = None) -> Path:
    """Write ``run`` to ``run_path`` and its provenance sidecar so that both appear or
    neither does; returns the sidecar's path.

    The run is written under a hidden pending name first and its SHA-256 goes into the
    sidecar (``info["run"]["sha256"]``); the sidecar is then written atomically and the
    pending run renamed into place. A failure at any step (disk full) leaves the previous
    run and sidecar as they were, no temporary file, and raises one
    :class:`~searchbench.errors.OutputError` naming the file that could not be written.
    """
    target = Path(run_path)
    pending = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.pending")
    try:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            run.to_file(pending, tag=tag)
            digest = file_digest(pending)
        except OutputError:
            raise
        except OSError as exc:
            raise write_error(target, exc) from exc
        info = {**info, "run": {**info.get("run", {}), "file": target.name, "sha256": digest}}
        side = write_sidecar(target, info)
        try:
            replace(pending, target)
        except OSError as exc:
            raise write_error(target, exc, f"; its sidecar {side} describes the run that could "
                                           "not be moved there") from exc
    finally:
        with contextlib.suppress(OSError):
            pending.unlink()
    sweep_pending(target.parent, target.name)
    return side


def sweep_pending(folder: Path, stem: str) -> None:
    """Remove ``.STEM.PID.*.pending`` files left by a writer that was killed (``kill -9``)
    before it could clean up; files of a process still running are kept."""
    for path in folder.glob(f".{glob.escape(stem)}.*.pending"):
        pid = path.name[len(stem) + 2:].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process
        return True
    return True


def write_error(target: str | os.PathLike[str], exc: OSError, more: str = "") -> Exception:
    """The :class:`~searchbench.errors.OutputError` for ``exc`` raised while writing
    ``target`` (named, not the temporary file), saying what to do on a full disk."""
    return output_error(target, exc, more)


def file_digest(path: str | os.PathLike[str]) -> str:
    """``sha256:HEX`` of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()
