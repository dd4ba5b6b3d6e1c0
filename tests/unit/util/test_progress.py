"""The progress reporter: plain lines on a pipe, a rich bar on a terminal, nothing when
quiet, and the one ``interrupted:`` line built from the steps Ctrl-C went through."""

from __future__ import annotations

import importlib
import io
import re
import sys

import pytest

from searchbench._util.progress import interrupted_message, keeping, progress

progress_module = importlib.import_module("searchbench._util.progress")  # the package's
# attribute `progress` is the function


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    progress_module.reset_interruption()
    monkeypatch.setenv("SEARCHBENCH_PROGRESS_SECONDS", "0")
    yield
    progress_module.reset_interruption()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_steps_print_plain_lines_with_rate_and_time_left(capsys):
    with progress(4, "embedding documents (m)", unit="texts", kept="embedded and cached") as s:
        s(1)
        s(3)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert re.fullmatch(r"embedding documents \(m\): 1 of 4 texts \(25 %\), [\d,.]+ texts/s, "
                        r"about \d+ s left", lines[0]), lines
    assert re.fullmatch(r"embedding documents \(m\): 4 of 4 texts \(100 %\), [\d,.]+ texts/s",
                        lines[1]), lines
    assert re.fullmatch(r"embedding documents \(m\): 4 texts in \d+ s \([\d,.]+ texts/s\)",
                        lines[2]), lines
    assert len(lines) == 3 and "\x1b" not in err and "\r" not in err


def test_a_short_piped_step_prints_nothing_and_quiet_prints_nothing(capsys, monkeypatch):
    monkeypatch.setenv("SEARCHBENCH_PROGRESS_SECONDS", "3600")
    with progress(5, "short", unit="texts") as s:
        s(5)
    monkeypatch.setenv("SEARCHBENCH_PROGRESS_SECONDS", "0")
    with progress(5, "muted", quiet=True, unit="texts") as s:
        s(5)
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_one_rich_bar_with_rate_and_eta(monkeypatch):
    pytest.importorskip("rich")
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with progress(10, "outer [bold]x[/bold]", unit="cells") as outer:
        with progress(100, "inner", unit="texts") as inner:
            inner(50)
            assert progress_module._DISPLAY.bar is not None
            assert len(progress_module._DISPLAY.bar.tasks) == 2  # one display, two rows
            progress_module._DISPLAY.bar.refresh()
        outer(1)
    assert progress_module._DISPLAY.bar is None
    shown = term.getvalue()
    assert "\x1b[" in shown  # drawn for a terminal
    assert "50/100 texts" in shown and "texts/s" in shown and "eta" in shown
    assert "outer [bold]x[/bold]" in shown  # a name is text, not rich markup


def test_interrupt_names_what_the_running_step_kept():
    with pytest.raises(KeyboardInterrupt), progress(12025, "embedding", unit="texts",
                                                   kept="embedded and cached") as s:
        s(7168)
        s.advance(100)  # shown, not stored yet: not counted as kept
        raise KeyboardInterrupt
    assert interrupted_message() == ("interrupted: 7,168 of 12,025 texts embedded and "
                                     "cached; run the same command again to resume")


def test_interrupt_in_nested_steps_names_both_and_finished_steps():
    with progress(3, "embedding documents", unit="texts", kept="embedded and cached") as s:
        s(3)
    with pytest.raises(KeyboardInterrupt), progress(12, "cells", unit="cells",
                                                   kept="done and stored") as cells:
        cells(4)
        with progress(600, "embedding queries", unit="texts", kept="embedded and cached") as q:
            q(512)
            raise KeyboardInterrupt
    assert interrupted_message() == (
        "interrupted: 3 of 3 texts embedded and cached, 4 of 12 cells done and stored, "
        "512 of 600 texts embedded and cached; run the same command again to resume")


def test_interrupt_in_a_step_that_keeps_nothing_says_so():
    with pytest.raises(KeyboardInterrupt), progress(6, "sweeping hnsw", unit="settings") as s:
        s(2)
        raise KeyboardInterrupt
    assert interrupted_message() == ("interrupted: sweeping hnsw stopped at 2 of 6 settings; "
                                     "nothing was written")
    progress_module.reset_interruption()
    assert interrupted_message() == "interrupted: nothing was written"


def test_keeping_declares_what_open_ended_work_keeps():
    with pytest.raises(KeyboardInterrupt), keeping("every label is stored in j.sqlite",
                                                   "run it again to go on"):
        raise KeyboardInterrupt
    assert interrupted_message() == ("interrupted: every label is stored in j.sqlite; "
                                     "run it again to go on")


def test_control_characters_in_a_step_name_are_shown_escaped(capsys):
    with progress(1, "evil\x1b[2Jname\n", unit="texts") as s:
        s(1)
    err = capsys.readouterr().err
    assert "\x1b" not in err and "evil\\u001b[2Jname" in err
