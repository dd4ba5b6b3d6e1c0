"""TREC SGML documents and topics: variants, streaming across blocks, round trips, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import searchbench.data.trec_text as tt
from searchbench.data.texts import Corpus, Document, Queries, Query
from searchbench.errors import DataFormatError

DOCS = """<DOC>
<DOCNO> MED-1 </DOCNO>
<body>
first document   \r
text .
</body>
</DOC>
<doc>
<docno>X2</docno>
<HEADLINE>A headline</HEADLINE>
<TEXT>
body two
</TEXT>
</doc>
"""

TOPICS_CLASSIC = """<top>
<num> Number: 301
<title> Topic: International Organized Crime

<desc> Description:
Identify organizations that participate.

<narr> Narrative:
A relevant document must ...
</top>
"""

TOPICS_CLOSED = "<top>\n<num>1</num><title>\nMEASUREMENT OF CONSTANTS\n</title>\n</top>\n"
TOPICS_DOC = "<DOC>\n<DOCNO> 7 </DOCNO>\n\n\n What articles exist?\n\n</DOC>\n"


def test_docs_variants(tmp_path: Path) -> None:
    path = tmp_path / "docs.trec"
    path.write_text(DOCS)
    corpus = tt.read_trec_docs(path)
    assert corpus.ids == ["MED-1", "X2"]
    assert corpus["MED-1"].text == "first document\ntext ."
    assert corpus["X2"].title == "A headline" and corpus["X2"].text == "body two"


def test_docs_stream_across_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tt, "BLOCK", 7)
    path = tmp_path / "docs.trec"
    path.write_text(DOCS * 1 + DOCS.replace("MED-1", "M3").replace("X2", "X4"))
    where = [w for w, _ in tt.iter_trec_docs(path)]
    assert [w.rsplit(":", 1)[1] for w in where] == ["1", "8", "15", "22"]


def test_docs_round_trip(tmp_path: Path) -> None:
    corpus = Corpus([Document("a", "text one\nline two", "T1"), Document("b", "text two")])
    tt.write_trec_docs(tmp_path / "d.trec", corpus)
    back = tt.read_trec_docs(tmp_path / "d.trec")
    assert [(d.id, d.title, d.text) for d in back] == [(d.id, d.title, d.text) for d in corpus]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<DOC>\n<TEXT>x</TEXT>\n</DOC>\n", r"d.trec:1: <DOC> without <DOCNO>"),
        ("<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\njunk\n<DOC>\n<DOCNO>b</DOCNO>\n</DOC>\n",
         r"d.trec:3: found 'junk' outside"),
        ("<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n<DOC>\n<DOCNO>b</DOCNO>\n", r"is not closed"),
        ("<DOC>\n<DOCNO>a</DOCNO>\n<DOC>\n<DOCNO>b</DOCNO>\n</DOC>\n",
         r"d.trec:3: found <DOC> inside an element that is not closed"),
    ],
)
def test_docs_bad_input(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "d.trec"
    path.write_text(text)
    with pytest.raises(DataFormatError, match=needle):
        tt.read_trec_docs(path)


def test_topics_classic_fields(tmp_path: Path) -> None:
    path = tmp_path / "topics.txt"
    path.write_text(TOPICS_CLASSIC)
    q = tt.read_trec_topics(path)
    assert q.ids == ["301"] and q["301"].text == "International Organized Crime"
    assert q["301"].metadata["desc"] == "Identify organizations that participate."
    both = tt.read_trec_topics(path, fields=("title", "desc"))
    assert both["301"].text == ("International Organized Crime\n"
                                "Identify organizations that participate.")


def test_topics_closed_tags_and_doc_form(tmp_path: Path) -> None:
    (tmp_path / "a").write_text(TOPICS_CLOSED)
    (tmp_path / "b").write_text(TOPICS_DOC)
    assert tt.read_trec_topics(tmp_path / "a")["1"].text == "MEASUREMENT OF CONSTANTS"
    assert tt.read_trec_topics(tmp_path / "b")["7"].text == "What articles exist?"


def test_topics_round_trip(tmp_path: Path) -> None:
    queries = Queries([Query("1", "first topic", metadata={"desc": "a longer description"}),
                       Query("2", "second")])
    tt.write_trec_topics(tmp_path / "t.txt", queries)
    back = tt.read_trec_topics(tmp_path / "t.txt")
    assert [(q.id, q.text) for q in back] == [("1", "first topic"), ("2", "second")]
    assert back["1"].metadata["desc"] == "a longer description"


def test_topics_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("<top>\n<title> no number\n</top>\n")
    with pytest.raises(DataFormatError, match=r"t.txt:1: <top> without <num>"):
        tt.read_trec_topics(path)
    with pytest.raises(DataFormatError, match="expected some of title, desc, narr"):
        tt.read_trec_topics(path, fields=("body",))


def test_topics_from_a_file_object(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(TOPICS_DOC + TOPICS_DOC.replace(" 7 ", " 8 "))
    with open(path, "rb") as fh:
        assert tt.read_trec_topics(fh).ids == ["7", "8"]
    with open(path, encoding="utf-8") as fh:
        assert tt.read_trec_docs(fh).ids == ["7", "8"]


def test_tag_stripping_keeps_comparisons_in_the_text(tmp_path: Path) -> None:
    path = tmp_path / "docs.trec"
    path.write_text("<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>\nif x<y and y>z then x<z\n"
                    "<F P=105>note</F> <F P='1' Q=\"2\">two</F> a<br/>b 1 < 2 > 0\n"
                    "</TEXT>\n</DOC>\n")
    doc = tt.read_trec_docs(path)["a"]
    assert doc.text == "if x<y and y>z then x<z\nnote two ab 1 < 2 > 0"
    corpus = Corpus([Document("b", "when a<b and c>d hold")])
    tt.write_trec_docs(tmp_path / "d.trec", corpus)
    assert tt.read_trec_docs(tmp_path / "d.trec")["b"].text == "when a<b and c>d hold"
