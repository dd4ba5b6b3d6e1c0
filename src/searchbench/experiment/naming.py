"""Names and run files of experiments: validation of user names, safe file names, and
content-addressed run files whose hash the results store checks.

A user-supplied name (experiment, retriever, system, evaluation set) never becomes a path
component as it is: :func:`slug` keeps ``[A-Za-z0-9_-]`` and, when it had to change the name,
appends a short hash of the exact name, so ``bm25 a`` and ``bm25+a`` get different slugs.
A run file is named ``SLUG.CONTENT.trec`` where ``CONTENT`` is the start of the SHA-256 of its
bytes: two cells or experiments can only share a file whose bytes are identical, and a file
is never rewritten once published (:func:`publish_run`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import time
import unicodedata
import uuid
from pathlib import Path
from typing import Any

from .._util import replace, write_bytes
from ..errors import ConfigError, OutputError
from ..retrieval import file_digest, sweep_pending, write_error

__all__ = ["MAX_NAME_LENGTH", "cell_key", "check_name", "publish_retagged", "publish_run",
           "run_file_problem", "slug", "work_key"]

MAX_NAME_LENGTH = 100
SLUG_LENGTH = 48
DIGEST_CHARS = 16
_SLUG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_FORBIDDEN = {"/": "a slash", "\\": "a backslash"}


def check_name(value: Any, what: str, where: str) -> str:
    """``value`` if it is a usable name, else a :class:`ConfigError` naming ``where``.

    A name is 1 to :data:`MAX_NAME_LENGTH` printable characters (any script), without
    leading or trailing spaces, without ``/`` (it separates retriever and chunker in system
    labels) or ``\\``, and is not ``.`` or ``..``. Names are free text for the report; file
    names are made from them with :func:`slug`.
    """
    why = _name_problem(value)
    if why is None:
        return value
    raise ConfigError(f"{where}: {what} {value!r} {why}; expected 1 to {MAX_NAME_LENGTH} "
                      "printable characters without '/' or '\\' (e.g. 'bm25-k1.2')")


def _name_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"is {type(value).__name__}, not a string"
    if not value.strip():
        return "is empty"
    if len(value) > MAX_NAME_LENGTH:
        return f"is {len(value)} characters long"
    if value != value.strip():
        return "starts or ends with a space"
    if value in (".", ".."):
        return "is a path component"
    for char, label in _FORBIDDEN.items():
        if char in value:
            return f"contains {label}"
    odd = next((c for c in value if not c.isprintable()), None)
    if odd is not None:
        return f"contains the control or format character U+{ord(odd):04X}"
    return None


def slug(text: str, limit: int = SLUG_LENGTH) -> str:
    """A file-name-safe form of ``text``: ``[A-Za-z0-9_-]`` only, at most ``limit`` + 9
    characters, never empty, never starting with ``.``; an 8-hex hash of the exact text is
    appended whenever the text had to change, so different texts give different slugs."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    kept = "".join(c if c in _SLUG_CHARS else "_" for c in ascii_text)
    while "__" in kept:
        kept = kept.replace("__", "_")
    kept = kept.strip("_-")[:limit] or "x"
    if kept == text and not _ends_like_a_hash(text):
        return kept
    return f"{kept}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def _ends_like_a_hash(text: str) -> bool:
    """``NAME-1a2b3c4d``: kept as is, it could equal the slug of another name."""
    return len(text) > 9 and text[-9] == "-" and all(c in "0123456789abcdef"
                                                      for c in text[-8:])


def run_file_problem(path: str | os.PathLike[str], expected: str) -> str | None:
    """Why the run file at ``path`` no longer is the one stored with hash ``expected``
    (None when it is)."""
    try:
        found = file_digest(path)
    except FileNotFoundError:
        return f"run file {path} is missing"
    except OSError as exc:
        return f"run file {path} cannot be read ({exc.strerror or exc})"
    if found != expected:
        return (f"run file {path} changed after it was stored (its hash is {found[:19]}…, "
                f"the store recorded {expected[:19]}…)")
    return None


def publish_run(run: Any, folder: Path, stem: str, tag: str) -> tuple[Path, str]:
    """Write ``run`` as ``folder/STEM.CONTENT.trec`` and return (path, ``sha256:HEX``).

    The file is first written (atomically) under a private pending name, hashed, then
    hard-linked to its content-addressed name, which never replaces an existing file: if
    the name exists with the same bytes it is shared; if it exists with other bytes (edited
    by hand) it is moved aside to ``NAME.changed-TIME`` first, so nothing is lost.
    """
    return _publish(lambda pending: run.to_file(pending, tag=tag), folder, stem)


def publish_retagged(source: str | os.PathLike[str], expected: str, folder: Path, stem: str,
                     tag: str) -> tuple[Path, str] | None:
    """Publish a copy of the run file ``source`` whose last column (the run tag) is ``tag``
    (a slug) as :func:`publish_run` does; the rankings are the same bytes. None when
    ``source`` cannot be read or no longer has the SHA-256 ``expected``."""
    try:
        data = Path(source).read_bytes()
    except OSError:
        return None
    if "sha256:" + hashlib.sha256(data).hexdigest() != expected:
        return None
    retagged = re.sub(rb"[ \t][^ \t\n]*$", lambda _: b" " + tag.encode("ascii"), data,
                      flags=re.MULTILINE)
    return _publish(lambda pending: write_bytes(pending, retagged), folder, stem)


def _publish(write: Any, folder: Path, stem: str) -> tuple[Path, str]:
    pending = folder / f".{stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.pending"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write(pending)
        digest = file_digest(pending)
        target = folder / f"{stem}.{digest.split(':', 1)[1][:DIGEST_CHARS]}.trec"
        _link(pending, target, digest)
    except OutputError as exc:
        raise OutputError(str(exc).replace(str(pending), f"the run file {folder / stem}"
                                           ".*.trec")) from exc
    except OSError as exc:
        raise write_error(f"the run file {folder / stem}.*.trec", exc) from exc
    finally:
        with contextlib.suppress(OSError):
            pending.unlink()
    sweep_pending(folder, stem)
    return target, digest


def _link(pending: Path, target: Path, digest: str) -> None:
    """Give ``pending`` the name ``target`` without replacing another file's content."""
    try:
        _claim(pending, target)
        return
    except FileExistsError:
        if run_file_problem(target, digest) is None:
            return
    aside = target.with_name(f"{target.name}.changed-{time.strftime('%Y%m%dT%H%M%S')}")
    replace(target, aside)
    _claim(pending, target)


def _claim(pending: Path, target: Path) -> None:
    """A hard link (fails if ``target`` exists); on a file system without hard links, a
    rename when ``target`` does not exist (the same content under the same name if two
    writers race, since the name is the content's hash)."""
    try:
        os.link(pending, target)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK,
                             errno.EXDEV):
            raise
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, "exists", str(target)) from None
        replace(pending, target)


def cell_key(config: dict[str, Any], evalset_hash: str) -> str:
    """Identity of a result: the cell's whole config (names included) and the evaluation
    set's content hash. Renaming a retriever gives new keys, so the report finds the
    cells under the new name and no stale cell stands in for them."""
    return _key({**config, "evalset_hash": evalset_hash})


def work_key(config: dict[str, Any], evalset_hash: str) -> str:
    """Identity of the retrieval work: :func:`cell_key` without any retriever name (nor the
    names a hybrid fuses), so a renamed but otherwise identical cell can reuse a stored
    cell's run and scores."""
    data = {**config, "evalset_hash": evalset_hash}
    data["retriever"] = _unnamed(data.get("retriever", {}))
    if "components" in data:
        data["components"] = [_unnamed(c) for c in data["components"]]
    return _key(data)


def _unnamed(spec: dict[str, Any]) -> dict[str, Any]:
    """A retriever's settings without names: its own, and a hybrid's ``of`` (its parts
    are in ``components``, in the same order)."""
    return {k: v for k, v in spec.items() if k not in ("name", "of")}


def _key(data: dict[str, Any]) -> str:
    blob = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:20]
