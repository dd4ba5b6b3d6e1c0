"""The bottom layer: plumbing every other sub-package imports and nothing here imports them.

One home each for: atomic writes with the right permissions (:mod:`.files`), library
versions and machine facts for provenance (:mod:`.versions`), progress of long steps and
what Ctrl-C kept (:mod:`.progress`),
Markdown rendering (:mod:`.markdown`) and the matplotlib setup (:mod:`.plots`, imported
by name: ``from searchbench._util.plots import figure, save``), whole-folder replacement
(:mod:`.folders`), the rule for names and ids shown to a person (NFC, hidden
characters refused or shown as escapes: :mod:`.escape`), the check of
names that become path components (:mod:`.paths`), the secrets a command holds and their
redaction from everything shown or written (:mod:`.secrets`: ``redact``, ``remote_text``)
safe URL parsing (:mod:`.urls`: ``split_url``, ``public_url``) and work spread over the
cores by threads (:mod:`.threads`, imported by name: ``map_in_threads``). Only
:mod:`searchbench.errors` lies beneath.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

# eager: ``progress`` is both a module here and its function; importing it makes the
# package's attribute the function, as ``from .._util import progress`` expects
from .progress import interrupted_message, keeping, progress, progress_enabled

if TYPE_CHECKING:
    from .escape import (
        NAME_FORM,
        check_name,
        is_hidden,
        normal_name,
        one_line,
        visible_name,
        visible_text,
    )
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
    from .paths import default_cache_dir, is_dir, path_exists, safe_component, within
    from .secrets import hold, hold_url, redact, redacted, remote_text
    from .urls import public_url, split_url
    from .versions import LIBRARIES, library_versions, machine, package_version, utc_now

# each name is imported from its module on first use (PEP 562): a command loads only
# the plumbing it uses (``searchbench eval`` needs neither tempfile, html nor gzip)
_HOMES = {
    "NAME_FORM": "escape",
    "check_name": "escape",
    "is_hidden": "escape",
    "normal_name": "escape",
    "one_line": "escape",
    "visible_name": "escape",
    "visible_text": "escape",
    "atomic_path": "files",
    "atomic_write": "files",
    "file_lock": "files",
    "json_safe": "files",
    "output_error": "files",
    "public_mode": "files",
    "refuse_sources": "files",
    "replace": "files",
    "write_bytes": "files",
    "write_json": "files",
    "write_text": "files",
    "atomic_folder": "folders",
    "md_table": "markdown",
    "md_text": "markdown",
    "default_cache_dir": "paths",
    "is_dir": "paths",
    "path_exists": "paths",
    "safe_component": "paths",
    "within": "paths",
    "hold": "secrets",
    "hold_url": "secrets",
    "redact": "secrets",
    "redacted": "secrets",
    "remote_text": "secrets",
    "public_url": "urls",
    "split_url": "urls",
    "LIBRARIES": "versions",
    "library_versions": "versions",
    "machine": "versions",
    "package_version": "versions",
    "utc_now": "versions",
}


__getattr__, __dir__ = lazy_exports(__name__, {name: f".{home}" for name, home in _HOMES.items()})


__all__ = [
    "LIBRARIES",
    "NAME_FORM",
    "atomic_folder",
    "atomic_path",
    "atomic_write",
    "check_name",
    "default_cache_dir",
    "file_lock",
    "hold",
    "hold_url",
    "interrupted_message",
    "is_dir",
    "is_hidden",
    "json_safe",
    "keeping",
    "library_versions",
    "machine",
    "md_table",
    "md_text",
    "normal_name",
    "one_line",
    "output_error",
    "package_version",
    "path_exists",
    "progress",
    "progress_enabled",
    "public_mode",
    "public_url",
    "redact",
    "redacted",
    "refuse_sources",
    "remote_text",
    "replace",
    "safe_component",
    "split_url",
    "utc_now",
    "visible_name",
    "visible_text",
    "within",
    "write_bytes",
    "write_json",
    "write_text",
]
