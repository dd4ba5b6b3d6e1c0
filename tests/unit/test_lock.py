"""The lock file (``requirements/lock.txt``) agrees with ``pyproject.toml`` and the Makefile.

- Every line is an exact pin ``name==version``, each package once, no CUDA package (torch is
  the CPU build) and torch pinned as the Makefile installs it.
- Every core requirement and every requirement of every extra names a locked package whose
  locked version the requirement accepts.
- The lock is closed: each dependency of a locked package (read from the installed package's
  metadata when the installed version is the locked one: no network) is locked too.
- The Makefile's DEMO_EXTRAS and TEST_EXTRAS name only extras that exist, and the tests install
  every extra except those in ``UNTESTED_EXTRAS``.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "lock.txt"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.!]+)$")
# Extras `make test` does not install, and why (the Makefile says the same beside TEST_EXTRAS).
UNTESTED_EXTRAS = {"bench": "ranx and ir_measures: only the scripts in benchmarks/ use them"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _pins() -> list[tuple[int, str]]:
    """``(line number, line)`` of every line that is not blank or a comment."""
    lines = LOCK.read_text(encoding="utf-8").splitlines()
    return [(i, s.strip()) for i, s in enumerate(lines, 1) if s.strip() and s[0] != "#"]


def _lock() -> dict[NormalizedName, Version]:
    out = {}
    for _, line in _pins():
        name, _, version = line.partition("==")
        out[canonicalize_name(name)] = Version(version)
    return out


def _requirements() -> dict[str, list[Requirement]]:
    """Requirements by extra; the core ones under ``""``."""
    project = _project()
    reqs = {"": [Requirement(r) for r in project["dependencies"]]}
    for extra, items in project["optional-dependencies"].items():
        reqs[extra] = [Requirement(r) for r in items]
    return reqs


def _makefile() -> dict[str, str]:
    """The Makefile's ``NAME := value`` variables, ``$(NAME)`` references expanded."""
    values: dict[str, str] = {}
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Z_]+)\s*:?=\s*(.*)$", line)
        if m:
            values[m.group(1)] = re.sub(
                r"\$\((\w+)\)", lambda r: values.get(r.group(1), r.group(0)), m.group(2))
    return values


def test_every_line_is_an_exact_pin_of_a_distinct_package() -> None:
    seen: dict[NormalizedName, int] = {}
    bad, twice = [], []
    for number, line in _pins():
        m = PIN.match(line)
        if m is None:
            bad.append(f"{number}: {line}")
            continue
        name = canonicalize_name(m.group(1))
        if name in seen:
            twice.append(f"{name} on lines {seen[name]} and {number}")
        seen[name] = number
    assert not bad, f"lines that are not name==version (no URL, marker or +local): {bad}"
    assert not twice, f"packages locked twice: {twice}"
    assert len(seen) > 50


def test_no_cuda_package_and_torch_pinned_as_the_makefile_installs_it() -> None:
    lock = _lock()
    cuda = sorted(n for n in lock if n.startswith("nvidia-") or n == "triton")
    assert not cuda, f"CUDA packages in the lock (torch must be the CPU build): {cuda}"
    assert _makefile()["TORCH"] == f"torch=={lock[canonicalize_name('torch')]}"


def test_every_requirement_of_every_extra_is_locked_at_a_version_it_accepts() -> None:
    lock = _lock()
    wrong = []
    for extra, reqs in _requirements().items():
        for req in reqs:
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # e.g. platform_system=='Linux' elsewhere: the lock is for Linux
            version = lock.get(canonicalize_name(req.name))
            if version is None:
                wrong.append(f"[{extra or 'core'}] {req}: not in the lock")
            elif not req.specifier.contains(version, prereleases=True):
                wrong.append(f"[{extra or 'core'}] {req}: locked {version}")
    assert not wrong, "pyproject.toml and the lock disagree (run `make lock`): " + "; ".join(wrong)


def test_every_dependency_of_an_installed_locked_package_is_locked() -> None:
    """Walk the dependency graph from pyproject's requirements through installed metadata."""
    lock = _lock()
    installed = {canonicalize_name(d.metadata["Name"]): d
                 for d in importlib.metadata.distributions()}
    todo = [(canonicalize_name(r.name), frozenset(r.extras))
            for reqs in _requirements().values() for r in reqs]
    done, checked, wrong = set(), 0, []
    while todo:
        name, extras = todo.pop()
        if (name, extras) in done:
            continue
        done.add((name, extras))
        dist = installed.get(name)
        if dist is None:
            continue  # not installed here (e.g. the bench extra): nothing to read offline
        if name not in lock or Version(Version(dist.version).public) != lock[name]:
            continue  # installed at another version: its metadata says nothing of the lock's
        checked += 1
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not any(
                    req.marker.evaluate({"extra": e}) for e in ("", *extras)):
                continue
            dep = canonicalize_name(req.name)
            if dep not in lock:
                wrong.append(f"{name} {dist.version} needs {req}: not in the lock")
            elif not req.specifier.contains(lock[dep], prereleases=True):
                wrong.append(f"{name} {dist.version} needs {req}: locked {lock[dep]}")
            todo.append((dep, frozenset(req.extras)))
    assert not wrong, "the lock misses dependencies (run `make lock`): " + "; ".join(wrong)
    assert checked > 20, f"only {checked} locked packages are installed at their locked version"


def test_makefile_extras_exist_and_the_tests_install_every_extra_but_the_documented() -> None:
    reqs = _requirements()
    make = _makefile()
    demo, test = (set(make[v].split(",")) for v in ("DEMO_EXTRAS", "TEST_EXTRAS"))
    assert demo <= set(reqs) and test <= set(reqs), (demo | test) - set(reqs)
    assert demo <= test
    installed = {canonicalize_name(r.name) for extra in test for r in reqs[extra]}
    untested = {e for e in set(reqs) - {""} - test
                if not {canonicalize_name(r.name) for r in reqs[e]} <= installed}
    assert untested == set(UNTESTED_EXTRAS), (
        f"`make test` does not install {sorted(untested)}: add them to TEST_EXTRAS or, with "
        "the reason, to UNTESTED_EXTRAS here and beside TEST_EXTRAS in the Makefile")
