"""Joining a Ray cluster (ARCHITECTURE §13): reuse one already started, start a local one,
or connect to an address - never hang on an address that does not answer."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

from .._util import progress
from ..errors import BackendError, require

__all__ = ["CONNECT_TIMEOUT", "ray_cluster", "ray_module"]

CONNECT_TIMEOUT = 10.0  # seconds to reach a cluster address before giving up
LOOPBACK = "127.0.0.1"  # the only address a local Ray started by searchbench listens on
# Ray turns a loopback node address into the machine's network address unless it believes
# it runs a single-machine cluster (ray._private.services.get_node_ip_address).
_SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def ray_module() -> Any:
    """``ray`` (``MissingDependencyError`` naming the extra ``ray`` when not installed)."""
    return require("ray", "ray")


@contextmanager
def ray_cluster(address: str | None = None, *, timeout: float = CONNECT_TIMEOUT,
                num_cpus: int | None = None) -> Iterator[Any]:
    """Yield the ``ray`` module connected to a cluster.

    A Ray already initialised in this process (a test, a notebook) is used as it is and
    left running. Otherwise ``address`` None starts a local Ray for the duration of the
    block (``num_cpus``: its CPUs, default all; it listens on 127.0.0.1 only and its
    log records stay out of stderr), ``"auto"`` joins the cluster running on
    this machine, and ``host:port`` / ``ray://host:port`` joins that cluster - after
    checking within ``timeout`` seconds that something listens there, so an unreachable
    address is one :class:`BackendError` naming it instead of a long hang.
    """
    ray = ray_module()
    if ray.is_initialized():
        yield ray
        return
    local = address in (None, "local")
    if address not in (None, "auto", "local"):
        _probe(address, timeout)
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
    if local:
        kwargs.update(num_cpus=num_cpus, _node_ip_address=LOOPBACK)
    else:
        kwargs["address"] = address
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    with _ray_logs_kept_quiet():
        try:
            with _loopback_only(ray) if local else nullcontext():
                ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError, OSError) as exc:
            where = f"the Ray cluster at {address!r}" if address else "a local Ray"
            raise BackendError(f"cannot start or join {where}: {_first_line(exc)}; check "
                               "the address (ray status on the head node prints it) or omit "
                               "--address to start a local Ray") from None
        try:
            if local:
                _check_loopback(ray)
            yield ray
        finally:
            ray.shutdown()


@contextmanager
def _ray_logs_kept_quiet() -> Iterator[None]:
    """Ray's own log records (its start-up notes such as "Token authentication is
    enabled…", worker warnings) go nowhere for the block instead of the user's stderr:
    searchbench reports failures itself, as one ``error:`` line. Ray's processes keep
    writing their logs under its session folder."""
    logger = logging.getLogger("ray")  # its children log through it
    handlers, propagate, level = logger.handlers[:], logger.propagate, logger.level
    logger.setLevel(logging.CRITICAL + 1)  # ray.init clears the handlers: mute by level
    logger.propagate = False
    try:
        yield
    finally:
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)


@contextmanager
def _loopback_only(ray: Any) -> Iterator[None]:
    """While a local Ray starts: its node address is the loopback address, so its GCS,
    raylets, object manager and workers listen on 127.0.0.1 only and talk over loopback.

    Ray replaces a loopback ``_node_ip_address`` by the machine's network address unless
    it runs as a single-machine cluster; that switch is an environment variable read when
    Ray is imported (set here for the processes Ray starts) and a module constant (set
    for this process). Both are restored afterwards."""
    constants = ray._private.ray_constants
    before_env = os.environ.get(_SINGLE_MACHINE_ENV)
    before_const = constants.ENABLE_RAY_CLUSTER
    os.environ[_SINGLE_MACHINE_ENV] = "0"
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = before_const
        if before_env is None:
            os.environ.pop(_SINGLE_MACHINE_ENV, None)
        else:
            os.environ[_SINGLE_MACHINE_ENV] = before_env


def _check_loopback(ray: Any) -> None:
    """Refuse a local Ray whose node did not take the loopback address (a Ray version that
    ignores the switch above would listen on the machine's network)."""
    found = ray.util.get_node_ip_address()
    if found != LOOPBACK:
        raise BackendError(f"the local Ray started on {found}, not {LOOPBACK}: it would be "
                           "reachable from the network; start a cluster yourself (ray start "
                           "--head --node-ip-address 127.0.0.1) and pass --address auto")


def _probe(address: str, timeout: float) -> None:
    """Fail fast when nothing answers at ``address`` (``host:port`` or ``ray://host:port``)."""
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise BackendError(f"Ray address {address!r} is not host:port or ray://host:port "
                           "(or 'auto' for the cluster running on this machine)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise BackendError(f"cannot reach the Ray cluster at {address!r} within {timeout:g} s "
                           f"({_first_line(exc)}); check the address and that the head node "
                           "is running (ray start --head), or omit --address to start a "
                           "local Ray") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def task_error(exc: BaseException) -> BaseException:
    """The exception a Ray task raised (its ``cause``), else ``exc`` itself."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


K = TypeVar("K")


def gather(ray: Any, pending: dict[Any, K], what: str, unit: str, quiet: bool | None
           ) -> tuple[dict[K, Any], list[tuple[K, BaseException]]]:
    """Wait for every task in ``pending`` (object ref -> the caller's key for it), showing
    progress as each finishes: the results by key, and the failures as (key, the exception
    the task raised) for the caller to report in its own words."""
    done: dict[K, Any] = {}
    failed: list[tuple[K, BaseException]] = []
    with progress(len(pending), what, quiet, unit=unit) as advance:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            key = pending.pop(ready[0])
            try:
                done[key] = ray.get(ready[0])
            except Exception as exc:  # reported by the caller, by key
                failed.append((key, task_error(exc)))
            advance(1)
    return done, failed
