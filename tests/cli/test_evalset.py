"""``searchbench evalset check|convert|stats`` and ``datasets list``; one broken set per error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbench.cli.main import main

DOCS = [{"id": "d1", "title": "Sorting", "text": "Use sorted() to get a new list."},
        {"id": "d2", "text": "list.sort() sorts in place and returns None."}]
QUERIES = [{"id": "q1", "text": "how to sort a list", "source": "human"},
           {"id": "q2", "text": "why does sort return None", "source": "curated",
            "verified": True}]
QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d2", 1), ("q2", "d1", 0)]
EVIDENCE = [{"query_id": "q1", "doc_id": "d1", "grade": 2, "quote": "sorted()"}]


def write_set(root: Path, docs=DOCS, queries=QUERIES, qrels=QRELS, evidence=EVIDENCE) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels.tsv").write_text("".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels))
    (root / "evidence.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evidence))
    return root


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_valid_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evalset", "check", str(write_set(tmp_path / "s")))
    assert code == 0
    assert "s: 2 documents, 2 queries (2 judged), 4 judgments, 1 evidence quotes" in out
    assert "queries: real 100%, synthetic 0%, verified 50% (curated 1, human 1)" in out
    assert "warning [small-set]: only 2 judged queries" in out
    assert "warning [partial-evidence]: 1 queries have evidence quotes" in out
    assert out.rstrip().endswith("OK: 0 error(s), 2 warning(s)")


BROKEN = {
    "doc-not-in-corpus": dict(qrels=[*QRELS, ("q1", "ghost", 1)]),
    "unknown-query": dict(qrels=[*QRELS, ("q9", "d1", 1)]),
    "query-without-judgments": dict(queries=[*QUERIES, {"id": "q3", "text": "unjudged"}]),
    "duplicate-id": dict(docs=[*DOCS, {"id": "d1", "text": "again"}]),
    "duplicate-judgment": dict(qrels=[*QRELS, ("q1", "d1", 1)]),
    "empty-text": dict(queries=[QUERIES[0], {"id": "q2", "text": "  "}]),
    "quote-not-found": dict(evidence=[*EVIDENCE, {"query_id": "q2", "doc_id": "d2",
                                                  "grade": 1, "quote": "no such words"}]),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_check_reports_each_error_class(kind: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_set(tmp_path / "broken", **BROKEN[kind])
    code, out, err = run(capsys, "evalset", "check", str(folder))
    assert code == 1, out + err
    errors = [line for line in out.splitlines() if line.startswith("error [")]
    assert [line.split("]")[0] for line in errors] == [f"error [{kind}"], out
    assert "FAILED: 1 error(s)" in out and "Traceback" not in err


def test_check_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_set(tmp_path / "b", **BROKEN["doc-not-in-corpus"])
    code, out, _ = run(capsys, "evalset", "check", str(folder), "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    assert report["errors"][0]["kind"] == "doc-not-in-corpus"
    assert "q1/ghost" in report["errors"][0]["message"]


def test_warnings_synthetic_and_one_relevant(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    queries = [{**q, "source": "synthetic", "generator": "m"} for q in QUERIES]
    folder = write_set(tmp_path / "w", queries=queries, qrels=[("q1", "d1", 1), ("q2", "d2", 1)])
    code, out, _ = run(capsys, "evalset", "check", str(folder))
    assert code == 0
    assert "warning [all-synthetic]" in out and "warning [one-relevant]" in out
    assert "queries: real 0%, synthetic 100%" in out


def test_unreadable_set_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_set(tmp_path / "bad")
    (folder / "corpus.jsonl").write_text('{"id": "d1", "text": \n')
    code, out, err = run(capsys, "evalset", "check", str(folder))
    assert code == 1 and out == ""
    assert err.startswith("error: ") and "corpus.jsonl:1: invalid JSON" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "evalset", "stats", "nosuch:thing")
    assert code == 1 and "unknown evaluation set 'nosuch:thing'" in err


def test_convert_native_and_beir_round_trip(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    src = write_set(tmp_path / "src")
    code, out, _ = run(capsys, "evalset", "convert", str(src), "-o", str(tmp_path / "b"),
                       "--format", "beir")
    assert code == 0 and "2 documents, 2 queries, 4 judgments" in out
    assert (tmp_path / "b" / "qrels" / "test.tsv").is_file()
    code, out, _ = run(capsys, "evalset", "convert", f"beir:{tmp_path / 'b'}", "-o",
                       str(tmp_path / "n"), "--compress")
    assert code == 0 and (tmp_path / "n" / "corpus.jsonl.gz").is_file()
    hashes = []
    for spec in (str(src), f"beir:{tmp_path / 'b'}", str(tmp_path / "n")):
        _, out, _ = run(capsys, "evalset", "stats", spec, "--json")
        hashes.append(json.loads(out)["content_hash"])
    # evidence travels through BEIR in the side file evidence.jsonl: all three agree
    assert hashes[0] == hashes[1] == hashes[2]
    assert (tmp_path / "b" / "evidence.jsonl").is_file()


def test_stats_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evalset", "stats", str(write_set(tmp_path / "s")))
    assert code == 0
    assert "grades                   0: 1, 1: 2, 2: 1" in out
    assert "judged docs / query      min 2  median 2  mean 2.0  p90 2  max 2" in out


@pytest.mark.data
def test_stats_and_check_on_real_collections(shared_data: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evalset", "stats", f"cranfield:{shared_data / 'cranfield'}")
    assert code == 0 and "documents                1400" in out
    assert "grades                   1: 363, 2: 734, 3: 387, 4: 353" in out
    code, out, _ = run(capsys, "evalset", "check", f"cisi:{shared_data / 'cisi'}")
    assert code == 0 and "warning [query-without-judgments]: 36 of 112" in out
    code, out, _ = run(capsys, "evalset", "check", f"beir:{shared_data / 'beir/arguana'}")
    assert code == 1 and "error [doc-not-in-corpus]: 5 judgments" in out


def test_datasets_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "datasets", "list")
    assert code == 0
    specs = [line.split()[0] for line in out.splitlines()]
    assert {"pyref", "beir:DIR", "cranfield:DIR", "vaswani:DIR",
            "beir-download:scifact"} <= set(specs)
    code, out, _ = run(capsys, "datasets", "list", "--json")
    assert any(r["spec"] == "beir-download:nfcorpus" for r in json.loads(out)["datasets"])


@pytest.mark.data
def test_convert_classic_keeps_its_exclusions(shared_data: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evalset", "convert", f"cisi:{shared_data / 'cisi'}", "-o",
                       str(tmp_path / "cisi"))
    assert code == 0 and "warning: cisi: 36 of 112 queries" in err
    code, out, _ = run(capsys, "evalset", "check", str(tmp_path / "cisi"))
    assert code == 0 and "warning [query-without-judgments]: 36 of 112" in out
    assert "content hash: sha256:05616a7439c75d98" in out  # same content as read from CISI.*


def test_evidence_consistency_warnings(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    evidence = [{"query_id": "q1", "doc_id": "d1", "grade": 3, "quote": "sorted()"},
                {"query_id": "q2", "doc_id": "d2", "grade": 1, "quote": "in place"},
                {"query_id": "q2", "doc_id": "d1", "grade": 1, "quote": "new list"}]
    folder = write_set(tmp_path / "e", qrels=[("q1", "d1", 2), ("q2", "d1", 1)],
                       evidence=evidence)
    code, out, _ = run(capsys, "evalset", "check", str(folder))
    assert code == 0
    assert "warning [evidence-unjudged]: 1 evidence quotes are for (query, doc) pairs " \
           "without a judgment: 'q2/d2'" in out
    assert "warning [evidence-grade]: 1 evidence quotes have a grade other than their " \
           "judgment's: 'q1/d1'" in out
