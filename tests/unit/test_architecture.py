"""The architecture, checked on the source (the layer order itself is import-linter's
contract in ``pyproject.toml``, run by ``make test``).

- A module never imports a private name (``_x``) or a private module (``._x``) of ANOTHER
  sub-package: what a sub-package shares is in its curated ``__init__``. ``searchbench._util``
  is the one shared bottom layer and is imported by name; its own privates stay private.
- No module imports the package root (``from .. import __version__``): the root imports
  the sub-packages, so the edge would be a cycle.
- The plumbing exists once: atomic writes (``mkstemp``, ``os.replace``, ...) only in
  ``_util/files.py``, Markdown tables only in ``_util/markdown.py``, matplotlib set up only in
  ``_util/plots.py``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "searchbench"
SHARED = {"_util"}  # private-looking but the designated bottom layer


def _modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _imports(name: str, path: Path, tree: ast.Module) -> Iterator[tuple[int, str, str | None]]:
    """``(line, absolute module, imported name or None)`` for every import in the module."""
    package = name if _is_package(path) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                yield node.lineno, module, alias.name


def _subpackage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 else None


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(SRC)}:{line}"


def test_no_private_import_across_subpackages() -> None:
    offenders = []
    for name, path, tree in _modules():
        own = _subpackage(name)
        for line, module, imported in _imports(name, path, tree):
            target = _subpackage(module)
            if target is None or target == own:
                continue
            parts = module.split(".")[1:]
            private = [p for p in parts if _private(p) and p not in SHARED]
            if imported and _private(imported):
                private.append(imported)
            if private:
                what = f"{module}.{imported}" if imported else module
                offenders.append(f"{_where(path, line)}: {what} ({', '.join(private)} is "
                                 f"private to searchbench.{target})")
    assert not offenders, (
        "private names or modules imported from another sub-package (make them public in "
        "that package's __init__, or move them):\n  " + "\n  ".join(offenders))


def test_no_module_imports_the_package_root() -> None:
    offenders = [f"{_where(path, line)}: from {module} import {imported}"
                 for name, path, tree in _modules() if name != PACKAGE
                 for line, module, imported in _imports(name, path, tree)
                 if module == PACKAGE and imported is not None
                 and name != f"{PACKAGE}.__main__"]
    assert not offenders, ("modules importing the package root (a cycle: the root imports "
                           "them):\n  " + "\n  ".join(offenders))


def _calls(tree: ast.Module) -> Iterator[tuple[int, str, ast.Call]]:
    """``(line, dotted callee, call)`` for every call, e.g. ``os.replace`` or ``.write_text``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func, names = node.func, []
            while isinstance(func, ast.Attribute):
                names.append(func.attr)
                func = func.value
            names.append(func.id if isinstance(func, ast.Name) else "")
            yield node.lineno, ".".join(reversed(names)), node


def _writes(callee: str, call: ast.Call) -> bool:
    last = callee.rpartition(".")[2]
    if callee in ("os.replace", "os.rename", "tempfile.mkstemp", "mkstemp", "os.open") or (last in (
            "NamedTemporaryFile", "write_text", "write_bytes") and callee.count(".") >= 1):
        return True
    if callee in ("open", "io.open") or (last == "open" and callee != "gzip.open"):
        mode = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "mode"), None)
        texts = [n.value for n in ast.walk(mode) if isinstance(n, ast.Constant)] if mode else []
        return any(isinstance(t, str) and set(t) & set("wax+") for t in texts)
    return False


#: Writers that are not an atomic write of a finished file, and why.
NOT_ATOMIC_WRITES = {
    # A resumable download appends to ``NAME.part``; _util.replace publishes it when done.
    ("collections/download.py", "open"),
}


def _where_in_package(path: Path) -> str:
    return path.relative_to(SRC / PACKAGE).as_posix()


WRITERS = ("_util/files.py", "_util/folders.py")  # files, and whole folders swapped in


def test_one_atomic_writer() -> None:
    found = [f"{_where(path, line)}: {callee}(...)"
             for _, path, tree in _modules() if _where_in_package(path) not in WRITERS
             for line, callee, call in _calls(tree) if _writes(callee, call)
             and (_where_in_package(path), callee) not in NOT_ATOMIC_WRITES]
    assert not found, ("files written outside searchbench._util.files (use atomic_write, "
                       "atomic_path, write_text, write_bytes, write_json or replace):\n  "
                       + "\n  ".join(found))


def _strings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef |
                                ast.AsyncFunctionDef)
                  and n.body and isinstance(n.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            yield node.lineno, node.value


def test_one_markdown_table_emitter() -> None:
    row = re.compile(r"^\|[-: |]*-{3}|^\| $|^ \| $|^ \|$|\|---")
    found = sorted({f"{_where(path, line)}: {text!r}"
                    for _, path, tree in _modules()
                    if _where_in_package(path) != "_util/markdown.py"
                    for line, text in _strings(tree) if row.search(text)})
    assert not found, ("Markdown tables built outside searchbench._util.markdown (use "
                       "md_table / md_text):\n  " + "\n  ".join(found))


def test_one_plot_setup() -> None:
    found = [f"{_where(path, line)}: {module}"
             for name, path, tree in _modules() if _where_in_package(path) != "_util/plots.py"
             for line, module, _ in _imports(name, path, tree)
             if module.split(".")[0] == "matplotlib"]
    assert not found, ("matplotlib imported outside searchbench._util.plots (use its "
                       "figure / save helpers):\n  " + "\n  ".join(found))


def test_every_subpackage_has_a_curated_public_surface() -> None:
    """Each sub-package says what is public (``__all__``), and every listed name exists."""
    import importlib

    packages = sorted(p.parent.name for p in (SRC / PACKAGE).glob("*/__init__.py"))
    assert {"data", "knn", "comparison", "collections", "report", "cli"} <= set(packages)
    missing, broken = [], []
    for name in packages:
        module = importlib.import_module(f"{PACKAGE}.{name}")
        public = getattr(module, "__all__", None)
        if not public:
            missing.append(name)
            continue
        broken += [f"{name}.{n}" for n in public if not hasattr(module, n)]
    assert not missing, f"sub-packages without __all__: {', '.join(missing)}"
    assert not broken, f"names in __all__ that do not exist: {', '.join(broken)}"


def test_import_searchbench_loads_no_more_than_the_model_and_the_engine() -> None:
    """``import searchbench`` stays light: the data model, the measures engine and the
    vocabulary only
    (sub-packages such as comparison, knn, retrieval, ann load on first use)."""
    import subprocess
    import sys

    code = "import sys, searchbench; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    ours = {m for m in loaded if m.startswith(f"{PACKAGE}.")}
    heavy = {m for m in ours if m.split(".")[1] not in {"data", "measures", "errors", "vocab"}}
    assert not heavy, f"import searchbench loads {', '.join(sorted(heavy))}"
    libraries = {m.split(".")[0] for m in loaded}
    assert not {"scipy", "matplotlib", "click", "torch", "jinja2"} & libraries
    # the root and errors load nothing past the interpreter's own start-up modules (an
    # import hoisted into errors.py once added pathlib, urllib and ipaddress: 61 -> 71)
    assert not {"pathlib", "urllib", "importlib"} & loaded, "import searchbench loads them"
