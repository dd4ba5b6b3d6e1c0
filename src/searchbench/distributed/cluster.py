"""Joining a Ray cluster (ARCHITECTURE §13): reuse one already started, start a local one,
or connect to an address - never hang on an address that does not answer."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import BackendError, require

__all__ = ["CONNECT_TIMEOUT", "ray_cluster", "ray_module"]

CONNECT_TIMEOUT = 10.0  # seconds to reach a cluster address before giving up


def ray_module() -> Any:
    """``ray`` (``MissingDependencyError`` naming the extra ``ray`` when not installed)."""
    return require("ray", "ray")


@contextmanager
def ray_cluster(address: str | None = None, *, timeout: float = CONNECT_TIMEOUT,
                num_cpus: int | None = None) -> Iterator[Any]:
    """Yield the ``ray`` module connected to a cluster.

    A Ray already initialised in this process (a test, a notebook) is used as it is and
    left running. Otherwise ``address`` None starts a local Ray for the duration of the
    block (``num_cpus``: its CPUs, default all), ``"auto"`` joins the cluster running on
    this machine, and ``host:port`` / ``ray://host:port`` joins that cluster - after
    checking within ``timeout`` seconds that something listens there, so an unreachable
    address is one :class:`BackendError` naming it instead of a long hang.
    """
    ray = ray_module()
    if ray.is_initialized():
        yield ray
        return
    if address not in (None, "auto", "local"):
        _probe(address, timeout)
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
    if address in (None, "local"):
        kwargs["num_cpus"] = num_cpus
    else:
        kwargs["address"] = address
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError, OSError) as exc:
        where = f"the Ray cluster at {address!r}" if address else "a local Ray"
        raise BackendError(f"cannot start or join {where}: {_first_line(exc)}; check the "
                           "address (ray status on the head node prints it) or omit "
                           "--address to start a local Ray") from None
    try:
        yield ray
    finally:
        ray.shutdown()


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
