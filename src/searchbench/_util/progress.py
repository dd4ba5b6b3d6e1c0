"""Progress bars (rich) on a terminal; silent when stderr is piped or ``quiet``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress", "progress_enabled"]


def progress_enabled(quiet: bool | None) -> bool:
    if quiet:
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


@contextmanager
def progress(total: int, description: str, quiet: bool | None = None, *,
             unit: str = "items") -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; shows a bar on stderr only if it is a terminal. ``unit="bytes"``
    shows bytes done and the transfer speed (downloads) instead of a count and the time
    left."""
    if not progress_enabled(quiet) or total <= 0:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = ((description, DownloadColumn(), TransferSpeedColumn()) if unit == "bytes"
               else (description, BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()))
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
