"""Markdown rendering makes every value inert: no HTML, no table breaks, no markup."""

from __future__ import annotations

from searchbench._util import md_table, md_text


def test_html_is_escaped():
    assert md_text('<img src=x onerror="alert(1)">') == \
        "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"


def test_pipes_and_newlines_cannot_break_a_table():
    table = md_table(["name", "x"], [["a|b\n| c | d |", "1"]], "lr")
    lines = table.splitlines()
    assert len(lines) == 3
    assert lines[2] == "| a\\|b \\| c \\| d \\| | 1 |"
    assert lines[1] == "|---|---:|"


def test_markup_characters_are_escaped():
    assert md_text("*bold* _it_ [link](u) `code` ~x~ back\\slash") == \
        "\\*bold\\* \\_it\\_ \\[link\\](u) \\`code\\` \\~x\\~ back\\\\slash"


def test_numbers_stay_readable():
    assert md_text(0.5) == "0.5"
    assert md_table(["m"], [["**0.5000**"]], escape=False).splitlines()[2] == "| **0.5000** |"


def test_unescaped_table_keeps_escaped_pipes_single() -> None:
    """md_text output in an escape=False table: its ``\\|`` stays one escaped pipe (a second
    backslash would escape the backslash and let the pipe split the row); a bare pipe is
    escaped."""
    row = md_table(["a", "b"], [[md_text("x|y"), "p|q"]], escape=False).splitlines()[2]
    assert row == r"| x\|y | p\|q |"
