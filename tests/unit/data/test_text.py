"""The whitespace normaliser: its fast "already clean" check never skips needed work."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from searchbench.data._text import is_clean, normalise


def reference(block: bytes) -> bytes:
    """ARCHITECTURE §2.4 line by line: tabs/CR are spaces, fields split on runs of spaces,
    ``#`` comment lines emptied (kept as lines, so line numbers stay)."""
    lines = block.replace(b"\t", b" ").replace(b"\r", b" ").split(b"\n")
    return b"\n".join(b"" if ln.lstrip(b" ").startswith(b"#")
                       else b" ".join(f for f in ln.split(b" ") if f) for ln in lines)


blocks = st.lists(st.sampled_from([b"q1", b"d", b"7", b" ", b"  ", b"\t", b"\r", b"\n", b"#"]),
                  max_size=30).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(blocks)
def test_normalise_matches_the_line_by_line_rule(block: bytes) -> None:
    assert normalise(block) == reference(block)


@settings(max_examples=500, deadline=None)
@given(blocks)
def test_a_clean_block_is_its_own_normal_form(block: bytes) -> None:
    for step in (1, 3, 1 << 20):  # small windows: bad pairs straddle window edges
        assert is_clean(block, step=step) == (reference(block) == block), step


def test_clean_and_unclean_examples() -> None:
    assert is_clean(b"q1 Q0 d1 1 2.5 run\nq1 Q0 d2 2 1.5 run\n\n")
    assert is_clean(b"")
    for bad in [b"q1  Q0", b" q1 Q0", b"q1 Q0 \n", b"q1\tQ0", b"q1 Q0\r\n", b"# c\nq1",
                b"q1\n# c", b"q1\n q2", b"q1 "]:
        assert not is_clean(bad), bad
        assert not re.search(rb"  |^ | $|\t|\r|^#", normalise(bad), re.M), bad
