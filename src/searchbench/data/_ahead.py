"""Run files read by a background thread while the caller does other work (ARCHITECTURE
§2.4, §13): ``searchbench eval`` starts one before it imports numpy, the measures and reads
the qrels.

Nothing here imports numpy at import time: the thread first scans each file with the
compiled reader (:func:`._compiled.scan_run_file`), which parses without the GIL and
needs no numpy, and only then builds the :class:`~.run.Run` (numpy, usually imported by
the caller meanwhile).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from ._compiled import scan_run_file

if TYPE_CHECKING:
    from .run import Run

__all__ = ["RunsReadAhead"]


class RunsReadAhead:
    """The run files ``paths`` (named ``names``; ``keep`` as :meth:`Run.from_file
    <searchbench.data.Run.from_file>`'s), each read whole, in order, by one background
    thread started at once.

    :meth:`runs` waits for them and raises, in the caller's thread, what reading raised
    (the same errors, in the same order, as reading them there); :meth:`abandon` stops
    after the file being read (a daemon thread: an exiting process does not wait for it).
    """

    def __init__(self, paths: list[str | os.PathLike[str]], names: list[str],
                 keep: str | None) -> None:
        self._files = list(zip(paths, names, strict=True))
        self._keep = keep
        self._runs: list[Run] = []
        self._error: BaseException | None = None
        self._abandoned = False
        self._thread = threading.Thread(target=self._read, name="searchbench-read-runs",
                                        daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for path, name in self._files:
                if self._abandoned:
                    return
                self._runs.append(self._read_one(path, name))
        except BaseException as exc:  # raised again by runs(), in the caller's thread
            self._error = exc

    def _read_one(self, path: str | os.PathLike[str], name: str) -> Run:
        scanned = scan_run_file(path)  # no numpy yet: the caller is importing it
        from .run import Run  # lazy: numpy, once the scan is done
        from .trec import parse_run  # lazy: numpy

        return Run.from_parsed(parse_run(path, scanned=scanned), name=name, keep=self._keep)

    def runs(self) -> list[Any]:
        """The runs read, in order; what reading one raised is raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._runs

    def abandon(self) -> None:
        """Read no further file (done after :meth:`runs`, or when evaluation failed)."""
        self._abandoned = True
