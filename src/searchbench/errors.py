"""The one exception tree of searchbench.

Every error a user can cause is a :class:`SearchbenchError`; the CLI prints its message on
one line and exits with code 1. Messages say what was found, what was expected and how to
fix it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

__all__ = [
    "BackendError",
    "ConfigError",
    "DataFormatError",
    "MissingDependencyError",
    "OutputError",
    "SearchbenchError",
    "SearchbenchWarning",
    "UnknownMeasureError",
    "require",
    "user_stacklevel",
]


class SearchbenchError(Exception):
    """Base class of every error searchbench raises on purpose."""


class DataFormatError(SearchbenchError, ValueError):
    """A file or object does not have the expected format (``path:line: ...``)."""


class UnknownMeasureError(SearchbenchError, ValueError):
    """A measure name that the grammar or the registry does not know."""


class MissingDependencyError(SearchbenchError, ImportError):
    """An optional dependency is not installed; the message says which extra to install."""


class BackendError(SearchbenchError, RuntimeError):
    """An external component (model, index, HTTP endpoint) failed."""


class ConfigError(SearchbenchError, ValueError):
    """A configuration value is unknown, missing or of the wrong type."""


class OutputError(SearchbenchError, OSError):
    """A file searchbench was asked to write cannot be written (``cannot write PATH: why``)."""


class SearchbenchWarning(UserWarning):
    """A result is still computed, but something about the input deserves attention.

    Every warning searchbench emits is one of these (the CLI prints each as one
    ``warning: ...`` line); filter them with ``warnings.filterwarnings(..., SearchbenchWarning)``.
    """


def require(module: str, extra: str) -> Any:
    """Import ``module`` lazily or raise :class:`MissingDependencyError` naming the extra."""
    import importlib  # lazy: keeps `import searchbench` to the interpreter's own modules

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"this feature needs the '{module}' package: pip install 'searchbench[{extra}]'"
        ) from exc


def user_stacklevel() -> int:
    """``stacklevel`` for :func:`warnings.warn` pointing at the first frame outside searchbench."""
    from pathlib import Path  # lazy: pathlib loads re, urllib, ipaddress (10 modules)

    package = str(Path(__file__).resolve().parent)
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
