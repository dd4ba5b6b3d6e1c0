"""Shared fixtures: trec_eval's vendored test files and the external test collections.

``SEARCHBENCH_TEST_DATA`` set (as in CI) and the data missing -> the test fails.
Unset -> tests that need it skip with a clear reason. trec_eval's small test files are
vendored under tests/fixtures/trec_eval and need no configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _data_root() -> Path | None:
    value = os.environ.get("SEARCHBENCH_TEST_DATA")
    return Path(value) if value else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Root of the shared collections; fails if configured but missing, skips if unset."""
    root = _data_root()
    if root is None:
        pytest.skip("SEARCHBENCH_TEST_DATA is not set: the shared collections are not configured")
    if not root.is_dir():
        pytest.fail(f"SEARCHBENCH_TEST_DATA={root} is set but is not a directory")
    return root


TREC_EVAL_FIXTURES = Path(__file__).parent / "fixtures" / "trec_eval"


@pytest.fixture(scope="session")
def trec_eval_dir() -> Path:
    """trec_eval's own test files, vendored in the repository (see its README.md)."""
    if not (TREC_EVAL_FIXTURES / "out.test").is_file():
        pytest.fail(f"{TREC_EVAL_FIXTURES} lacks trec_eval's files: the checkout is incomplete")
    return TREC_EVAL_FIXTURES


# -- a test skipped for a missing package is a missing install step in CI ---------------
def _strict() -> bool:
    return bool(os.environ.get("SEARCHBENCH_TEST_DATA") or os.environ.get("CI"))


def _fail_missing_module_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    if report.skipped and _strict() and "could not import" in str(report.longrepr):
        report.outcome = "failed"
        report.longrepr = (f"{report.longrepr}\n(`make test` installs every test dependency: "
                           "a module missing in CI is a missing install step, not a skip)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_missing_module_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_missing_module_skip(outcome.get_result())
