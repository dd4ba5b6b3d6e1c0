"""Start-up cost of the command line: whole processes, side by side, in one run.

The same work is timed five ways, each as a fresh ``python`` process (what a user pays):

- **floor**: start Python, ``import numpy``, read the qrels and the run file;
- **library**: ``import searchbench``, load both files, evaluate five measures, print means;
- **searchbench eval**: the same through the command line (``-f tsv`` and the default table);
- **searchbench --help**;
- **import searchbench**.

The qrels and run are synthetic (``--queries`` × 100 documents, seeded). The processes are
interleaved round by round (so a busy neighbour slows all of them alike) and each is
reported by the median of ``--repeat`` rounds: wall time and the CPU time (user + system) of
the process itself (``os.wait4``), which other load disturbs far less. Ratios are to the
floor; "over library" is the difference to the library call.

    PYTHONPATH=src python benchmarks/cli_startup.py [--repeat 7] [--queries 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURES = ["nDCG@10", "RR@10", "R@100", "AP", "P@10"]


def write_inputs(folder: Path, n_queries: int, depth: int = 100, seed: int = 7) -> tuple[Path,
                                                                                        Path]:
    """A TREC run of ``depth`` distinct documents per query and qrels judging 10 documents
    per query (5 retrieved, 5 not; grades 0-2)."""
    rng = np.random.default_rng(seed)
    run_lines, qrels_lines = [], []
    for q in range(n_queries):
        docs = rng.choice(50 * depth, size=depth + 5, replace=False)
        run_lines += [f"q{q} Q0 d{d} {r} {-r} sys\n" for r, d in enumerate(docs[:depth], 1)]
        judged = [*rng.choice(docs[:depth], size=5, replace=False), *docs[depth:]]
        qrels_lines += [f"q{q} 0 d{d} {g}\n" for d, g in zip(judged, rng.integers(0, 3, 10),
                                                              strict=True)]
    run, qrels = folder / "run.trec", folder / "qrels.txt"
    run.write_text("".join(run_lines))
    qrels.write_text("".join(qrels_lines))
    return qrels, run


def commands(qrels: Path, run: Path) -> dict[str, list[str]]:
    """The contenders: a name and an argument vector each."""
    py = sys.executable
    script = Path(py).with_name("searchbench")
    cli = [str(script)] if script.is_file() else [py, "-m", "searchbench"]
    library = ("import sys, searchbench as sb\n"
               f"r = sb.evaluate(sb.Qrels.from_file({str(qrels)!r}), "
               f"sb.Run.from_file({str(run)!r}), {MEASURES!r})\n"
               "print('\\t'.join(f'{k} {v:.4f}' for k, v in r.mean.items()))")
    floor = (f"import numpy\nopen({str(qrels)!r}, 'rb').read()\n"
             f"open({str(run)!r}, 'rb').read()")
    measures = [a for m in MEASURES for a in ("-m", m)]
    return {
        "floor: python + numpy + read files": [py, "-c", floor],
        "library: load + evaluate + print": [py, "-c", library],
        "searchbench eval -f tsv": [*cli, "eval", str(qrels), str(run), *measures, "-f",
                                    "tsv"],
        "searchbench eval (table)": [*cli, "eval", str(qrels), str(run), *measures],
        "searchbench --help": [*cli, "--help"],
        "import searchbench": [py, "-c", "import searchbench"],
    }


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one whole process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv[:4])}… failed ({proc.returncode}): {err[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--queries", type=int, default=10_000)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = write_inputs(Path(tmp), args.queries)
        todo = commands(qrels, run)
        for argv in todo.values():  # warm the page cache and the .pyc files
            timed(argv)
        walls: dict[str, list[float]] = {name: [] for name in todo}
        cpus: dict[str, list[float]] = {name: [] for name in todo}
        for _ in range(args.repeat):
            for name, argv in todo.items():
                wall, cpu = timed(argv)
                walls[name].append(wall)
                cpus[name].append(cpu)
    wall = {n: statistics.median(v) for n, v in walls.items()}
    cpu = {n: statistics.median(v) for n, v in cpus.items()}
    floor, library = "floor: python + numpy + read files", "library: load + evaluate + print"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load:.1f} "
          f"at the start, {os.getloadavg()[0]:.1f} at the end; {args.queries} queries × 100 "
          f"documents, {len(MEASURES)} measures; median of {args.repeat} interleaved rounds; "
          f"CLI: {' '.join(todo['searchbench --help'][:-1])}")
    print()
    print("| process | wall s | × floor | over library | CPU s | CPU over library |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in todo:
        print(f"| {name} | {wall[name]:.3f} | {wall[name] / wall[floor]:.2f} | "
              f"{wall[name] - wall[library]:+.3f} | {cpu[name]:.3f} | "
              f"{cpu[name] - cpu[library]:+.3f} |")


if __name__ == "__main__":
    main()
