"""Entry point of the ``searchbench`` command; each sub-command lives in its own module."""

from __future__ import annotations

import errno
import os
import re
import sys
from typing import Any

import typer
import typer.main

from ..errors import SearchbenchError

app = typer.Typer(
    name="searchbench",
    help="Does your search bring back the right documents? trec_eval-exact IR measures, "
    "significance tests, ANN recall and evaluation sets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    """Import the command modules; each adds its commands to ``app``."""
    from . import (  # noqa: F401
        ann_cmd,
        compare_cmd,
        demo_cmd,
        eval_cmd,
        evalset_cmd,
        experiment_cmd,
        run_cmd,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code.

    Every error a user can cause - a :class:`SearchbenchError`, an OS error (a missing
    file, a full disk), undecodable text, an input that ends early - becomes ONE line
    ``error: ...`` on stderr (naming the file) and exit code 1, never a traceback; usage
    errors exit with 2 (Click's convention).
    """
    _register()
    command = typer.main.get_command(app)
    _guard(command)
    try:
        command.main(args=argv, prog_name="searchbench", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except SearchbenchError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(os_error_message(exc))
    except UnicodeError as exc:
        return _fail(f"text that is not valid UTF-8 ({exc}); expected UTF-8 files")
    except RecursionError:
        return _fail("an input is nested too deeply to read; expected ordinary nesting")
    return 0


def _guard(command: Any) -> None:
    """Turn EOFError (an input that ends early) into an error line before Click sees it:
    Click would print a bare ``Aborted!`` for it. ``command`` is Typer's Click command
    (Typer bundles its own Click, whose classes are not the ``click`` package's)."""
    invoke = command.invoke

    def guarded(ctx: typer.Context) -> Any:
        try:
            return invoke(ctx)
        except EOFError as exc:
            from ..errors import DataFormatError

            raise DataFormatError(f"an input file ends early ({exc or 'EOFError'}); expected "
                                  "a complete file") from None

    command.invoke = guarded


def _fail(message: str) -> int:
    typer.echo("error: " + " ".join(message.split("\n")), err=True)
    return 1


_TEMP = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{4,}\.tmp$")
_HINTS = {errno.ENOSPC: "free some space or write somewhere else",
          errno.EDQUOT: "free some space or write somewhere else",
          errno.EEXIST: "remove it or choose another path",
          errno.EISDIR: "expected a file path, found a folder",
          errno.ENOTDIR: "a part of the path is a file, not a folder",
          errno.EACCES: "check the permissions", errno.EPERM: "check the permissions",
          errno.EROFS: "the file system is read-only; write somewhere else",
          errno.ENOENT: "check the path"}


def os_error_message(exc: OSError) -> str:
    """``path: what happened; what to do`` for an OS error. A temporary file of an atomic
    write (``.NAME.XXXX.tmp``) is reported as its target ``NAME``."""
    paths = [p for p in (exc.filename, exc.filename2) if p is not None]
    shown: list[str] = []
    for path in (_target(os.fsdecode(p)) for p in paths):  # a rename: temp -> target
        if os.path.abspath(path) not in map(os.path.abspath, shown):
            shown.append(path)
    what = exc.strerror or str(exc)
    hint = _HINTS.get(exc.errno or 0)
    where = " -> ".join(shown)
    text = f"{where}: {what}" if where else what
    return f"{text}; {hint}" if hint else text


def _target(path: str) -> str:
    head, name = os.path.split(path)
    found = _TEMP.match(name)
    return os.path.join(head, found.group("name")) if found else path


def run() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
