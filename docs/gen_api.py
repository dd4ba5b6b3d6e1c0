"""Generate the API reference index (docs/api.md) from the packages' curated ``__all__``.

Each public class and function is documented once, by mkdocstrings, at the module where it
is defined (found at build time, so moving code between private modules needs no docs
change); a name exported again by a later package links back to the first section.
"""

from __future__ import annotations

import importlib
import inspect

# The public surface: the package root, then the sub-packages users import from.
PACKAGES = (
    ("searchbench", "The package root: what `import searchbench as sb` gives."),
    ("searchbench.measures", "Measure names, the evaluator and its results."),
    ("searchbench.stats", "Paired tests, corrections, effect sizes and power."),
    ("searchbench.comparison", "compare(): evaluate several runs, then test them."),
    ("searchbench.retrieval", "Retrievers, encoders, chunkers, fusion and levels."),
    ("searchbench.ann", "Exact ground truth, knn_recall and ANN sweeps."),
    ("searchbench.experiment", "Experiment configs, the grid runner and the results store."),
    ("searchbench.judging", "A verified set from your documents: files, pooling, the judging "
                            "store, agreement and export."),
    ("searchbench.errors", "The exception tree."),
)


def _documentable(obj: object) -> bool:
    return inspect.isclass(obj) or inspect.isfunction(obj)


def _section(package: str, about: str, seen: dict[int, str]) -> list[str]:
    try:
        module = importlib.import_module(package)
    except ImportError:  # a package not (yet) present in this version
        return []
    names = sorted(getattr(module, "__all__", ()), key=str.lower)
    lines = [f"## `{package}`", "", about, ""]
    constants, again = [], []
    for name in names:
        obj = getattr(module, name)
        if not _documentable(obj):
            constants.append(f"`{name}`")
        elif id(obj) in seen:
            again.append(f"[`{name}`](#{seen[id(obj)]})")
        else:
            path = f"{obj.__module__}.{obj.__qualname__}"
            seen[id(obj)] = path
            lines += [f"::: {path}", "    options:", "      heading_level: 3", ""]
    if constants:
        lines += ["Constants: " + ", ".join(constants) + ".", ""]
    if again:
        lines += ["Also exported here (documented above): " + ", ".join(again) + ".", ""]
    return lines


def api_markdown() -> str:
    """mkdocstrings directives for every public class and function, package by package."""
    seen: dict[int, str] = {}
    lines: list[str] = []
    for package, about in PACKAGES:
        lines += _section(package, about, seen)
    return "\n".join(lines)
