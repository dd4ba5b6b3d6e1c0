"""``searchbench demo`` as on a fresh machine: empty searchbench cache, ``HOME`` and
``XDG_CACHE_HOME``, a new output folder; prints when the first table appeared, the whole
wall time, the CPU time (user + sys, which does not depend on other jobs sharing the
machine) and the load averages before and after.

    python benchmarks/demo_fresh.py            # the searchbench this Python imports
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="demo-fresh-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "SEARCHBENCH_CACHE": str(root / "cache"),
               "XDG_CACHE_HOME": str(root / "xdg"), "HOME": str(root / "home"),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        for name in ("cache", "xdg", "home"):
            (root / name).mkdir()
        load_before = os.getloadavg()
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "searchbench", "demo", "-o",
                                 str(root / "out")], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)
        first = None
        assert proc.stdout is not None
        for line in proc.stdout:
            if first is None and line.startswith("first results"):
                first = time.perf_counter() - t0
        code = proc.wait()
        wall = time.perf_counter() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        sys.exit(f"searchbench demo exited with {code}")
    shown = "none printed" if first is None else f"{first:.1f} s"
    print(f"first table: {shown}; whole demo: {wall:.1f} s; "
          f"CPU user+sys: {usage.ru_utime + usage.ru_stime:.1f} s "
          f"(user {usage.ru_utime:.1f}, sys {usage.ru_stime:.1f}); cores: {os.cpu_count()}; "
          f"load average before {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}, after " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
