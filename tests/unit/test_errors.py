"""errors.py: the one warning class. Every warning searchbench emits is a
:class:`SearchbenchWarning` pointing at the caller's line, and the CLI prints each as one
``warning:`` line."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import searchbench as sb
from searchbench import errors, measures
from searchbench.cli.main import main

PACKAGE = Path(sb.__file__).parent


def warn_calls() -> Iterator[tuple[str, ast.Call]]:
    """Every ``warnings.warn(...)`` call in the package, with its ``file:line``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "warn" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "warnings"):
                yield f"{path.relative_to(PACKAGE)}:{node.lineno}", node


def argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


def test_searchbench_warning_is_one_class_everywhere_it_is_exported() -> None:
    assert sb.SearchbenchWarning is errors.SearchbenchWarning is measures.SearchbenchWarning
    assert issubclass(sb.SearchbenchWarning, UserWarning)


def test_every_warning_is_a_searchbench_warning_at_the_users_line() -> None:
    calls = list(warn_calls())
    assert calls, "no warnings.warn call found: the scan is broken"
    for where, call in calls:
        category = argument(call, 1, "category")
        assert isinstance(category, ast.Name) and category.id == "SearchbenchWarning", where
        level = argument(call, 2, "stacklevel")
        assert (isinstance(level, ast.Call) and isinstance(level.func, ast.Name)
                and level.func.id == "user_stacklevel"), where


def test_a_reader_warning_names_the_callers_line(trec_eval_dir: Path) -> None:
    """The data layer (below measures) warns with the same class."""
    with pytest.warns(sb.SearchbenchWarning, match="5 line.s. have more than six") as record:
        sb.Run.from_file(trec_eval_dir / "results.trunc")
    assert [w.filename for w in record] == [__file__]


def test_the_cli_prints_each_warning_as_one_line(trec_eval_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(trec_eval_dir / "qrels.test"), str(trec_eval_dir / "results.trunc")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the CLI shows them itself: none may escape
        assert main(["eval", *files, "-m", "AP", "--missing", "zero"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("warning: ") for line in err), err
    assert "results.trunc:1: 5 line(s) have more than six fields" in err[0]
    assert "1 qrels queries have no results" in err[1]
