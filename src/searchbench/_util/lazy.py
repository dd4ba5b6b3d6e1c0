"""Names a package ``__init__`` exports but loads on first use (PEP 562).

A package that keeps a heavy module out of ``import`` lists the public names that module
defines in a ``{name: relative module}`` map and hands it here::

    __getattr__, __dir__ = lazy_exports(__name__, {"read_beir": ".beir"})

Type checkers see the same names through an ``if TYPE_CHECKING:`` import in that ``__init__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str], modules: Collection[str] = ()
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``: a name in ``names``
    is imported from its module on first access and kept in the package (the next access is
    a plain attribute); a name in ``modules`` is a sub-module imported on first access."""

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name], package), name)
            setattr(sys.modules[package], name, value)
            return value
        if name in modules:
            return importlib.import_module(f".{name}", package)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names) | set(modules))

    return __getattr__, __dir__
