"""The one check for a user-supplied name that becomes a file or folder name, and the
questions about a user-supplied path that never raise (:func:`path_exists`, :func:`is_dir`).

A split, evaluation-set, retriever or system name comes from a command line, a config or
an evaluation set; before it becomes one component of a path it must pass
:func:`safe_component`, so that ``--split ../../x`` cannot write outside the output folder
and a name cannot hide a separator, a NUL or a control character.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from ..errors import ConfigError

__all__ = ["default_cache_dir", "is_dir", "path_exists", "safe_component", "within"]

_FORBIDDEN = {"/": "a '/'", "\\": "a '\\'", "\x00": "a NUL character"}
_MAX_BYTES = 200  # well under NAME_MAX (255) so a suffix (.trec, .tsv.gz, .tmp) still fits


def _problem(name: str) -> str | None:
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"{name!r} names a folder, not a new file"
    for ch, what in _FORBIDDEN.items():
        if ch in name:
            return f"it contains {what} (a path separator or terminator)"
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name):
        return "it contains a control or invisible formatting character"
    if name != name.strip():
        return "it starts or ends with white space"
    if len(name.encode("utf-8", "surrogatepass")) > _MAX_BYTES:
        return f"it is longer than {_MAX_BYTES} bytes"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not valid Unicode (a lone surrogate)"
    return None


def safe_component(name: str, what: str) -> str:
    """``name`` unchanged if it is safe as ONE path component, else :class:`ConfigError`.

    Refused: the empty name, ``.`` and ``..``, ``/``, ``\\``, NUL, control and invisible
    formatting characters (category Cc, Cf, Zl, Zp: newline, U+2028, bidi overrides…),
    leading or trailing white space, lone surrogates and more than 200 UTF-8 bytes. ``what``
    names the thing in the message (``"split"``, ``"retriever name"``…).
    """
    if not isinstance(name, str):
        raise ConfigError(f"invalid {what} {name!r}: expected a text name")
    problem = _problem(name)
    if problem:
        raise ConfigError(
            f"invalid {what} {name!r}: {problem}; it becomes a file or folder name, so use "
            "letters, digits, '-', '_' and '.' (not '.' or '..' alone)")
    return name


def within(root: str | Path, *names: str, what: str = "name") -> Path:
    """``root / name / …`` after checking every name with :func:`safe_component` (and that
    the result resolves inside ``root``, whatever symlinks say)."""
    base = Path(root)
    path = base.joinpath(*(safe_component(n, what) for n in names))
    resolved_root = base.resolve()
    if not path.resolve().is_relative_to(resolved_root):
        raise ConfigError(f"invalid {what}: {path} leads outside {base}")
    return path


def default_cache_dir() -> Path:
    """The searchbench cache: ``$SEARCHBENCH_CACHE``, else ``$XDG_CACHE_HOME/searchbench``,
    else ``~/.cache/searchbench``. The one rule for every cached thing (embeddings, model
    exports, downloaded collections); the test suite points it at its own folder."""
    env = os.environ.get("SEARCHBENCH_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "searchbench"


def path_exists(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` exists; False, not an OSError, for one the system refuses to look
    up (a name too long, a NUL byte, a loop of links, no permission): a path from a config
    or a command line is then "not found", as anything else that is not there."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def is_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder; False for one the system refuses to look up (see
    :func:`path_exists`)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False
