"""``evalset init`` and ``add-queries``: documents from files with stable path ids, titles,
visible HTML text, PDF through the extra, re-runs that add/update/report removed files,
symlinks leading outside refused, queries with stable non-colliding ids."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from searchbench.data import read_corpus_jsonl, read_native, read_queries_jsonl
from searchbench.errors import ConfigError, DataFormatError
from searchbench.judging import add_queries, init_evalset
from searchbench.judging.files import doc_id_for


def _pdf(text: str, title: str) -> bytes:
    """A one-page PDF written by hand (Helvetica, one text line, an /Info title)."""
    content = f"BT /F1 12 Tf 10 50 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 100] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "install.md").write_text(
        "Intro line\n\n## Setup\n\n# Installing the tool\n\nRun `pip install x`.\n")
    (root / "notes.txt").write_text("plain notes\nsecond line\n")
    (root / "guide" / "page one.html").write_text(
        "<html><head><title>Page &amp; One</title><style>p {color: red}</style></head>"
        "<body><h1>Heading</h1><p>Hello <b>bold</b> world<script>alert('x')</script></p>"
        "<ul><li>first</li><li>second</li></ul></body></html>")
    (root / ".hidden.md").write_text("# secret\n")
    (root / "image.png").write_bytes(b"\x89PNG")
    return root


def _corpus(folder: Path) -> dict[str, dict]:
    lines = (folder / "corpus.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_init_makes_a_corpus_with_path_ids_titles_and_visible_text(tmp_path: Path,
                                                                    docs: Path) -> None:
    report = init_evalset(tmp_path / "set", docs)
    corpus = _corpus(tmp_path / "set")
    assert sorted(corpus) == ["guide/install.md", "guide/page%20one.html", "notes.txt"]
    md = corpus["guide/install.md"]
    assert md["title"] == "Installing the tool"  # the first level-1 heading
    assert md["text"] == (docs / "guide" / "install.md").read_text()  # Markdown kept as is
    html = corpus["guide/page%20one.html"]
    assert html["title"] == "Page & One"
    assert html["text"] == "Heading\nHello bold world\nfirst\nsecond"  # no script, no style
    assert corpus["notes.txt"]["title"] == "notes"
    assert md["metadata"]["path"] == "guide/install.md"
    assert report.added == sorted(corpus, key=lambda i: corpus[i]["metadata"]["path"])
    assert report.skipped == []  # .png and hidden files are not candidates by default
    assert (tmp_path / "set" / "queries.jsonl").read_text() == ""
    es = read_native(tmp_path / "set")  # loadable before any judgment
    assert len(es.corpus) == 3 and len(es.qrels) == 0


def test_glob_selects_and_reports_unknown_kinds(tmp_path: Path, docs: Path) -> None:
    report = init_evalset(tmp_path / "set", docs, glob="**/*")
    assert ("image.png", report.skipped[0][1]) == report.skipped[0]
    init_evalset(tmp_path / "md", docs, glob="**/*.md")
    assert list(_corpus(tmp_path / "md")) == ["guide/install.md"]
    init_evalset(tmp_path / "top", docs, glob="*.txt")
    assert list(_corpus(tmp_path / "top")) == ["notes.txt"]


def test_rerun_adds_updates_and_reports_removed_without_renumbering(tmp_path: Path,
                                                                   docs: Path) -> None:
    target = tmp_path / "set"
    init_evalset(target, docs)
    (target / "queries.jsonl").write_text('{"id": "q1", "text": "how to install"}\n')
    (target / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tnotes.txt\t1\n")
    before = list(_corpus(target))
    (docs / "notes.txt").write_text("changed notes\n")
    (docs / "guide" / "install.md").unlink()
    (docs / "a-new.md").write_text("# New\n")
    report = init_evalset(target, docs)
    assert (report.added, report.updated, report.removed, report.unchanged) == (
        ["a-new.md"], ["notes.txt"], ["guide/install.md"], 1)
    corpus = _corpus(target)
    assert list(corpus) == [*before, "a-new.md"]  # old order kept, removed kept, new appended
    assert corpus["notes.txt"]["text"] == "changed notes\n"
    assert "--prune" in report.to_text()
    assert "q1" in (target / "queries.jsonl").read_text()  # queries and qrels untouched
    assert "notes.txt" in (target / "qrels.tsv").read_text()
    pruned = init_evalset(target, docs, prune=True)
    assert "guide/install.md" not in _corpus(target) and pruned.removed == ["guide/install.md"]


def test_symlink_leading_outside_is_refused_inside_is_kept(tmp_path: Path, docs: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("do not index me")
    (docs / "leak.txt").symlink_to(outside)
    (docs / "alias.txt").symlink_to(docs / "notes.txt")
    (docs / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    report = init_evalset(tmp_path / "set", docs)
    corpus = _corpus(tmp_path / "set")
    assert "leak.txt" not in corpus and "alias.txt" in corpus
    assert not any(i.startswith("linked-dir") for i in corpus)  # folder links not followed
    assert report.skipped == [("leak.txt", f"a symbolic link leading outside {docs} (refused)")]
    assert "do not index me" not in (tmp_path / "set" / "corpus.jsonl").read_text()


def test_pdf_through_the_extra_and_skipped_without_it(tmp_path: Path, docs: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pypdf")
    (docs / "paper.pdf").write_bytes(_pdf("Hello PDF world", "A Paper"))
    init_evalset(tmp_path / "with", docs)
    paper = _corpus(tmp_path / "with")["paper.pdf"]
    assert (paper["title"], paper["text"]) == ("A Paper", "Hello PDF world")
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as if the extra were not installed
    report = init_evalset(tmp_path / "without", docs)
    assert "paper.pdf" not in _corpus(tmp_path / "without")
    assert report.skipped == [("paper.pdf", "PDF text needs the pdf extra: pip install "
                                            "'searchbench[pdf]'")]


def test_undecodable_file_is_skipped_with_a_reason(tmp_path: Path, docs: Path) -> None:
    (docs / "latin1.txt").write_bytes("café".encode("latin-1"))
    report = init_evalset(tmp_path / "set", docs)
    assert report.skipped[0][0] == "latin1.txt" and "UTF-8" in report.skipped[0][1]


def test_bad_docs_folder(tmp_path: Path, docs: Path) -> None:
    with pytest.raises(ConfigError, match="not a folder"):
        init_evalset(tmp_path / "set", tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFormatError, match="no document found"):
        init_evalset(tmp_path / "set", tmp_path / "empty")
    with pytest.raises(ConfigError, match="cannot be the docs folder"):
        init_evalset(docs, docs)


def test_doc_ids_encode_white_space_and_percent() -> None:
    assert doc_id_for("a b/c\td%.md") == "a%20b/c%09d%25.md"
    assert doc_id_for("été.md") == "été.md"
    assert doc_id_for("\x1b[31mred\u202e.md") == "%1B[31mred%E2%80%AE.md"  # no escapes


def test_add_queries_lines_and_jsonl_stable_ids_and_duplicates(tmp_path: Path,
                                                              docs: Path) -> None:
    target = tmp_path / "set"
    init_evalset(target, docs)
    lines = tmp_path / "q.txt"
    lines.write_text("How do I install?\n\nwhat is X\nHOW do  I install\n")
    first = add_queries(target, lines, source="real")
    assert first.added == ["q1", "q2"] and first.duplicates == [f"{lines}:4 (= q1)"]
    jl = tmp_path / "q.jsonl"
    jl.write_text('{"id": "q3", "text": "given id"}\n{"text": "what is X"}\n'
                  '{"text": "from logs", "source": "logs", "team": "ops"}\n')
    second = add_queries(target, jl, source="real")
    assert second.added == ["q3", "q4"] and len(second.duplicates) == 1
    queries = {q.id: q for q in read_queries_jsonl(target / "queries.jsonl")}
    assert [q.source for q in queries.values()] == ["human", "human", "human", "logs"]
    assert queries["q4"].metadata == {"team": "ops"}
    again = add_queries(target, lines)
    assert again.added == [] and again.total == 4  # re-running adds nothing


def test_add_queries_refuses_an_id_in_use_and_a_bad_source(tmp_path: Path, docs: Path) -> None:
    target = tmp_path / "set"
    init_evalset(target, docs)
    (tmp_path / "a.txt").write_text("first question\n")
    add_queries(target, tmp_path / "a.txt")
    clash = tmp_path / "b.jsonl"
    clash.write_text('{"id": "q1", "text": "another question"}\n')
    with pytest.raises(DataFormatError, match=r"b.jsonl:1: id 'q1' is already used"):
        add_queries(target, clash)
    with pytest.raises(ConfigError, match=r"expected real, human"):
        add_queries(target, tmp_path / "a.txt", source="robots")
    with pytest.raises(DataFormatError, match=r"no corpus\.jsonl"):
        add_queries(tmp_path, tmp_path / "a.txt")
    assert len(read_corpus_jsonl(target / "corpus.jsonl")) == 3
