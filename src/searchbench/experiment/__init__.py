"""Experiments (ARCHITECTURE §1): a TOML config grid, a runner that shares work and resumes, and a
SQLite results store. ``searchbench experiment init|run|report|list`` wraps this package."""

from __future__ import annotations

from ._runner import RunSummary, default_store, run_experiment
from .config import (
    Cell,
    ExperimentConfig,
    RetrieverSpec,
    expand_grid,
    load_config,
    parse_config,
    resolve_evalset,
)
from .store import SCHEMA_VERSION, CellRecord, ResultsStore, StoreError

__all__ = [
    "SCHEMA_VERSION",
    "Cell",
    "CellRecord",
    "ExperimentConfig",
    "ResultsStore",
    "RetrieverSpec",
    "RunSummary",
    "StoreError",
    "default_store",
    "example_config",
    "expand_grid",
    "load_config",
    "parse_config",
    "resolve_evalset",
    "run_experiment",
]


def example_config() -> str:
    """The commented example config written by ``searchbench experiment init``."""
    from importlib.resources import files  # lazy: loads importlib.resources on first use

    return files(__package__).joinpath("example.toml").read_text(encoding="utf-8")
