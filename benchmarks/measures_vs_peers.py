"""Measures vs peers: searchbench, pytrec_eval, ranx and ir_measures as whole processes.

Each contender is a fresh Python process (``benchmarks/peers/run_*.py``) that imports its
library, parses the TREC qrels and run files and evaluates ``nDCG@10 RR@10 R@100 AP P@5``,
printing the means as JSON. searchbench runs as the command a user types (``searchbench
eval QRELS RUN -m nDCG@10,RR@10,R@100,AP,P@5``) with its compiled TREC reader and with the
pure one (``SEARCHBENCH_PURE_READER=1``), and through the library with the compiled reader
(``Qrels.from_file``, ``Run.from_file``, ``evaluate``; it reports its phases). We time the
whole process (best and median of ``--repeat`` runs, interleaved), read its peak RSS from
``os.wait4``, and check that every contender's means agree with searchbench's to 1e-6.
ranx runs twice: with a fresh, empty numba cache (cold: it compiles) and with a cache
filled by an untimed run (warm).

    python benchmarks/measures_vs_peers.py            # 10,000 queries x 100 docs
    python benchmarks/measures_vs_peers.py --big      # 1,000,000 x 100 (searchbench only,
                                                      # add --peers-big for the peers)

Files are generated once into ``benchmarks/_work/`` (git-ignored), by a child process so
that this parent stays small: a child's peak RSS counts its parent's pages up to ``exec``.
Peak RSS is read by ``/usr/bin/time`` when present, else from ``os.wait4``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
GNU_TIME = "/usr/bin/time"
MEASURES = ["nDCG@10", "RR@10", "R@100", "AP", "P@5"]
TOLERANCE = 1e-6
PACKAGES = ["searchbench", "numpy", "pyarrow", "pytrec-eval-terrier", "ranx", "numba",
            "ir-measures"]


@dataclass(frozen=True)
class Contender:
    """One whole-process configuration: a runner script and its numba cache policy."""

    label: str
    script: str
    numba: str = ""  # "" (none), "cold" (fresh cache per run) or "warm" (pre-filled)
    env: tuple[tuple[str, str], ...] = ()  # environment variables set for this contender


@dataclass
class Result:
    """What the repeated runs of one contender produced."""

    contender: Contender
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # user + system seconds, per run
    peak_kb: int = 0
    means: dict[str, float] | None = None
    error: str | None = None
    phases: dict[str, float] | None = None  # of the fastest run, when the runner reports them


CONTENDERS = [
    Contender("floor: python + numpy, read files", "run_floor.py"),
    Contender("searchbench eval, compiled reader", "run_searchbench_cli.py",
              env=(("SEARCHBENCH_PURE_READER", "0"),)),
    Contender("searchbench eval, pure reader", "run_searchbench_cli.py",
              env=(("SEARCHBENCH_PURE_READER", "1"),)),
    Contender("searchbench library, compiled reader", "run_searchbench.py",
              env=(("SEARCHBENCH_PURE_READER", "0"),)),
    Contender("pytrec_eval", "run_pytrec_eval.py"),
    Contender("ranx (cold numba cache)", "run_ranx.py", numba="cold"),
    Contender("ranx (warm numba cache)", "run_ranx.py", numba="warm"),
    Contender("ir_measures", "run_ir_measures.py"),
]


STREAM = Contender("searchbench eval --stream", "run_searchbench_cli.py",
                   env=(("SEARCHBENCH_EVAL_STREAM", "1"),))


@dataclass(frozen=True)
class Limits:
    """Per-process limits: wall seconds, and resident memory of the process tree."""

    timeout: float = 3600.0
    rss_kb: int = 16 * 2**20


class Watchdog(threading.Thread):
    """Kills a process group that runs too long or holds too much memory (shared machine)."""

    def __init__(self, pid: int, limits: Limits) -> None:
        super().__init__(daemon=True)
        self.pid, self.limits, self.done = pid, limits, threading.Event()
        self.reason: str | None = None
        self.seen_kb = 0  # largest resident memory seen while polling

    def run(self) -> None:
        start = time.monotonic()
        while not self.done.wait(0.2):
            rss = _tree_rss_kb(self.pid)
            self.seen_kb = max(self.seen_kb, rss)
            if rss > self.limits.rss_kb:
                self.reason = f"killed: resident memory above {self.limits.rss_kb / 2**20:.1f} GiB"
            elif time.monotonic() - start > self.limits.timeout:
                self.reason = f"killed: slower than {self.limits.timeout:.0f} s"
            if self.reason:
                os.killpg(self.pid, 9)
                return


def _tree_rss_kb(pid: int) -> int:
    """Resident memory (KiB) of a process and its descendants, read from /proc."""
    total = 0
    for line in _lines(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            total += int(line.split()[1])
    for task in _lines(f"/proc/{pid}/task/{pid}/children")[:1]:
        total += sum(_tree_rss_kb(int(child)) for child in task.split())
    return total


def run_process(script: str, files: list[Path], env: dict[str, str], limits: Limits
                ) -> tuple[float, float, int, str, str, int]:
    """Run one runner; return wall seconds, CPU seconds (user + system, the process and the
    children it waited for), peak RSS (KiB), stdout, stderr, exit code."""
    command = [sys.executable, str(PEERS / script), *map(str, files)]
    with tempfile.TemporaryDirectory() as tmp:
        rss_file = Path(tmp) / "rss"
        if os.access(GNU_TIME, os.X_OK):
            command = [GNU_TIME, "-f", "%M", "-o", str(rss_file), *command]
        with open(Path(tmp) / "out", "w+b") as out, open(Path(tmp) / "err", "w+b") as err:
            start = time.perf_counter()
            proc = subprocess.Popen(command, stdout=out, stderr=err, env=env,
                                    start_new_session=True)
            watchdog = Watchdog(proc.pid, limits)
            watchdog.start()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            watchdog.done.set()
            proc.returncode = code = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        if watchdog.reason:
            stderr += f"\n{watchdog.reason}"
        peak_kb = max(_read_peak(rss_file, usage.ru_maxrss), watchdog.seen_kb)
    return wall, usage.ru_utime + usage.ru_stime, peak_kb, stdout, stderr, code


def _read_peak(rss_file: Path, fallback_kb: int) -> int:
    """Peak RSS in KiB written by GNU time (last line), else ``fallback_kb``."""
    try:
        return int(rss_file.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return fallback_kb


def record(result: Result, files: list[Path], env: dict[str, str], limits: Limits) -> None:
    """Run the contender once and fold the outcome into ``result``."""
    wall, cpu, peak_kb, out, err, code = run_process(result.contender.script, files, env,
                                                     limits)
    result.peak_kb = max(result.peak_kb, peak_kb)
    if code != 0:
        last = err.strip().splitlines()[-1:] or [f"exit code {code}"]
        result.error = f"exit {code}: {last[0][:200]}"
        return
    if "floor" not in result.contender.label:
        output = json.loads(out.strip().splitlines()[-1])
        phases = output.pop("_phases", None)
        if phases and (not result.walls or wall < min(result.walls)):
            result.phases = phases
        result.means = output
    result.walls.append(wall)
    result.cpus.append(cpu)


def run_all(contenders: list[Contender], files: list[Path], repeat: int, limits: Limits
            ) -> list[Result]:
    """Interleave ``repeat`` rounds over the contenders (spreads the machine's noise)."""
    results = [Result(c) for c in contenders]
    warm_dir = tempfile.mkdtemp(prefix="numba-warm-")
    try:
        for res in results:
            if res.contender.numba == "warm":  # untimed run that fills the cache
                env = dict(os.environ, NUMBA_CACHE_DIR=warm_dir, **dict(res.contender.env))
                run_process(res.contender.script, files, env, limits)
        for _ in range(repeat):
            for res in results:
                if res.error is None:
                    _timed_round(res, files, warm_dir, limits)
    finally:
        shutil.rmtree(warm_dir, ignore_errors=True)
    return results


def _timed_round(res: Result, files: list[Path], warm_dir: str, limits: Limits) -> None:
    """One timed run, with a fresh numba cache for a cold contender."""
    own = dict(res.contender.env)
    if res.contender.numba != "cold":
        env = dict(os.environ, NUMBA_CACHE_DIR=warm_dir, **own)
        record(res, files, env, limits)
        return
    cold_dir = tempfile.mkdtemp(prefix="numba-cold-")
    try:
        record(res, files, dict(os.environ, NUMBA_CACHE_DIR=cold_dir, **own), limits)
    finally:
        shutil.rmtree(cold_dir, ignore_errors=True)


def machine() -> list[str]:
    """CPU model, cores, memory, OS, Python and library versions, load average."""
    cpu = next((line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor() or "unknown")
    mem_kb = next((int(line.split()[1]) for line in _lines("/proc/meminfo")
                   if line.startswith("MemTotal")), 0)
    versions = ", ".join(f"{p} {_version(p)}" for p in PACKAGES)
    return [
        f"machine: {cpu}; {os.cpu_count()} cores; {mem_kb / 2**20:.1f} GiB RAM; "
        f"{platform.system()} {platform.release()}",
        f"python {platform.python_version()}; {versions}",
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"searchbench --version: {_searchbench_version()}",
    ]


def _searchbench_version() -> str:
    """What ``searchbench --version`` prints (which TREC reader is active)."""
    found = subprocess.run([sys.executable, "-m", "searchbench", "--version"],
                           capture_output=True, text=True, check=False)
    return found.stdout.strip() or found.stderr.strip()


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def reference(results: list[Result]) -> Result | None:
    """The first contender that produced means (searchbench's command, when it ran)."""
    return next((r for r in results if r.means is not None), None)


def agreement(res: Result, ref: Result | None) -> str:
    """Largest absolute difference of the means from the reference, and a verdict."""
    if res.means is None or ref is None or ref.means is None:
        return "—"
    if res is ref:
        return "reference"
    missing = [m for m in MEASURES if m not in res.means]
    if missing:
        return f"missing {missing}"
    diffs = {m: abs(res.means[m] - ref.means[m]) for m in MEASURES}
    worst = max(diffs, key=diffs.__getitem__)
    verdict = "agree" if diffs[worst] <= TOLERANCE else f"DISAGREE ({worst})"
    return f"{diffs[worst]:.1e} {verdict}"


def table(results: list[Result]) -> list[str]:
    """Markdown table: wall and CPU times, ratios to searchbench and to the floor, peak
    memory, agreement. CPU time (user + system) is what a machine shared with other work
    disturbs least: on a virtual machine whose host is busy, wall time also counts the
    time the process waited for a core."""
    ref = reference(results)
    base = next((statistics.median(r.walls) for r in results
                 if r.contender.label.startswith("searchbench") and r.walls), None)
    floor = next((statistics.median(r.walls) for r in results
                  if r.contender.label.startswith("floor") and r.walls), None)
    cpu_floor = next((statistics.median(r.cpus) for r in results
                      if r.contender.label.startswith("floor") and r.cpus), None)
    lines = ["| contender | best wall (s) | median wall (s) | median / searchbench "
             "| median / floor | median CPU (s) | CPU / floor | peak RSS (MiB) "
             "| max abs diff of means |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        if not r.walls:
            lines.append(f"| {r.contender.label} | failed: {r.error} | | | | | | "
                         f"{r.peak_kb / 1024:.0f} | |")
            continue
        best, median = min(r.walls), statistics.median(r.walls)
        ratio = f"{median / base:.2f}" if base else "—"
        to_floor = f"{median / floor:.2f}" if floor else "—"
        cpu = statistics.median(r.cpus)
        cpu_ratio = f"{cpu / cpu_floor:.2f}" if cpu_floor else "—"
        lines.append(f"| {r.contender.label} | {best:.3f} | {median:.3f} | {ratio} | "
                     f"{to_floor} | {cpu:.3f} | {cpu_ratio} | {r.peak_kb / 1024:.0f} | "
                     f"{agreement(r, ref)} |")
    if ref is not None and ref.means is not None:
        values = ", ".join(f"{m} {ref.means[m]:.6f}" for m in MEASURES)
        lines += ["", f"means ({ref.contender.label}): {values}"]
    for r in results:
        if r.phases:
            spent = ", ".join(f"{name} {sec:.3f} s" for name, sec in r.phases.items())
            lines.append(f"{r.contender.label} phases (fastest run): {spent}")
    return lines


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--big", action="store_true", help="1,000,000 queries x 100 docs")
    p.add_argument("--peers-big", action="store_true",
                   help="with --big, run the peers too (pytrec_eval/ranx need >20 GiB)")
    p.add_argument("--queries", type=int, help="number of queries (overrides --big)")
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--ties", action="store_true", help="tied scores (ranx breaks them "
                   "differently, so expect disagreement)")
    p.add_argument("--repeat", type=int, help="timed runs per contender (default 3; 1 --big)")
    p.add_argument("--only", nargs="*", help="labels (prefixes) of contenders to run")
    p.add_argument("--stream", action="store_true",
                   help="add `searchbench eval --stream` (bounded memory) as a contender")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per process")
    p.add_argument("--rss-limit-gib", type=float, default=16.0,
                   help="kill a process whose resident memory exceeds this")
    p.add_argument("--work-dir", type=Path, default=HERE / "_work")
    return p.parse_args()


def select(args: argparse.Namespace) -> list[Contender]:
    """Contenders for these options."""
    chosen = CONTENDERS
    if args.big and not args.peers_big:
        chosen = [c for c in CONTENDERS if c.label.startswith(("floor", "searchbench"))]
    if args.stream:
        chosen = [*chosen, STREAM]
    if args.only:
        chosen = [c for c in chosen if c.label.startswith(tuple(args.only))]
    return chosen


def data_files(args: argparse.Namespace) -> list[Path]:
    """Generate the qrels and run once per configuration; return their paths."""
    n = args.queries or (1_000_000 if args.big else 10_000)
    folder = args.work_dir / f"{n}x{args.depth}{'-ties' if args.ties else ''}"
    qrels, run = folder / "qrels.txt", folder / "run.trec"
    if not (qrels.exists() and run.exists()):
        t0 = time.perf_counter()
        command = [sys.executable, str(HERE / "gen_trec.py"), str(folder), "--queries", str(n),
                   "--depth", str(args.depth), *(["--ties"] if args.ties else [])]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        print(f"generated {folder} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return [qrels, run]


def precompile() -> None:
    """Byte-compile searchbench's modules, as an install does: with
    ``PYTHONDONTWRITEBYTECODE`` set (or an editable install never imported), each process
    would otherwise compile them again (0.1-0.5 s) and the table would time the compiler."""
    import importlib.util

    spec = importlib.util.find_spec("searchbench")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            subprocess.run([sys.executable, "-m", "compileall", "-q", folder], check=False,
                           stdout=subprocess.DEVNULL, env=dict(os.environ,
                                                               PYTHONDONTWRITEBYTECODE=""))


def main() -> None:
    """Generate (once), run every contender, print the machine and the table."""
    args = parse_args()
    precompile()
    files = data_files(args)
    repeat = args.repeat or (1 if args.big else 3)
    header = machine()
    limits = Limits(args.timeout, int(args.rss_limit_gib * 2**20))
    results = run_all(select(args), files, repeat, limits)
    sizes = ", ".join(f"{f.name} {f.stat().st_size / 2**20:.0f} MiB" for f in files)
    print("\n".join([
        f"command: python benchmarks/measures_vs_peers.py {' '.join(sys.argv[1:])}".rstrip(),
        *header, f"data: {files[0].parent.name} ({sizes}); best and median of {repeat} "
        "whole-process runs, interleaved", "", *table(results),
        f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
    ]))


if __name__ == "__main__":
    main()
