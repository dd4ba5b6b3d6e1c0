"""``evalset convert`` never destroys what is there and never writes outside ``--to``.

A non-empty ``--to`` is refused unless ``--force`` (then replaced as a whole: nothing of
the old folder survives, nothing is mixed); the source set is never written into, even with
``--force``; a split name with a path in it is refused before anything is read or written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from searchbench.cli.main import main

DOCS = [{"id": "d1", "text": "Use sorted() to get a new list."},
        {"id": "d2", "text": "list.sort() sorts in place."}]
QUERIES = [{"id": "q1", "text": "how to sort a list"}, {"id": "q2", "text": "sort in place"}]
QRELS = [("q1", "d1", 2), ("q2", "d2", 1)]
EVIDENCE = [{"query_id": "q1", "doc_id": "d1", "grade": 2, "quote": "sorted()"}]


def write_set(root: Path, evidence: list[dict] = EVIDENCE) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (root / "qrels.tsv").write_text("".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS))
    if evidence:
        (root / "evidence.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evidence))
    return root


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the SHA-256 of its bytes (the whole tree)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def write_beir_folder(root: Path, gz: bool = False) -> Path:
    import gzip

    root.mkdir(parents=True)
    corpus = "".join(json.dumps({"_id": d, "text": f"text {d}"}) + "\n" for d in "abc")
    if gz:
        (root / "corpus.jsonl.gz").write_bytes(gzip.compress(corpus.encode()))
    else:
        (root / "corpus.jsonl").write_text(corpus)
    (root / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in ("q1", "q2", "q3")))
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ta\t1\n")
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq2\tb\t1\n")
    return root


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("out_format", ["native", "beir"])
def test_a_folder_holding_another_set_is_refused(tmp_path, capsys, out_format):
    source = write_set(tmp_path / "src", evidence=[])
    other = write_set(tmp_path / "other")  # another set, with evidence.jsonl
    before = snapshot(tmp_path)
    code, _, err = run(capsys, "evalset", "convert", str(source), "-o", str(other),
                       "--format", out_format)
    assert code == 1
    line = one_error_line(err)
    assert str(other) in line and "not empty" in line and "--force" in line
    assert snapshot(tmp_path) == before  # nothing changed, no temporary folder left


@pytest.mark.parametrize("out_format", ["native", "beir"])
def test_force_replaces_the_folder_as_a_whole(tmp_path, capsys, out_format):
    source = write_set(tmp_path / "src", evidence=[])
    fresh = tmp_path / "fresh"
    assert run(capsys, "evalset", "convert", str(source), "-o", str(fresh), "--format",
               out_format)[0] == 0
    other = write_set(tmp_path / "other")
    (other / "notes.txt").write_text("the user's own file")
    code, _, _ = run(capsys, "evalset", "convert", str(source), "-o", str(other),
                     "--format", out_format, "--force")
    assert code == 0
    assert snapshot(other).keys() == snapshot(fresh).keys()  # no old file survives
    for name, digest in snapshot(fresh).items():
        if name != "provenance.json":  # records its own path
            assert snapshot(other)[name] == digest, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "other", "src"]


def test_an_empty_folder_is_fine(tmp_path, capsys):
    source = write_set(tmp_path / "src")
    (tmp_path / "empty").mkdir()
    assert run(capsys, "evalset", "convert", str(source), "-o",
               str(tmp_path / "empty"))[0] == 0
    assert (tmp_path / "empty" / "corpus.jsonl").is_file()


@pytest.mark.parametrize("force", [[], ["--force"]])
@pytest.mark.parametrize("where", ["same", "inside", "parent"])
def test_the_source_is_never_written_into_or_replaced(tmp_path, capsys, force, where):
    source = write_beir_folder(tmp_path / "data" / "D")
    target = {"same": source, "inside": source / "native",
              "parent": tmp_path / "data"}[where]
    before = snapshot(tmp_path)
    code, _, err = run(capsys, "evalset", "convert", f"beir:{source}", "-o", str(target),
                       "--format", "beir", "--split", "test", *force)
    assert code == 1
    assert "source" in one_error_line(err)
    assert snapshot(tmp_path) == before  # other splits' queries and qrels untouched


def test_a_gzipped_beir_folder_does_not_gain_a_second_corpus(tmp_path, capsys):
    target = write_beir_folder(tmp_path / "gz", gz=True)
    source = write_set(tmp_path / "src")
    assert run(capsys, "evalset", "convert", str(source), "-o", str(target), "--format",
               "beir")[0] == 1
    assert run(capsys, "evalset", "convert", str(source), "-o", str(target), "--format",
               "beir", "--force")[0] == 0
    assert sorted(p.name for p in target.glob("corpus*")) == ["corpus.jsonl"]
    code, out, _ = run(capsys, "evalset", "stats", f"beir:{target}")
    assert code == 0 and "documents" in out


@pytest.mark.parametrize("split", ["../../x", "../x", "..", ".", "a/b", "/tmp/abs",
                                   "a\\b", "x\ny", ""])
@pytest.mark.parametrize("command", ["convert", "stats", "check"])
def test_a_split_with_a_path_in_it_is_refused(tmp_path, capsys, monkeypatch, split, command):
    source = write_beir_folder(tmp_path / "work" / "D")
    monkeypatch.chdir(tmp_path / "work")
    before = snapshot(tmp_path)
    extra = ["-o", str(tmp_path / "work" / "out"), "--format", "beir"] \
        if command == "convert" else []
    code, _, err = run(capsys, "evalset", command, f"beir:{source}", "--split", split, *extra)
    assert code == 1
    assert "invalid split" in one_error_line(err)
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "x.tsv").exists() and not (tmp_path / "work" / "out").exists()


def test_a_file_as_target_is_refused(tmp_path, capsys):
    source = write_set(tmp_path / "src")
    (tmp_path / "file").write_text("mine")
    code, _, err = run(capsys, "evalset", "convert", str(source), "-o",
                       str(tmp_path / "file"), "--force")
    assert code == 1 and "not a folder" in one_error_line(err)
    assert (tmp_path / "file").read_text() == "mine"


def test_library_writers_refuse_too(tmp_path):
    from searchbench.collections.registry import load_evalset
    from searchbench.data.beir import write_beir
    from searchbench.errors import ConfigError, OutputError

    es = load_evalset(write_set(tmp_path / "src"))
    with pytest.raises(OutputError, match="source"):
        es.write(tmp_path / "src", overwrite=True)
    with pytest.raises(ConfigError, match="invalid split"):
        write_beir(es, tmp_path / "b", split="../../escape")
    with pytest.raises(ConfigError, match="invalid split"):
        load_evalset(f"beir:{tmp_path / 'src'}", split="../qrels")
    assert not (tmp_path / "escape.tsv").exists()
