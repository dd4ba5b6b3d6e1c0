"""Progress of long steps, and what an interrupted step kept (one home; ARCHITECTURE §9).

``with progress(total, description, quiet, unit=..., kept=...) as step`` reports a step of
``total`` units (texts, cells, pairs, settings…):

- stderr a terminal: a ``rich.progress`` bar (count, rate, elapsed time and time left),
  removed when the step ends; nested steps are extra rows of the same display;
- stderr piped (a log, CI): plain lines, no terminal codes, at most one every
  ``SEARCHBENCH_PROGRESS_SECONDS`` (default 5) while the step runs and one closing line -
  a step shorter than that prints nothing;
- ``quiet``: nothing.

``step(n)`` counts ``n`` units done *and kept* (written where the next run finds them);
``step.advance(n)`` only moves the display and ``step.keep(n)`` only counts kept units
(a batch shown piece by piece, stored at its end).

Ctrl-C: a step that a ``KeyboardInterrupt`` passes through is remembered, and
:func:`interrupted_message` builds the one line the CLI prints (``interrupted: 7,168 of
12,025 texts embedded and cached; run the same command again to resume``). ``kept`` says
what the step's finished units are (``"embedded and cached"``); a step without ``kept``
keeps nothing. :func:`keeping` declares what an open-ended task keeps (a server).
rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .escape import visible_text

__all__ = ["Step", "interrupted_message", "keeping", "progress", "progress_enabled",
           "reset_interruption"]

RESUME = "run the same command again to resume"
_ENV_SECONDS = "SEARCHBENCH_PROGRESS_SECONDS"


def progress_enabled(quiet: bool | None) -> bool:
    """Whether a terminal bar may be drawn: not ``quiet`` and stderr is a terminal."""
    if quiet:
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _line_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(_ENV_SECONDS, "5")))
    except ValueError:
        return 5.0


class Step:
    """One running step: counts, what it keeps, and its display (bar, lines or nothing)."""

    def __init__(self, total: int, description: str, unit: str, kept: str | None,
                 resume: str | None, mode: str) -> None:
        self.total, self.unit, self.kept, self.mode = max(int(total), 0), unit, kept, mode
        self.description = visible_text(description)
        self.resume = resume or (RESUME if kept else None)
        self.done = 0  # shown
        self.saved = 0  # kept where the next run finds it
        self.summary: str | None = None  # fixed "what was kept" (see keeping())
        self.start = self._last_line = time.monotonic()
        self._lines = 0
        self._task: Any = None

    def __call__(self, n: int = 1) -> None:
        """``n`` more units done and kept."""
        self.keep(n)
        self.advance(n)

    def keep(self, n: int) -> None:
        """``n`` more units kept (the display moves with :meth:`advance`)."""
        self.saved += n

    def advance(self, n: int) -> None:
        """Move the display ``n`` units on."""
        self.done += n
        if self.mode == "bar" and _DISPLAY.bar is not None:
            elapsed = max(time.monotonic() - self.start, 1e-9)
            rate = _rate(self.done / elapsed, self.unit) if self.total > 1 and self.done else ""
            _DISPLAY.bar.update(self._task, advance=n, count=self.count_text(), rate=rate)
        elif self.mode == "lines" and n:
            now = time.monotonic()
            if now - self._last_line >= _line_seconds():
                self._line(now)

    def kept_text(self) -> str | None:
        """``"7,168 of 12,025 texts embedded and cached"`` (None: nothing kept)."""
        if self.summary is not None:
            return self.summary
        if not self.kept:
            return None
        return f"{_count(self.saved, self.unit)} of {_count(self.total, self.unit)} " \
               f"{self._noun()} {self.kept}"

    def count_text(self) -> str:
        """``"1,024/12,025 texts"`` (sizes for bytes)."""
        return f"{_count(self.done, self.unit)}/{_count(self.total, self.unit)} " \
               f"{self._noun()}".rstrip()

    def _noun(self) -> str:
        return "" if self.unit == "bytes" else self.unit

    def _line(self, now: float, final: bool = False) -> None:
        self._last_line, self._lines = now, self._lines + 1
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        if self.total == 1:  # one indivisible piece of work (an index build): its time
            text = f"{self.description}: done in {_duration(elapsed)}"
        elif final:
            text = (f"{self.description}: {_count(self.done, self.unit)} {self._noun()} in "
                    f"{_duration(elapsed)} ({_rate(rate, self.unit)})")
        else:
            pct = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
            left = (f", about {_duration((self.total - self.done) / rate)} left"
                    if rate > 0 and self.total > self.done else "")
            text = (f"{self.description}: {_count(self.done, self.unit)} of "
                    f"{_count(self.total, self.unit)} {self._noun()}{pct}, "
                    f"{_rate(rate, self.unit)}{left}")
        print(" ".join(text.split()), file=sys.stderr, flush=True)

    def close(self, finished: bool = True) -> None:
        """End the display: a closing line (piped, a finished step that printed lines) or
        the bar row."""
        if self.mode == "lines" and self._lines and self.done and finished and self.total > 1:
            self._line(time.monotonic(), final=True)
        elif self.mode == "bar" and _DISPLAY.bar is not None:
            _DISPLAY.bar.remove_task(self._task)


class _Display:
    """The one rich ``Progress`` shared by the steps running now (nested steps are rows)."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.steps: list[Step] = []
        self.interrupted: list[Step] | None = None  # the steps a KeyboardInterrupt went through
        self.finished: dict[str, str] = {}  # description -> kept text, finished top-level steps


_DISPLAY = _Display()


def _open_bar(step: Step) -> None:
    """Add ``step`` as a row of the shared bar (started with the first step)."""
    from rich.console import Console  # lazy: keeps rich out of start-up
    from rich.markup import escape  # lazy: keeps rich out of start-up
    from rich.progress import (  # lazy: keeps rich out of start-up
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if _DISPLAY.bar is None:
        columns = (TextColumn("{task.description}"), BarColumn(),
                   TextColumn("{task.fields[count]}"), TextColumn("{task.fields[rate]}"),
                   TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
        _DISPLAY.bar = Progress(*columns, console=Console(stderr=True), transient=True)
        _DISPLAY.bar.start()
    step._task = _DISPLAY.bar.add_task(escape(step.description), total=step.total,
                                       count=step.count_text(), rate="")


@contextmanager
def progress(total: int, description: str, quiet: bool | None = None, *,
             unit: str = "items", kept: str | None = None,
             resume: str | None = None) -> Iterator[Step]:
    """Report a step of ``total`` units (see the module docstring); yields the
    :class:`Step`, called as ``step(n)`` when ``n`` more units are done and kept.

    ``unit``: the plural noun of a unit (``"bytes"`` shows sizes and transfer speed);
    ``kept``: what a done unit is, e.g. ``"embedded and cached"`` (None: the step keeps
    nothing if interrupted); ``resume``: how to go on (default: run the same command).
    """
    mode = ("quiet" if quiet or total <= 0 else
            "bar" if progress_enabled(quiet) else "lines")
    step = Step(total, description, unit, kept, resume, mode)
    if mode == "bar":
        _open_bar(step)
    with _running(step):
        yield step


@contextmanager
def keeping(summary: str, resume: str | None = None) -> Iterator[None]:
    """Declare what the work inside keeps if Ctrl-C stops it (an open-ended task such as
    a server): ``summary`` becomes the ``interrupted:`` line's "what was kept"."""
    step = Step(0, "", "items", None, resume or RESUME, "quiet")
    step.summary = summary
    with _running(step):
        yield


@contextmanager
def _running(step: Step) -> Iterator[None]:
    _DISPLAY.steps.append(step)
    finished = False
    try:
        yield
    except KeyboardInterrupt:
        if _DISPLAY.interrupted is None:
            _DISPLAY.interrupted = list(_DISPLAY.steps)
        raise
    else:
        finished = True
        text = step.kept_text()
        if text and step.total and len(_DISPLAY.steps) == 1:
            _DISPLAY.finished[step.description] = text
    finally:
        _DISPLAY.steps.remove(step)
        step.close(finished)
        if not _DISPLAY.steps and _DISPLAY.bar is not None:
            bar, _DISPLAY.bar = _DISPLAY.bar, None
            bar.stop()


def interrupted_message() -> str:
    """The one line for Ctrl-C: ``interrupted: <what was kept>; <how to resume>``, from the
    steps that were running and the finished ones that kept something."""
    steps = _DISPLAY.interrupted or []
    parts = list(_DISPLAY.finished.values())
    parts += [t for t in (s.kept_text() for s in steps) if t]
    if parts:
        resume = next((s.resume for s in reversed(steps) if s.kept_text()), None) or RESUME
        return f"interrupted: {', '.join(parts)}; {resume}"
    counted = [s for s in steps if s.total]
    if counted:
        s = counted[-1]
        return (f"interrupted: {s.description} stopped at {_count(s.done, s.unit)} of "
                f"{_count(s.total, s.unit)} {s._noun()}; nothing was written".replace("  ", " "))
    return "interrupted: nothing was written"


def reset_interruption() -> None:
    """Forget interrupted and finished steps (the CLI calls it when a command starts)."""
    _DISPLAY.interrupted = None
    _DISPLAY.finished = {}


def _count(n: float, unit: str) -> str:
    if unit != "bytes":
        return f"{int(n):,}"
    for size, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= size:
            return f"{n / size:.1f} {name}"
    return f"{int(n)} bytes"


def _rate(per_second: float, unit: str) -> str:
    if unit == "bytes":
        return f"{_count(per_second, unit)}/s"
    shown = f"{per_second:,.1f}" if per_second < 100 else f"{per_second:,.0f}"
    return f"{shown} {unit}/s"


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 20 s``, ``2 h 05 min``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
