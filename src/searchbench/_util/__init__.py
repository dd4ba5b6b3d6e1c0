"""The bottom layer: plumbing every other sub-package imports and nothing here imports them.

One home each for: atomic writes with the right permissions (:mod:`.files`; whole
folders: :mod:`.folders`), library versions and machine facts for provenance
(:mod:`.versions`), progress bars (:mod:`.progress`), Markdown rendering (:mod:`.markdown`)
and the check of names that become path components (:mod:`.paths`). Only
:mod:`searchbench.errors` lies beneath.
"""

from __future__ import annotations

from .escape import visible_text
from .files import atomic_write, json_safe, public_mode, write_bytes, write_json, write_text
from .folders import atomic_folder
from .markdown import md_table, md_text
from .paths import safe_component, within
from .progress import progress, progress_enabled
from .versions import LIBRARIES, library_versions, machine, utc_now

__all__ = [
    "LIBRARIES",
    "atomic_folder",
    "atomic_write",
    "json_safe",
    "library_versions",
    "machine",
    "md_table",
    "md_text",
    "progress",
    "progress_enabled",
    "public_mode",
    "safe_component",
    "utc_now",
    "visible_text",
    "within",
    "write_bytes",
    "write_json",
    "write_text",
]
