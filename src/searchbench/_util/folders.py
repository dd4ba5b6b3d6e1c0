"""Write a whole folder atomically: fill a temporary sibling, then swap it into place.

Used when one logical output is several files (an evaluation set). A reader never sees a
mixed folder: the old content or the new one, never parts of each. A non-empty target is
refused unless ``overwrite=True``; folders listed in ``protect`` (the sources being read)
are never written into, replaced or removed, whatever ``overwrite`` says.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import OutputError
from .files import os_reason, public_mode, resolve_for_writing

__all__ = ["atomic_folder"]


def _clash(target: Path, protect: Iterable[str | os.PathLike[str]]) -> str | None:
    real = resolve_for_writing(target, target)
    for source in protect:
        src = resolve_for_writing(source, target)
        if real == src or real.is_relative_to(src):
            return f"it is (inside) the source {source}"
        if src.is_relative_to(real):
            return f"it holds the source {source}, which replacing it would delete"
    return None


def _check(target: Path, overwrite: bool, protect: Iterable[str | os.PathLike[str]]) -> None:
    clash = _clash(target, protect)
    if clash:
        raise OutputError(f"cannot write {target}: {clash}; choose another folder")
    if os.path.lexists(target) and not target.is_dir():
        raise OutputError(f"cannot write {target}: it exists and is not a folder; give a "
                          "folder path")
    if target.is_dir() and not overwrite:
        try:
            held = sorted(p.name for p in target.iterdir())
        except OSError as exc:
            raise OutputError(f"cannot write {target}: {os_reason(exc)}") from None
        if held:
            shown = ", ".join(held[:5]) + (", …" if len(held) > 5 else "")
            raise OutputError(f"cannot write {target}: the folder is not empty (holds "
                              f"{shown}); use --force to replace it entirely, or choose a "
                              "new or empty folder")


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str], *, overwrite: bool = False,
                  protect: Iterable[str | os.PathLike[str]] = ()) -> Iterator[Path]:
    """Yield an empty temporary folder next to ``path``; when the block succeeds it
    becomes ``path`` (an existing folder is replaced as a whole, only with ``overwrite``).

    Raises :class:`OutputError` naming ``path`` when it is a file, a non-empty folder
    without ``overwrite``, one of ``protect`` (or inside or around one), or cannot be
    written. On failure ``path`` is left as it was and the temporary folder removed.
    """
    target = Path(path)
    if target.is_symlink():
        target = resolve_for_writing(target, path)
    protect = list(protect)
    _check(target, overwrite, protect)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp",
                                    dir=target.parent))
        os.chmod(tmp, public_mode(folder=True))
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from None
    try:
        yield tmp
        _check(target, overwrite, protect)  # it may have changed while we wrote
        _swap(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _swap(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` to ``target``; a non-empty ``target`` is first renamed aside, put
    back if the second rename fails, and removed after."""
    try:
        if not target.is_dir() or not any(target.iterdir()):
            os.replace(tmp, target)  # rename(2) replaces an empty folder in one step
            return
        old = target.with_name(f".{target.name}.old-{os.getpid()}-{time.time_ns()}")
        os.rename(target, old)
        try:
            os.rename(tmp, target)
        except OSError:
            os.rename(old, target)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from None
    shutil.rmtree(old, ignore_errors=True)
