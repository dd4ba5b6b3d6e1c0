"""Interfaces you can see (ARCHITECTURE §1, rules 2 and 5-7), checked on the source with ``ast``.

- A module imports another sub-package only through a package ``__init__`` (``from ..data
  import Qrels``, never ``from ..data.qrels import Qrels``). ``searchbench._util`` is the
  shared plumbing: its public modules may be imported by name (``from .._util.plots import
  figure``), since each is one concept and some must not load with the package. The top-level
  modules ``errors`` and ``vocab`` are their own interface. The package root and ``__main__``
  keep the rule too.
- No private name (``_x``) is imported from another module, inside a package or across; a
  module's private names are its own (``from . import _columns`` imports a private *module*
  of the same package, which is allowed).
- No import cycle between modules, counting the imports inside functions (an in-function
  import that closes a cycle only hides it). Imports under ``if TYPE_CHECKING:`` do not count.
- Every import inside a function says why it is there: a ``# lazy: <reason>`` comment on its
  (first) line or the line above — what it keeps out of start-up, or the extra it needs.
  Anything else belongs at the top of the module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "searchbench"
SHARED = "_util"  # the plumbing package: its public modules are importable by name
TOP_MODULES = {"errors", "vocab"}  # top-level modules that are their own interface


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module


@dataclass(frozen=True)
class Import:
    line: int
    target: str  # the module imported from, or imported (absolute)
    name: str | None  # the name imported from ``target``; None when a module is imported
    in_function: bool
    type_checking: bool


def _modules() -> dict[str, Module]:
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = Module(name, path, is_package,
                             ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


MODULES = _modules()


def _exported(package: str) -> set[str]:
    """The names a package's ``__init__`` lists in a literal ``__all__``."""
    module = MODULES.get(package)
    if module is None or not module.is_package:
        return set()
    for node in module.tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {e.value for e in ast.walk(node.value)
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(module: Module) -> Iterator[Import]:
    """Every import of a ``searchbench`` module, with the imported module resolved: ``from .
    import x`` where ``x`` is a module yields target ``….x`` and name None."""
    package = module.name if module.is_package else module.name.rpartition(".")[0]

    def walk(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            func = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            checking = type_checking or _is_type_checking(child)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(child.lineno, alias.name, None, func, checking)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[:len(package.split(".")) - child.level + 1]
                    source = ".".join(base + ([child.module] if child.module else []))
                else:
                    source = child.module or ""
                for alias in child.names:
                    sub = f"{source}.{alias.name}"  # a module, unless the package exports
                    if sub in MODULES and alias.name not in _exported(source):  # that name
                        yield Import(child.lineno, sub, None, func, checking)
                    else:
                        yield Import(child.lineno, source, alias.name, func, checking)
            yield from walk(child, func, checking)

    for found in walk(module.tree, False, False):
        if found.target.split(".")[0] == PACKAGE:
            yield found


def _unit(name: str) -> str:
    """The sub-package (or top-level module) a module belongs to; '' for the root."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _where(module: Module, line: int) -> str:
    return f"{module.path.relative_to(SRC / PACKAGE).as_posix()}:{line}"


def _interface_ok(target: str) -> bool:
    """May a module of another sub-package import ``target``?"""
    unit = _unit(target)
    if unit in TOP_MODULES or target == PACKAGE:
        return True
    module = MODULES.get(target)
    if module is not None and module.is_package:
        return True  # a package __init__, e.g. searchbench.data or searchbench.judging.web
    if unit == SHARED:
        return not any(_private(p) for p in target.split(".")[2:])
    return False


def interface_violations() -> list[str]:
    """Imports of another sub-package's implementation module."""
    found = []
    for module in MODULES.values():
        own = _unit(module.name)
        for imp in _imports(module):
            if _unit(imp.target) != own and not _interface_ok(imp.target):
                what = f"{imp.target}.{imp.name}" if imp.name else imp.target
                found.append(f"{_where(module, imp.line)}: {what}")
    return sorted(set(found))


def private_violations() -> list[str]:
    """Private names (``_x``) imported from another module (modules themselves excepted)."""
    found = []
    for module in MODULES.values():
        for imp in _imports(module):
            if imp.name and _private(imp.name) and imp.target != module.name:
                found.append(f"{_where(module, imp.line)}: {imp.target}.{imp.name}")
    return sorted(set(found))


def import_cycles() -> list[list[str]]:
    """Groups of modules that import each other (strongly connected, size > 1), counting
    in-function imports and not those under ``TYPE_CHECKING``."""
    graph = {name: sorted({i.target for i in _imports(m) if not i.type_checking
                           and i.target in MODULES and i.target != name})
             for name, m in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(groups)


LAZY = "# lazy:"


def _unexplained_function_imports(tree: ast.Module, lines: list[str]) -> Iterator[int]:
    """Lines of the imports inside a function body (any import, not only searchbench's) with
    no ``# lazy:`` reason on the import's first line or on the line above it."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[int]:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            func = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if func and isinstance(child, ast.Import | ast.ImportFrom):
                above = lines[child.lineno - 2].strip() if child.lineno > 1 else ""
                if LAZY not in lines[child.lineno - 1] and not above.startswith(LAZY):
                    yield child.lineno
            yield from walk(child, func)

    yield from walk(tree, False)


def lazy_import_violations() -> list[str]:
    """``file:line`` of every in-function import without a ``# lazy:`` reason."""
    found = []
    for module in sorted(MODULES.values(), key=lambda m: m.path):
        lines = module.path.read_text(encoding="utf-8").splitlines()
        found += [_where(module, line)
                  for line in sorted(_unexplained_function_imports(module.tree, lines))]
    return found


def test_other_subpackages_are_imported_through_their_interface() -> None:
    found = interface_violations()
    assert not found, (
        "imports reaching past another sub-package's __init__ (import the name from the "
        "package; if it is truly part of the interface, add it to that __init__'s "
        "__all__):\n  " + "\n  ".join(found))


def test_no_private_name_crosses_a_module_boundary() -> None:
    found = private_violations()
    assert not found, (
        "private names imported from another module (make the name public where it is "
        "shared, or move the shared piece to the module it belongs to):\n  "
        + "\n  ".join(found))


def test_no_import_cycles_even_inside_functions() -> None:
    found = import_cycles()
    assert not found, (
        "modules importing each other (an in-function import only hides the cycle: move the "
        "shared piece down into a module both import):\n  "
        + "\n  ".join(" <-> ".join(g) for g in found))


def test_imports_inside_functions_say_why() -> None:
    found = lazy_import_violations()
    assert not found, (
        "imports inside a function without a '# lazy: <reason>' comment (move the import to "
        "the top of the module when that loads nothing new at start-up; otherwise say what it "
        "keeps out of start-up or which extra it needs, on its line or the line above):\n  "
        + "\n  ".join(found))


def test_the_checks_see_violations() -> None:
    """The rules above catch what they are meant to (guards against a vacuous pass)."""
    assert _interface_ok("searchbench.data") and _interface_ok("searchbench.errors")
    assert _interface_ok("searchbench._util.plots") and _interface_ok("searchbench.judging.web")
    assert not _interface_ok("searchbench.data.qrels")
    assert not _interface_ok("searchbench._util._private_helper")
    assert len(MODULES) > 100 and all(m.startswith(PACKAGE) for m in MODULES)
    assert any(i.in_function for m in MODULES.values() for i in _imports(m))
    sample = ("import os\n"
              "def f():\n"
              "    import json\n"
              "    # lazy: the x extra\n"
              "    import x\n"
              "    from y import (  # lazy: y only here\n"
              "        z,\n"
              "    )\n"
              "    if TYPE_CHECKING:\n"
              "        import w\n"
              "    def g():\n"
              "        from . import v\n")
    tree = ast.parse(sample)
    assert list(_unexplained_function_imports(tree, sample.splitlines())) == [3, 12]
