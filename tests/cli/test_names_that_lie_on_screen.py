"""Names that lie on screen: one rule (searchbench._util.escape) for every name and id shown
to a person. Names a person chooses (annotators, query ids) are refused when they hold a
hidden character; names that are not ours to refuse (file names) become ids in NFC with
hidden characters percent-encoded and are shown as escapes; two names that print alike
are one id, or an error naming both; no name forges an output line."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from searchbench._util import check_name, is_hidden, one_line, visible_name, visible_text
from searchbench.cli.main import main
from searchbench.errors import DataFormatError
from searchbench.judging.files import doc_id_for
from searchbench.judging.store import JudgmentStore

# Each hides something: bidi overrides and isolates, line/paragraph separators, zero-width
# and other invisible characters, controls, a non-breaking space, a tag character.
HIDDEN = ["ali\u202ece", "al\u2066ice\u2069", "ali\u2028ce", "ali\u2029ce", "al\u200bice",
          "al\u200dice", "ali\u2060ce", "\ufeffalice", "al\u00adice", "ali\u3164ce",
          "alic\u115fe", "ali\x1b[31mce", "ali\nce", "ali\rce", "ali\tce", "ali\u0085ce",
          "ali\u00a0ce", "alice\U000e0041", "ali\u180ece", "al\u034fice", "\u2800"]


@pytest.mark.parametrize("name", HIDDEN)
def test_names_that_lie_on_screen_are_refused_as_annotators(name: str, tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="do not show as themselves"):
        check_name(name, "annotator name")
    with JudgmentStore(tmp_path) as store, pytest.raises(DataFormatError):
        store.add_annotator(name)
    shown = visible_name(name)
    assert all(not is_hidden(c) for c in shown), shown
    line = one_line(f"x {name} y")  # a text on one line: tabs and spaces may stay
    assert len(line.splitlines()) == 1 and all(not is_hidden(c) or c in " \t\u00a0"
                                               for c in line), line


def test_names_that_lie_on_screen_serve_refuses_with_one_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"id": "d1", "text": "x"}\n')
    (folder / "queries.jsonl").write_text('{"id": "q1", "text": "x"}\n')
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"query_id": "q1", "doc_id": "d1", "n_runs": 1, "best_rank": 1}\n')
    code = main(["judge", "serve", str(folder), "--pool", str(pool), "--annotator",
                 "mal\u202elory\u2028error: forged"])
    err = capsys.readouterr().err
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: annotator name"), err
    assert "\u202e" not in err and "\u2028" not in err and "\\u202e" in err
    with JudgmentStore(folder) as store:  # nothing registered
        assert store.annotators() == {}


def test_names_that_lie_on_screen_annotators_are_one_name_in_nfc(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "José")
    with JudgmentStore(tmp_path) as store:
        token = store.add_annotator(nfd)
        assert store.annotators() == {"José": "human"}  # stored composed
        assert store.annotator(token) == "José"
        assert unicodedata.is_normalized("NFC", next(iter(store.annotators())))


def test_names_that_lie_on_screen_visible_text_keeps_lines_escapes_the_rest() -> None:
    text = "row 1\trow\n2 \u202eabc\u2028def\u200b \x1b \ud800 é\u00a0x"
    assert visible_text(text) == ("row 1\trow\n2 \\u202eabc\\u2028def\\u200b \\u001b \\ud800 "
                                  "é\u00a0x")
    assert visible_name("a\nb\u202e") == "a\\u000ab\\u202e"
    assert one_line("first\nerror: forged\u2028second\rthird") == (
        "first error: forged second third")


@pytest.mark.parametrize("name", ["a\nerror: forged.md", "b\u2028error: forged.md",
                                  "c\rerror: forged.md", "d\u202edm.exe.md"])
def test_names_that_lie_on_screen_file_names_cannot_forge_output_lines(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n")
    (docs / name).write_bytes(b"\xff\xfe not UTF-8")  # skipped: its name is printed
    (docs / ("ok " + name)).write_text("# fine\n")  # kept: its id is printed
    assert main(["evalset", "init", str(tmp_path / "set"), "--docs", str(docs)]) == 0
    out = capsys.readouterr()
    for line in (out.out + out.err).splitlines():
        assert not line.startswith("error:"), line
        assert all(not is_hidden(c) for c in line if c not in " "), line
    assert sum("skipped" in line for line in out.out.splitlines()) == 1
    ids = [json.loads(x)["id"] for x in (tmp_path / "set" / "corpus.jsonl").read_text()
           .split("\n") if x]
    assert sorted(ids) == sorted(["good.md", doc_id_for("ok " + name)])
    assert all(not is_hidden(c) and not c.isspace() for i in ids for c in i)


@pytest.mark.parametrize("word", ["é", "Å", "ñ", "ệ"])
def test_names_that_lie_on_screen_nfc_and_nfd_files_are_one_id_or_an_error(
        word: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nfc, nfd = unicodedata.normalize("NFC", word), unicodedata.normalize("NFD", word)
    assert nfc != nfd
    assert doc_id_for(f"{nfd}.md") == doc_id_for(f"{nfc}.md") == f"{nfc}.md"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / f"{nfd}.md").write_text("# decomposed\n")
    assert main(["evalset", "init", str(tmp_path / "one"), "--docs", str(docs)]) == 0
    capsys.readouterr()
    ids = [json.loads(x)["id"] for x in (tmp_path / "one" / "corpus.jsonl").read_text()
           .split("\n") if x]
    assert ids == [f"{nfc}.md"]
    (docs / f"{nfc}.md").write_text("# composed\n")  # two files that print alike
    assert main(["evalset", "init", str(tmp_path / "two"), "--docs", str(docs)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert ascii(f"{nfc}.md") in err[0] and ascii(f"{nfd}.md") in err[0]
    assert "NFC" in err[0] and "rename one" in err[0]
    assert not (tmp_path / "two" / "corpus.jsonl").exists()


@pytest.mark.parametrize("qid", ["q\u202e1", "q\u200b2", "q\u20283"])
def test_names_that_lie_on_screen_query_ids_chosen_by_a_person_are_refused(
        qid: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n")
    folder = tmp_path / "set"
    assert main(["evalset", "init", str(folder), "--docs", str(docs)]) == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": qid, "text": "what is a"}) + "\n")
    capsys.readouterr()
    assert main(["evalset", "add-queries", str(folder), str(queries)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "query id" in err[0] and "do not show as themselves" in err[0]
    nfd = unicodedata.normalize("NFD", "qé")
    queries.write_text(json.dumps({"id": nfd, "text": "what is é"}) + "\n")
    assert main(["evalset", "add-queries", str(folder), str(queries)]) == 0
    stored = [json.loads(x)["_id" if "_id" in x else "id"]
              for x in (folder / "queries.jsonl").read_text().splitlines()]
    assert stored == ["qé"] and unicodedata.is_normalized("NFC", stored[0])


@pytest.mark.parametrize("name", ["bm25\u202e.trec", "a\u2028error: forged.trec",
                                  "z\u200bw.trec", "\u3164.trec", "nb\u00a0sp.trec"])
def test_names_that_lie_on_screen_run_names_in_tables_are_escaped(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    plain, odd = tmp_path / "plain.trec", tmp_path / name
    for run in (plain, odd):
        run.write_text("q1 Q0 d1 1 1.0 x\nq2 Q0 d3 1 1.0 x\n")
    for fmt in ("table", "tsv"):
        assert main(["eval", str(qrels), str(plain), str(odd), "-m", "P@1", "-f", fmt]) == 0
        out = capsys.readouterr().out
        assert visible_name(name) in out
        assert all(not is_hidden(c) for line in out.splitlines() for c in line
                   if c not in " \t"), out


@pytest.mark.parametrize("name", ["x\nerror: forged", "y\u2028error: forged",
                                  "z\u0085error: forged", "w\rerror: forged"])
def test_names_that_lie_on_screen_cannot_forge_error_lines(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / name).write_text("a file, not a folder")
    assert main(["evalset", "init", str(tmp_path / "set"), "--docs",
                 str(tmp_path / name)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("error: --docs "), err
    assert "not a folder" in err and all(not is_hidden(c) for c in err.rstrip("\n")), err


def test_names_that_lie_on_screen_an_nfd_name_finds_its_annotator_at_export(
        tmp_path: Path) -> None:
    from searchbench.judging import Judgment, adjudicate

    nfd = unicodedata.normalize("NFD", "José")
    with JudgmentStore(tmp_path) as store:
        store.record(Judgment("q1", "d1", nfd, 2))  # stored as NFC
        labels = store.judgments()
    assert [j.annotator for j in labels] == ["José"]
    items, _ = adjudicate(labels, f"annotator:{nfd}")
    assert [a.rule for a in items] == ["annotator:José"]
