"""Entry point of the ``searchbench`` command; each sub-command lives in its own module."""

from __future__ import annotations

import errno
import importlib
import os
import re
import signal
import sys
import threading
import warnings
from typing import Any

import click

from .._util import one_line
from .._util.progress import interrupted_message, reset_interruption
from ..errors import DataFormatError, SearchbenchError

HELP = ("Does your search bring back the right documents? trec_eval-exact IR measures, "
        "significance tests, ANN recall and evaluation sets.")

# name -> (module, attribute, short help). The short help is the first sentence of the
# command's docstring (a test checks they agree), so `searchbench --help` lists every
# command without importing a single command module.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "eval": ("eval_cmd", "eval_command",
             "Evaluate runs against qrels, exactly as trec_eval computes the measures."),
    "compare": ("compare_cmd", "compare_command",
                "Compare runs against a baseline with paired significance tests."),
    "run": ("run_cmd", "run_command", "Retrieve for every query of EVALSET and write a TREC run "
            "with a provenance sidecar."),
    "experiment": ("experiment_cmd", "experiment_app", "Run a grid of retrievers × models × "
                   "chunkers on an evaluation set, store the results, report them."),
    "demo": ("demo_cmd", "demo_command",
             "Run the built-in experiment on pyref and print where its HTML report is."),
    "evalset": ("evalset_cmd", "evalset_app",
                "Create, check, convert and describe evaluation sets."),
    "datasets": ("evalset_cmd", "datasets_app",
                 "Built-in, folder and downloadable evaluation sets."),
    "ann": ("ann_cmd", "ann_app", "ANN index recall against exact search, sweeps and reports."),
    "db": ("db_cmd", "db_app",
           "Load evaluation sets into vector databases and describe their indexes."),
    "embed": ("embed_cmd", "embed_command",
              "Embed an evaluation set's corpus and judged queries into Parquet shards."),
    "convert": ("convert_cmd", "convert_command",
                "Convert qrels or a run between TREC, BEIR, Parquet and Arrow IPC files."),
    "pool": ("pool_cmd", "pool_command", "Pool the top documents of several runs into the list "
             "of pairs to judge next."),
    "judge": ("judge_cmd", "judge_app",
              "Judge the pool of an evaluation set: web app, LLM judge, agreement, export."),
    "explore": ("explore_cmd", "explore_command", "Explore two runs side by side per query "
                "in the web app and judge their holes."),
    "synth": ("synth_cmd", "synth_command", "Generate guarded synthetic questions (chunk kept "
              "as evidence) through an LLM."),
}


class LazyGroup(click.Group):
    """The ``searchbench`` group: knows its commands' names and short help without importing
    them; :meth:`get_command` imports the one module a command lives in."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *super().list_commands(ctx)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)  # one added with app.command()

        module, attribute, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(f".{module}", __package__),
                                         attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        rows += [(name, cmd.get_short_help_str()) for name, cmd in self.commands.items()
                 if not cmd.hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        root = sys.modules[__name__.split(".")[0]]  # loaded already: this is its sub-package
        from ..data import reader_path  # lazy: cli start-up (data, numpy)

        click.echo(f"searchbench {root.__version__} (TREC reader: {reader_path()})")
        ctx.exit(0)


@click.group(cls=LazyGroup, name="searchbench", help=HELP,
             context_settings={"show_default": True, "help_option_names": ["--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Print the version and exit.")
def app() -> None:
    """The ``searchbench`` command (sub-commands load on demand)."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code.

    Every error a user can cause - a :class:`SearchbenchError`, an OS error (a missing
    file, a full disk), undecodable text, an input that ends early - becomes ONE line
    ``error: ...`` on stderr (naming the file) and exit code 1, never a traceback; usage
    errors exit with 2 (Click's convention). Ctrl-C prints ONE line saying what the
    interrupted step kept and how to resume (:func:`interrupted`) and exits with 130.
    """
    saved = {name: os.environ.get(name) for name in _PROGRESS_OFF}
    quiet_third_party_progress()
    reset_interruption()
    _guard(app)
    handler = _once_on_ctrl_c()
    try:
        app.main(args=argv, prog_name="searchbench", standalone_mode=True)
    except (_Interrupted, KeyboardInterrupt):
        return interrupted()
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
    finally:  # an embedding program keeps its environment
        if handler is not None and not _EXITING:  # the process exits: later Ctrl-Cs wait
            signal.signal(signal.SIGINT, handler)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return 0


_PROGRESS_OFF = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def quiet_third_party_progress(force: bool = False) -> None:
    """Silence the progress bars of tqdm, transformers, sentence-transformers, model2vec and
    huggingface_hub when stderr is not a terminal (or ``force``, i.e. ``--quiet``), as
    searchbench's own bars are. The environment variables work for libraries not imported
    yet; the libraries already imported are switched off directly."""
    if not force and getattr(sys.stderr, "isatty", lambda: False)():
        return
    for name, value in _PROGRESS_OFF.items():
        os.environ.setdefault(name, value)
    if "huggingface_hub" in sys.modules:
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()


def _once_on_ctrl_c() -> Any:
    """Make the first Ctrl-C raise :class:`KeyboardInterrupt` and ignore the next ones
    while it is handled (bars removed, files closed, the one line printed): a second
    Ctrl-C in the middle of that would leave the terminal and the output half done. Returns
    the handler to restore (None off the main thread, where signals cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def first(_signum: int, _frame: Any) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    return signal.signal(signal.SIGINT, first)


class _Interrupted(Exception):
    """Ctrl-C, carried past Click (which would print a bare ``Aborted!`` for it)."""


def interrupted() -> int:
    """Print the one ``interrupted: <what was kept>; <how to resume>`` line; return 130
    (128 + SIGINT, the shell's code for a command stopped by Ctrl-C)."""
    try:
        if getattr(sys.stderr, "isatty", lambda: False)():
            sys.stderr.write("\n")  # past the terminal's echo of ^C
        click.echo(interrupted_message(), err=True)
    except (OSError, ValueError):  # stderr closed: the exit code still says it
        pass
    return 130


def _guard(command: click.Command) -> None:
    """Turn EOFError (an input that ends early) into an error line and KeyboardInterrupt
    into :class:`_Interrupted` before Click sees them: Click would print a bare
    ``Aborted!`` for either."""
    if getattr(command.invoke, "_guarded", False):
        return
    invoke = command.invoke

    def guarded(ctx: click.Context) -> Any:
        try:
            return invoke(ctx)
        except EOFError as exc:
            raise DataFormatError(f"an input file ends early ({exc or 'EOFError'}); expected "
                                  "a complete file") from None
        except KeyboardInterrupt:
            if _EXITING:  # the process ends: leave an embedding program's filters alone
                # what Ctrl-C cut short (a coroutine never awaited, an event loop left open)
                # is freed from here on: its warnings would bury the `interrupted:` line
                warnings.simplefilter("ignore", RuntimeWarning)
                warnings.simplefilter("ignore", ResourceWarning)
            raise _Interrupted from None

    guarded._guarded = True  # type: ignore[attr-defined]
    command.invoke = guarded  # type: ignore[method-assign]


def _fail(message: str) -> int:
    """Print ``message`` as one ``error:`` line, redacted for every secret the command
    holds (whatever an engine or a library put in it), then made visible: names in it
    cannot forge a line."""
    from .._util.secrets import redact  # lazy: html and urllib (7 ms), only on an error

    click.echo("error: " + one_line(redact(message)), err=True)
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


_EXITING = False  # set by run(): the process ends with main()


def run() -> None:  # pragma: no cover - console script shim
    global _EXITING
    _EXITING = True
    sys.exit(main())
