"""The local Ray that ``--engine ray`` starts for one command (distributed/_cluster.py):
it listens on the loopback address only, its nodes talk over loopback, and its own log
chatter stays out of the user's stderr (issue 24 items 17 and 18).

Each test runs in a fresh Python process: a Ray already initialised in the test process
would be reused as it is, and this is about the Ray searchbench starts itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(),
                                reason="reads sockets from Linux /proc")

ROOT = Path(__file__).resolve().parents[2]

# Runs inside the child: a real evaluation as Ray tasks, then the sockets of every process
# descending from this one (the GCS, raylets, agents and workers Ray started), read from
# /proc: TCP states 0A (listening) and 01 (established).
_PROBE = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path

    import numpy as np
    from searchbench.data import Qrels, Run
    from searchbench.distributed import evaluate_runs, ray_cluster
    from searchbench.measures import Evaluator

    folder = Path(sys.argv[1])
    qrels = Qrels.from_columns(["q1", "q2"], ["a", "b"], [1, 1])
    Run.from_columns(["q1", "q1", "q2"], ["a", "b", "b"], np.array([2.0, 1.0, 1.0]),
                     name="r").to_file(folder / "r.trec")

    def descendants(root):
        children = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        found, todo = set(), [root]
        while todo:
            pid = todo.pop()
            found.add(pid)
            todo += children.get(pid, [])
        return found

    def inodes(pid):
        out = set()
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    out.add(target[8:-1])
        except OSError:
            pass
        return out

    def address(hex_addr):
        host, port = hex_addr.split(":")
        raw = bytes.fromhex(host)
        if len(raw) == 4:
            return ".".join(str(b) for b in raw[::-1]), int(port, 16)
        words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
        ip = b"".join(words)
        import ipaddress
        return str(ipaddress.IPv6Address(ip)), int(port, 16)

    with ray_cluster(num_cpus=1) as ray:
        [found] = evaluate_runs(Evaluator(qrels, ["AP"]), [folder / "r.trec"],
                                names=["r"], partitions=1, quiet=True)
        node_ip = ray.util.get_node_ip_address()
        mine = {i: pid for pid in descendants(os.getpid()) for i in inodes(pid)}
        listening, connected = [], []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if cols[9] not in mine:
                    continue
                local, remote = address(cols[1]), address(cols[2])
                if cols[3] == "0A":
                    listening.append(local[0])
                elif cols[3] == "01":
                    connected.append(remote[0])
        nodes = len(descendants(os.getpid())) - 1
    print(json.dumps({"ap": float(found.result.mean["AP"]), "node_ip": node_ip,
                      "listening": listening, "connected": connected,
                      "ray_processes": nodes,
                      "env_restored": "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ}))
""")


def _loopback(ip: str) -> bool:
    import ipaddress

    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["HOME"] = str(tmp_path)  # Ray writes ~/.ray/auth_token
    env.pop("RAY_ADDRESS", None)
    return env


def test_local_ray_listens_on_loopback_only(tmp_path):
    done = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True,
                          text=True, timeout=300, check=False, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["ap"] == 1.0  # q1: a ranked first; q2: b ranked first
    assert got["node_ip"] == "127.0.0.1"
    assert got["ray_processes"] >= 2  # the GCS and a raylet at least were seen
    assert len(got["listening"]) >= 2, got
    exposed = [ip for ip in got["listening"] if not _loopback(ip)]
    assert not exposed, f"Ray listens on {exposed}"
    outside = [ip for ip in got["connected"] if not _loopback(ip)]
    assert not outside, f"Ray processes talk to {outside}"
    assert got["env_restored"]
    assert done.stderr == ""  # nothing of Ray's start-up reached stderr


def test_ray_startup_chatter_stays_out_of_stderr(tmp_path):
    (tmp_path / "q.txt").write_text("a 0 x 1\n")
    (tmp_path / "r.trec").write_text("a Q0 x 1 1 t\nnot a run line\n")
    done = subprocess.run([sys.executable, "-m", "searchbench", "eval",
                           str(tmp_path / "q.txt"), str(tmp_path / "r.trec"), "--engine",
                           "ray"], capture_output=True, text=True, timeout=300, check=False,
                          env=_env(tmp_path))
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: partition ")
    assert f"{tmp_path / 'r.trec'}:2: found 4 fields, expected 6" in line
    assert "Token authentication" not in done.stderr + done.stdout
