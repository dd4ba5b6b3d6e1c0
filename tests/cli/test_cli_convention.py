"""The CLI convention (ARCHITECTURE §9.1), checked on every Click command and sub-command.

The commands are enumerated from the ``searchbench`` group itself, so a new command that
names its evaluation set, its output file or its format differently fails here:

* the evaluation set is the first positional argument, shown as ``EVALSET``;
* every file or folder written is ``-o/--output`` (:class:`OutputOption`), and a data output
  comes with the shared ``--force``: an existing one is refused unless it is given;
* ``--format/-f`` takes words of the one ``format`` vocabulary (``searchbench.vocab``);
  ``--json`` is its documented alias, declared once;
* usage errors (conflicting options included) exit 2 with one ``error:`` line, data and
  runtime errors exit 1.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import click
import pytest

from searchbench import vocab
from searchbench.cli._output import FORCE_OPTION, OutputOption

cli_main = importlib.import_module("searchbench.cli.main")


def _walk(cmd, path, parent=None):
    ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent)
    if not isinstance(cmd, click.Group):
        yield " ".join(path), cmd, ctx
    for name in getattr(cmd, "list_commands", lambda _ctx: [])(ctx):
        yield from _walk(cmd.get_command(ctx, name), (*path, name), ctx)


COMMANDS = list(_walk(cli_main.app, ("searchbench",)))
NAMES = [name for name, _, _ in COMMANDS]
#: Positional arguments are inputs; these are the names they may have (an output is -o).
INPUTS = {"evalset", "spec", "dataset", "folder", "qrels", "runs", "config", "sweeps", "url",
          "engine", "source", "file", "path"}
#: Commands that create the object they act on, named by their first argument (the
#: experiment config of `experiment init`, like the evaluation set of `evalset init`).
CREATES_ITS_ARGUMENT = {"searchbench experiment init"}
#: Old spellings kept as hidden aliases: never documented, never on a new option.
OLD = {"--out", "--to", "--to-adjudicate", "--markdown", "--evalset"}
FORCE_HELP = FORCE_OPTION(lambda: None).__click_params__[0].help


def _visible(cmd, ctx):
    return [p for p in cmd.get_params(ctx) if not getattr(p, "hidden", False)
            and p.name != "help"]


def _option(cmd, ctx, name):
    return next((p for p in cmd.get_params(ctx) if isinstance(p, click.Option)
                 and name in p.opts), None)


def test_the_walk_finds_every_command() -> None:
    assert len(NAMES) >= 30 and {"searchbench run", "searchbench db load",
                                 "searchbench judge llm", "searchbench ann sweep"} <= set(NAMES)


@pytest.mark.parametrize(("name", "cmd", "ctx"), COMMANDS, ids=NAMES)
def test_the_evaluation_set_is_the_first_argument(name, cmd, ctx) -> None:
    args = [p for p in _visible(cmd, ctx) if isinstance(p, click.Argument)]
    assert {a.name for a in args} <= INPUTS, (name, [a.name for a in args])
    shown = [a for a in args if a.metavar == "EVALSET"]
    loose = [a for a in args if a.name in ("evalset", "dataset", "folder", "spec")]
    assert shown == loose, f"{name}: an evaluation set not shown as EVALSET"
    if shown:
        assert args[0] is shown[0] and len(shown) == 1, name
    assert not any(o in OLD for p in _visible(cmd, ctx) for o in getattr(p, "opts", ())), name


@pytest.mark.parametrize(("name", "cmd", "ctx"), COMMANDS, ids=NAMES)
def test_every_output_is_dash_o_and_data_outputs_take_force(name, cmd, ctx) -> None:
    params = _visible(cmd, ctx)
    for p in params:
        if isinstance(p, click.Option) and ("-o" in p.opts or p.name in ("output", "out")):
            assert isinstance(p, OutputOption) and p.opts == ["-o", "--output"], name
    output = _option(cmd, ctx, "--output")
    force = _option(cmd, ctx, "--force")
    if output is not None and not output.replaces_own:
        assert force is not None and force.help == FORCE_HELP, f"{name}: -o without --force"
    if force is not None:
        assert force.help == FORCE_HELP, f"{name}: --force not the shared option"
        assert (output is not None and not output.replaces_own) \
            or name in CREATES_ITS_ARGUMENT, name


@pytest.mark.parametrize(("name", "cmd", "ctx"), COMMANDS, ids=NAMES)
def test_format_takes_the_one_vocabulary_and_json_is_its_alias(name, cmd, ctx) -> None:
    fmt = _option(cmd, ctx, "--format")
    json_flag = _option(cmd, ctx, "--json")
    if fmt is None:
        assert json_flag is None, f"{name}: --json without --format"
        return
    assert fmt.opts == ["--format", "-f"], name
    allowed = fmt.metavar.strip("[]").split("|")
    assert set(allowed) <= set(vocab.values("format")), (name, allowed)
    assert (json_flag is not None) == ("json" in allowed) or name.endswith("report"), name
    if json_flag is not None:
        assert json_flag.help == "Same as --format json." and json_flag.is_eager, name


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_conflicting_options_exit_2_with_one_line(tmp_path, capsys) -> None:
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 d1 1\n")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    assert cli_main.main(["eval", str(qrels), str(run), "--json", "-f", "tsv"]) == 2
    assert "--json and --format tsv" in _one_error(capsys)
    assert cli_main.main(["eval", str(qrels), str(run), "--stream", "--engine", "ray"]) == 2
    assert "choose one" in _one_error(capsys)
    assert cli_main.main(["eval", str(qrels), str(tmp_path / "none.trec")]) == 1  # data
    assert "none.trec" in _one_error(capsys)
    assert cli_main.main(["eval", str(qrels), str(run), "-f", "latex"]) == 2  # not eval's
    assert "'latex' is not a format this command writes" in capsys.readouterr().err
    assert cli_main.main(["eval", str(qrels), str(run), "-f", "JSON"]) == 0
    assert '"run": "r.trec"' in capsys.readouterr().out


def _refusals(tmp: Path) -> dict[str, list[str]]:
    """A command per data output, each refused before any work (nothing is loaded)."""
    (tmp / "set").mkdir()
    (tmp / "r.trec").write_text("q1 Q0 d1 1 1.0 r\n")
    return {
        "run": ["run", "pyref"],
        "pool": ["pool", str(tmp / "set"), "--runs", str(tmp / "r.trec")],
        "ann groundtruth": ["ann", "groundtruth", "--vectors", "v.npy", "--queries", "q.npy"],
        "ann sweep": ["ann", "sweep", "pyref"],
        "evalset chunk-qrels": ["evalset", "chunk-qrels", "pyref", "--chunk", "tokens:8"],
        "synth": ["synth", "pyref", "--endpoint", "http://127.0.0.1:9", "--model", "m"],
        "convert": ["convert", str(tmp / "r.trec")],
        "judge agreement": ["judge", "agreement", str(tmp / "set")],
    }


@pytest.mark.parametrize("command", ["run", "pool", "ann groundtruth", "ann sweep",
                                     "evalset chunk-qrels", "synth", "convert",
                                     "judge agreement", "experiment init"])
def test_an_existing_data_output_is_refused_unless_force(tmp_path, capsys, command) -> None:
    mine = tmp_path / "mine.out"
    mine.write_text("the user's")
    args = ["experiment", "init", str(mine)] if command == "experiment init" \
        else [*_refusals(tmp_path)[command], "-o", str(mine)]
    assert cli_main.main(args) == 1
    line = _one_error(capsys)
    assert str(mine) in line and "--force" in line
    assert mine.read_text() == "the user's"


def test_force_replaces_and_old_spellings_still_work(tmp_path, capsys) -> None:
    source = tmp_path / "r.trec"
    source.write_text("q1 Q0 d1 1 1.0 r\n")
    out = tmp_path / "r.parquet"
    out.write_text("old")
    assert cli_main.main(["convert", str(source), "-o", str(out), "--force"]) == 0
    assert out.read_bytes()[:4] == b"PAR1"
    capsys.readouterr()
    old = tmp_path / "old.trec"
    assert cli_main.main(["convert", str(source), str(old), "--to", "trec"]) == 0
    err = capsys.readouterr().err
    assert "warning: --to is deprecated; use --format/-f" in err
    assert "warning: convert SOURCE TARGET is deprecated" in err
    assert old.read_text().split()[:3] == ["q1", "Q0", "d1"]


def test_db_load_takes_the_old_evalset_option_as_the_first_argument(capsys) -> None:
    ctx = cli_main.app.make_context("searchbench", ["db", "load", "x"], resilient_parsing=True)
    load = cli_main.app.get_command(ctx, "db").get_command(ctx, "load")
    new = load.make_context("load", ["pyref", "usearch://./i?name=d"])
    old = load.make_context("load", ["usearch://./i?name=d", "--evalset", "pyref"])
    assert new.params["evalset"] == old.params["evalset"] == "pyref"
    assert new.params["url"] == old.params["url"] == "usearch://./i?name=d"
    assert "--evalset SET is deprecated" in capsys.readouterr().err
