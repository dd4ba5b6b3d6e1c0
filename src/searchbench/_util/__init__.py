"""The bottom layer: plumbing every other sub-package imports and nothing here imports them.

One home each for: atomic writes with the right permissions (:mod:`.files`), library
versions and machine facts for provenance (:mod:`.versions`), progress of long steps and
what Ctrl-C kept (:mod:`.progress`),
Markdown rendering (:mod:`.markdown`) and the matplotlib setup (:mod:`.plots`, imported
by name: ``from searchbench._util.plots import figure, save``), whole-folder replacement
(:mod:`.folders`), visible escapes of control characters (:mod:`.escape`) and the check of
names that become path components (:mod:`.paths`). Only
:mod:`searchbench.errors` lies beneath.
"""

from __future__ import annotations

from .escape import visible_text
from .files import (
    atomic_path,
    atomic_write,
    file_lock,
    json_safe,
    output_error,
    public_mode,
    refuse_sources,
    replace,
    write_bytes,
    write_json,
    write_text,
)
from .folders import atomic_folder
from .markdown import md_table, md_text
from .paths import default_cache_dir, safe_component, within
from .progress import interrupted_message, keeping, progress, progress_enabled
from .versions import LIBRARIES, library_versions, machine, package_version, utc_now

__all__ = [
    "LIBRARIES",
    "atomic_folder",
    "atomic_path",
    "atomic_write",
    "default_cache_dir",
    "file_lock",
    "interrupted_message",
    "json_safe",
    "keeping",
    "library_versions",
    "machine",
    "md_table",
    "md_text",
    "output_error",
    "package_version",
    "progress",
    "progress_enabled",
    "public_mode",
    "refuse_sources",
    "replace",
    "safe_component",
    "utc_now",
    "visible_text",
    "within",
    "write_bytes",
    "write_json",
    "write_text",
]
