"""Shared fixtures: trec_eval's vendored test files and the external test collections.

``SEARCHBENCH_TEST_DATA`` set (as in CI) and the data missing -> the test fails.
Unset -> tests that need it skip with a clear reason. trec_eval's small test files are
vendored under tests/fixtures/trec_eval and need no configuration.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# -- hermetic: the test run has its own cache, home and XDG folders ----------------------
# Nothing a test does may read or write the user's searchbench cache, model exports,
# embedding caches, stores or HOME/XDG folders: a green run on a machine that ran the suite
# before must mean green on a fresh one. The first pytest process (the xdist controller, or
# a plain run) makes one folder for the whole run; xdist workers inherit it through
# SEARCHBENCH_TEST_ROOT, so expensive shared artefacts (the ONNX export, MiniLM embeddings
# of the collections) are built once per run inside it, never borrowed from an earlier run.
TEST_ROOT_VAR = "SEARCHBENCH_TEST_ROOT"
_OWN_ROOT = TEST_ROOT_VAR not in os.environ


def _hermetic_root() -> Path:
    given = os.environ.get(TEST_ROOT_VAR)
    root = Path(given) if given else Path(tempfile.mkdtemp(prefix="searchbench-tests-"))
    os.environ[TEST_ROOT_VAR] = str(root)
    return root


TEST_ROOT = _hermetic_root()
# Every folder a library we use derives from HOME or XDG (matplotlib's font cache, Hugging
# Face, torch, Ray's session files) points into the run's folder.
HERMETIC_ENV = {
    "HOME": TEST_ROOT / "home",
    "XDG_CACHE_HOME": TEST_ROOT / "xdg-cache",
    "XDG_CONFIG_HOME": TEST_ROOT / "xdg-config",
    "XDG_DATA_HOME": TEST_ROOT / "xdg-data",
    "XDG_STATE_HOME": TEST_ROOT / "xdg-state",
    "SEARCHBENCH_CACHE": TEST_ROOT / "searchbench-cache",
    "MPLCONFIGDIR": TEST_ROOT / "matplotlib",
    "HF_HOME": TEST_ROOT / "huggingface",
    "TORCH_HOME": TEST_ROOT / "torch",
}
for _name, _folder in HERMETIC_ENV.items():
    _folder.mkdir(parents=True, exist_ok=True)
    os.environ[_name] = str(_folder)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Progress lines on a piped stderr appear only for steps longer than this; a loaded CI
# machine must not turn a "one error line" check into a count of progress lines. Tests of
# progress itself set it to 0.
os.environ.setdefault("SEARCHBENCH_PROGRESS_SECONDS", "3600")


@pytest.fixture(autouse=True)
def _no_secrets_from_other_tests():
    """Secrets are held per process (``_util.secrets``): one test's token must not redact
    another test's text in the same worker."""
    from searchbench._util.secrets import forget_all, held, hold

    before = held()  # a test module's own secrets, held when it was imported, stay
    yield
    forget_all()
    hold(*before)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The process that made the run's folder removes it (workers leave it alone)."""
    if _OWN_ROOT and not hasattr(config, "workerinput"):
        shutil.rmtree(TEST_ROOT, ignore_errors=True)


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
