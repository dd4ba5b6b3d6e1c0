"""The one atomic writer of searchbench, and the permissions written files get.

Every file searchbench writes goes through :func:`atomic_write` (or its helpers
:func:`write_text`, :func:`write_bytes`, :func:`write_json`): a temporary file in the target's
folder, flushed and fsync'ed, given the mode ``open()`` would have given it under the
current umask, then renamed over the target. A reader never sees half a file; a failure
(disk full, interrupt) leaves the old file untouched and no temporary file behind, and is
reported as one :class:`~searchbench.errors.OutputError` naming the target, not the
temporary file.

``overwrite=False`` refuses an existing target atomically (the finished temporary file is
hard-linked to the target name, which fails if the name exists), so two runs racing for
one name cannot both win.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from ..errors import OutputError

__all__ = [
    "atomic_path",
    "atomic_write",
    "output_error",
    "public_mode",
    "refuse_sources",
    "replace",
    "resolve_for_writing",
    "write_bytes",
    "write_json",
    "write_text",
]


def public_mode(folder: bool = False) -> int:
    """The mode ``open``/``mkdir`` would give under the current umask (``0o666``/``0o777``
    masked). ``mkstemp``/``mkdtemp`` create private (0600/0700) entries; files searchbench
    writes for the user must not stay private."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if folder else 0o666) & ~mask


def os_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device: free some space and run again"
    if exc.errno == errno.EDQUOT:
        return "disk quota exceeded: free some space and run again"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied: choose a folder you can write to"
    if exc.errno == errno.EROFS:
        return "the file system is read-only: choose another folder"
    if exc.errno == errno.EISDIR:
        return "it is a folder: give a file name"
    if exc.errno == errno.ENOTDIR:
        return "a parent of it is a file, not a folder"
    return exc.strerror or str(exc)


def output_error(target: str | os.PathLike[str], exc: OSError, more: str = "") -> OutputError:
    """The :class:`OutputError` for ``exc`` raised while writing ``target``: names the
    target (never a temporary file) and says what to do (e.g. on a full disk)."""
    return OutputError(f"cannot write {target}: {os_reason(exc)}{more}")


def refuse_sources(target: str | os.PathLike[str],
                   sources: Iterable[str | os.PathLike[str]]) -> None:
    """Raise :class:`OutputError` when writing ``target`` would replace or add to an input
    being read: ``target`` is one of ``sources`` (also through a symlink or a hard link) or
    lies inside a source folder. Call it before any work, with every input of the command."""
    path = Path(target)
    real = resolve_for_writing(path, target)
    for source in sources:
        src = Path(source)
        if not os.fspath(source) or os.fspath(source) == "-":
            continue  # standard input is not a path
        resolved = resolve_for_writing(src, target)
        same = real == resolved or (path.exists() and src.exists()
                                    and _same_file(path, src))
        if same or (src.is_dir() and real.is_relative_to(resolved)):
            where = "is" if same else "is inside"
            raise OutputError(f"cannot write {target}: it {where} the input {source}, which "
                              "writing it would replace or alter; choose another output path")


def resolve_for_writing(path: str | os.PathLike[str],
                        target: str | os.PathLike[str]) -> Path:
    """``Path(path).resolve()``, or :class:`OutputError` naming ``target`` when ``path``
    is a loop of symbolic links (Python 3.11 raises a bare ``RuntimeError`` for it)."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as exc:
        raise OutputError(f"cannot write {target}: {path} is a loop of symbolic links "
                          f"({exc}); remove the link or choose another path") from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _mkdir(folder: Path, target: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], *, binary: bool = False,
                 overwrite: bool = True, compress: bool | None = None) -> Iterator[IO[Any]]:
    """Yield a file object whose content replaces ``path`` only when the block succeeds.

    ``binary`` yields a bytes sink, otherwise UTF-8 text with ``\\n`` line endings.
    ``compress`` gzips the content (default: when the name ends in ``.gz``; ``mtime=0`` so
    equal content gives equal bytes). ``overwrite=False`` raises :class:`OutputError` if
    ``path`` exists, before or at the moment of the rename.
    """
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"cannot write {target}: it is a folder: give a file name")
    if not overwrite and os.path.lexists(target):
        raise OutputError(f"cannot write {target}: it exists already (use --force, or "
                          "another name)")
    _mkdir(target.parent, target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc
    gz = target.name.endswith(".gz") if compress is None else compress
    try:
        with os.fdopen(fd, "wb") as raw:
            # a GzipFile is a BufferedIOBase: a binary file object like ``raw``
            sink = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)) if gz else raw
            if binary:
                yield sink
            else:
                text = io.TextIOWrapper(sink, encoding="utf-8", newline="\n")
                yield text
                text.flush()
                text.detach()
            if sink is not raw:
                sink.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp, public_mode())
        _publish(tmp, target, overwrite)
    except OSError as exc:
        _remove(tmp)
        if isinstance(exc, OutputError):
            raise
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc
    except BaseException:
        _remove(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an unused temporary name beside ``path`` for a writer that wants a name, not a
    file object (a library's ``save_pretrained``, an ONNX exporter): whatever the block
    creates there (a file or a folder) is renamed to ``path`` when it succeeds, and removed
    when it fails. A folder replaces only a missing or empty ``path``."""
    target = Path(path)
    _mkdir(target.parent, target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        yield tmp
        replace(tmp, target)
    finally:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            _remove(str(tmp))


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if missing) for the block: two
    processes building the same cached artefact (an ONNX export, two test workers) take
    turns, and the second finds the first one's result instead of building it again."""
    import fcntl  # lazy: keeps fcntl out of start-up

    target = Path(path)
    _mkdir(target.parent, target)
    try:
        handle = open(target, "a")  # noqa: SIM115 - held open for the whole block
    except OSError as exc:
        raise OutputError(f"cannot lock {target}: {os_reason(exc)}") from exc
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path:
    """Rename a finished file or folder onto ``target`` in one step (``os.replace``): the
    last step of a write that had to build its result elsewhere (a resumed download, a
    folder of several files). Errors are :class:`OutputError` naming ``target``."""
    try:
        os.replace(source, target)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc
    return Path(target)


def _publish(tmp: str, target: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise OutputError(f"cannot write {target}: it exists already (use --force, or "
                          "another name)") from None
    os.unlink(tmp)


def _remove(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def write_text(path: str | os.PathLike[str], text: str, *, overwrite: bool = True) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_write(path, overwrite=overwrite) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (no compression whatever the name)."""
    with atomic_write(path, binary=True, overwrite=overwrite, compress=False) as fh:
        fh.write(data)
    return Path(path)


def write_json(path: str | os.PathLike[str], obj: Any, *, indent: int | None = 2,
               overwrite: bool = True) -> Path:
    """Write ``obj`` as JSON (UTF-8, non-ASCII kept, ``default=str``) plus a newline."""
    text = json.dumps(obj, indent=indent, ensure_ascii=False, default=str,
                      allow_nan=False) if _finite(obj) else json.dumps(
        json_safe(obj), indent=indent, ensure_ascii=False, default=str)
    return write_text(path, text + "\n", overwrite=overwrite)


def _finite(obj: Any) -> bool:
    try:
        json.dumps(obj, allow_nan=False, default=str)
    except ValueError:
        return False
    return True


def json_safe(obj: Any) -> Any:
    """A JSON-safe copy: non-finite floats become ``None``, numpy scalars and arrays plain
    Python numbers and lists, keys strings."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    item = getattr(obj, "tolist", None)  # numpy scalar or array
    if callable(item) and type(obj).__module__ == "numpy":
        return json_safe(item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
