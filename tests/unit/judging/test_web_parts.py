"""Parts of the judging app that need no server: highlighting keeps the text exact, the
address rules of ``judge serve``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from searchbench.errors import ConfigError
from searchbench.judging.web.context import highlight, query_terms
from searchbench.judging.web.server import ServeOptions, check_address, is_loopback


@given(st.text(alphabet=st.sampled_from("ab cC\r\n<>&é.s"), max_size=60),
       st.text(alphabet=st.sampled_from("ab cs"), max_size=12))
def test_segments_give_the_text_back_exactly_with_their_offsets(text: str, query: str) -> None:
    segments = highlight(text, query)
    assert "".join(s.text for s in segments) == text
    for s in segments:
        assert text[s.start:s.start + len(s.text)] == s.text
        assert ("\r" in s.text) == (s.kind == "br")


@given(st.text(alphabet=st.sampled_from("ab c\r\n."), max_size=40),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=3))
def test_evidence_spans_split_segments_without_changing_the_text(text: str, spans) -> None:
    segments = highlight(text, "ab", spans)
    assert "".join(s.text for s in segments) == text
    for s in segments:
        assert text[s.start:s.start + len(s.text)] == s.text
        inside = any(a <= s.start and s.start + len(s.text) <= b for a, b in spans if a < b)
        assert s.evidence == (inside and len(s.text) > 0)


def test_query_terms_and_their_forms_are_highlighted_in_any_case() -> None:
    text = "Cats sleep; a category of catsup. The CAT naps."
    marks = [s.text for s in highlight(text, "where do the cats sleep?") if s.kind == "mark"]
    assert marks == ["Cats", "sleep", "catsup", "CAT"]
    assert query_terms("What is THE best cat food, the best?") == ["best", "cat", "food"]
    assert all(s.kind == "text" for s in highlight("a the of", "the of a"))


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("192.168.1.4", False), ("example.org", False),
])
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_remote_needs_allow_remote_and_warns_loudly_without_tls(capsys, tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"not a loopback address.*--allow-remote"):
        check_address(ServeOptions(tmp_path, host="0.0.0.0"))
    check_address(ServeOptions(tmp_path, host="0.0.0.0", allow_remote=True))
    assert "WITHOUT TLS" in capsys.readouterr().err
    check_address(ServeOptions(tmp_path, host="0.0.0.0", allow_remote=True,
                               certfile=tmp_path / "c.pem", keyfile=tmp_path / "k.pem"))
    assert capsys.readouterr().err == ""
    with pytest.raises(ConfigError, match="go together"):
        check_address(ServeOptions(tmp_path, certfile=tmp_path / "c.pem"))


def test_a_set_being_built_has_no_qrels_yet_but_broken_qrels_are_an_error(tmp_path) -> None:
    from searchbench.errors import DataFormatError
    from searchbench.judging.web.context import load_texts

    (tmp_path / "corpus.jsonl").write_text('{"id": "d1", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"id": "q1", "text": "x"}\n')
    corpus, queries, qrels = load_texts(tmp_path)
    assert (len(corpus), len(queries), qrels) == (1, 1, None)
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n")   # evalset init
    assert load_texts(tmp_path)[2] is None
    (tmp_path / "qrels.tsv").write_text("q1\t0\td1\n")
    with pytest.raises(DataFormatError):
        load_texts(tmp_path)
