"""The bottom layer: plumbing every other sub-package imports and nothing here imports them.

One home each for: atomic writes with the right permissions (:mod:`.files`), library
versions and machine facts for provenance (:mod:`.versions`), progress bars (:mod:`.progress`),
Markdown rendering (:mod:`.markdown`) and the matplotlib setup (:mod:`.plots`, imported
by name: ``from searchbench._util.plots import figure, save``). Only
:mod:`searchbench.errors` lies beneath.
"""

from __future__ import annotations

from .files import (
    atomic_path,
    atomic_write,
    json_safe,
    output_error,
    public_mode,
    replace,
    write_bytes,
    write_json,
    write_text,
)
from .markdown import md_table, md_text
from .progress import progress, progress_enabled
from .versions import LIBRARIES, library_versions, machine, package_version, utc_now

__all__ = [
    "LIBRARIES",
    "atomic_path",
    "atomic_write",
    "json_safe",
    "library_versions",
    "machine",
    "md_table",
    "md_text",
    "output_error",
    "package_version",
    "progress",
    "progress_enabled",
    "public_mode",
    "replace",
    "utc_now",
    "write_bytes",
    "write_json",
    "write_text",
]
