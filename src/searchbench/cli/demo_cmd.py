"""``searchbench demo``: the main job on the built-in ``pyref`` set, offline.

Runs the packaged demo experiment (BM25, dense MiniLM and hybrid RRF at three chunk sizes;
document level and evidence-based chunk level), prints the comparison tables and the path
of the HTML report. Results are kept in ``--output`` (a results store, run files, the report),
so a second run only re-reads them.

The grid runs in stages (:func:`demo_stages`) so that the first table comes within seconds:
first the retrievers that need no model (BM25, hybrids of BM25s) at every chunk size, then
the others one chunk size at a time. After each stage the rows it added are printed, their
▲/▼ marks tested against the baseline and corrected over the cells finished so far; the
complete tables at the end correct over the whole grid and are the result. Every stage is a
sub-grid of the one config run by the experiment runner into the one store, the last one
the config itself, so the store ends exactly as ``searchbench experiment run`` leaves it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._util import write_text
from ._output import DECIMALS_OPTION, QUIET_OPTION, output_option, reported_warnings
from .experiment_cmd import means_table, print_means_tables

if TYPE_CHECKING:
    from ..experiment import ExperimentConfig
    from ..report import ExperimentReport


def _config_file(out: Path) -> Path:
    """The packaged demo config, copied into ``out`` (refreshed if the package changed)."""
    from importlib.resources import files  # lazy: cli start-up (importlib.resources)

    text = files("searchbench.experiment").joinpath("demo.toml").read_text(encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "demo.toml"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        write_text(path, text)
    return path


def _lexical(cfg: ExperimentConfig, name: str) -> bool:
    """Whether retriever ``name`` needs no model: BM25, or a hybrid of BM25s only."""
    spec = cfg.retriever(name)
    if spec.type == "hybrid":
        return all(p.type == "bm25" for p in cfg.components(spec))
    return spec.type == "bm25"


def demo_stages(cfg: ExperimentConfig) -> list[ExperimentConfig]:
    """The sub-grids of ``cfg`` in the order the demo runs them; the last is ``cfg``.

    First the lexical retrievers at every chunker (seconds), then every retriever at the
    first chunker, the first two, … (only the model-based cells of the newest chunker are
    new in each; the others are in the store). Each sub-grid keeps the config's order of
    retrievers and chunkers and names the baseline system explicitly, so a table built
    between stages compares with the same baseline as the final one. No staging (``[cfg]``)
    when every retriever is lexical, none is, or the baseline needs a model."""
    fast = [r for r in cfg.retrievers if _lexical(cfg, r.name)]
    baseline = cfg.baseline_system()
    if not fast or len(fast) == len(cfg.retrievers) or \
            not _lexical(cfg, baseline.split("/", 1)[0]):
        return [cfg]
    stages = [replace(cfg, retrievers=fast, baseline=baseline)]
    stages += [replace(cfg, chunkers=cfg.chunkers[:i], baseline=baseline)
               for i in range(1, len(cfg.chunkers))]
    return [*stages, cfg]


def _grid_systems(cfg: ExperimentConfig, level: str) -> list[str]:
    """The systems of ``cfg`` at ``level``, in grid order (the final tables' row order)."""
    return list(dict.fromkeys(c.system for c in cfg.cells() if c.level == level))


def _print_added(report: ExperimentReport, cfg: ExperimentConfig, shown: set[str],
                 decimals: int, seconds: float) -> None:
    """The rows finished since the last table (and the baseline's), per level; ``shown``
    (``"level system"`` labels) is updated."""
    total = len(cfg.cells())
    done = total - len(report.missing)
    first = not shown
    what = "first results" if first else "added"
    print(f"\n{what} after {seconds:.0f} s: {done} of {total} cells finished; "
          f"{len(report.missing)} still running"
          + (" (the complete tables follow when they are done)" if first else ""))
    for group in report.groups:
        cmp = group.comparison
        if cmp is None:
            continue
        new = [s for s in _grid_systems(cfg, group.level)
               if s in cmp.systems and f"{group.level} {s}" not in shown]
        if not new:
            continue
        rows = [cmp.baseline, *[s for s in new if s != cmp.baseline]]
        n = len(cmp.candidates)
        means_table(group, decimals, rows, title_note=f" · {what}",
                    legend_text=f"▲/▼: significantly better/worse than {cmp.baseline} "
                                f"({cmp.test} test, {cmp.correction} correction over the "
                                f"{n} system{'s' * (n != 1)} compared so far; the "
                                "complete table corrects over every system)")
        shown.update(f"{group.level} {s}" for s in new)


@click.command("demo")
@output_option("Folder for the results store, run files and report (a second run reuses "
               "the results and replaces the report, and says so).",
               default=Path("searchbench-demo"), aliases=("--out",), replaces_own=True)
@click.option("--open", "open_browser", is_flag=True, help="Open the HTML report.")
@DECIMALS_OPTION
@QUIET_OPTION
def demo_command(output: Path, open_browser: bool, decimals: int, quiet: bool) -> None:
    """Run the built-in experiment on pyref and print where its HTML report is."""
    out = output
    from ..experiment import load_config, run_experiment  # lazy: cli start-up (experiment, numpy)
    from ..report import experiment_report  # lazy: cli start-up (report, numpy)

    t0 = time.perf_counter()
    cfg = load_config(_config_file(out))
    store = out / "demo.sqlite"
    log = None if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    stages = demo_stages(cfg)
    computed = 0
    shown: set[str] = set()
    encoders: dict[Any, Any] = {}  # MiniLM loaded once for every stage
    with reported_warnings(quiet):
        for i, stage in enumerate(stages):
            summary: Any = run_experiment(stage, store, quiet=quiet or None, log=log,
                                           encoders=encoders)
            computed += len(summary.computed)
            if i < len(stages) - 1 and summary.computed:
                partial = experiment_report(store, config=cfg)
                _print_added(partial, cfg, shown, decimals, time.perf_counter() - t0)
        report = experiment_report(store, config=cfg)
        before = set((out / "report").iterdir()) if (out / "report").is_dir() else set()
        written = report.write(out / "report", decimals=decimals)
    if shown:
        print("\ncomplete tables:")
    print_means_tables(report, decimals)
    print(f"\n{computed} cells run, {len(cfg.cells()) - computed} reused from "
          f"{summary.store_path} in {time.perf_counter() - t0:.1f} s")
    print(f"HTML report: {written['html'].resolve()}"
          + (" (replaced)" if written["html"] in before else ""))
    if open_browser:
        import webbrowser  # lazy: cli start-up (webbrowser)

        webbrowser.open(written["html"].resolve().as_uri())
