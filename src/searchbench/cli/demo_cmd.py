"""``searchbench demo``: the main job on the built-in ``pyref`` set, offline.

Runs the packaged demo experiment (BM25, dense MiniLM, the static model and hybrid RRF at
three chunk sizes; document level and evidence-based chunk level), prints the comparison
tables and the path of the HTML report. Results are kept in ``--out`` (a results store, run
files, the report), so a second run only re-reads them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ._output import DECIMALS_OPTION, QUIET_OPTION, paths, reported_warnings
from .experiment_cmd import print_means_tables


def _config_file(out: Path) -> Path:
    """The packaged demo config, copied into ``out`` (refreshed if the package changed)."""
    from importlib.resources import files

    from .._util import write_text

    text = files("searchbench.experiment").joinpath("demo.toml").read_text(encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "demo.toml"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        write_text(path, text)
    return path


@click.command("demo")
@click.option("--out", "-o", type=paths(), default=Path("searchbench-demo"),
              help="Folder for the results store, run files and report.")
@click.option("--open", "open_browser", is_flag=True, help="Open the HTML report.")
@DECIMALS_OPTION
@QUIET_OPTION
def demo_command(out: Path, open_browser: bool, decimals: int, quiet: bool) -> None:
    """Run the built-in experiment on pyref and print where its HTML report is."""
    from ..experiment import load_config, run_experiment
    from ..report.experiment import experiment_report

    t0 = time.perf_counter()
    cfg = load_config(_config_file(out))
    log = None if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    with reported_warnings(quiet):
        summary = run_experiment(cfg, out / "demo.sqlite", quiet=quiet or None, log=log)
        report = experiment_report(summary.store_path, config=cfg)
        written = report.write(out / "report", decimals=decimals)
    print_means_tables(report, decimals)
    print(f"\n{len(summary.computed)} cells run, {len(summary.skipped)} reused from "
          f"{summary.store_path} in {time.perf_counter() - t0:.1f} s")
    print(f"HTML report: {written['html'].resolve()}")
    if open_browser:
        import webbrowser

        webbrowser.open(written["html"].resolve().as_uri())
