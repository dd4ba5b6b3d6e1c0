"""The judging workflow on the command line: evalset init → add-queries → pool → (store) →
judge agreement → judge export → evalset check; bad input is one ``error:`` line, exit 1,
and nothing judged is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbench.cli.main import main
from searchbench.data import Run, read_qrels
from searchbench.judging import Judgment, JudgmentStore, read_pool


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def built(tmp_path: Path, capsys) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(["install", "configure", "upgrade", "remove"]):
        (docs / f"{topic}.md").write_text(f"# How to {topic}\n\nSteps to {topic} it. {i}\n")
    (docs / "faq.html").write_text("<h1>FAQ</h1><p>Questions <script>x()</script></p>")
    folder = tmp_path / "set"
    code, out, err = _run(capsys, "evalset", "init", folder, "--docs", docs)
    assert code == 0, err
    assert "5 documents (5 added, 0 updated, 0 unchanged, 0 removed)" in out
    (tmp_path / "q.txt").write_text("how to install\nhow to upgrade\nhow to install\n")
    code, out, err = _run(capsys, "evalset", "add-queries", folder, tmp_path / "q.txt",
                          "--source", "real")
    assert code == 0, err
    assert "2 queries added (q1, q2)" in out and "1 duplicate" in out
    for name, order in (("a", ["install.md", "upgrade.md", "faq.html", "remove.md"]),
                        ("b", ["upgrade.md", "install.md", "configure.md"])):
        Run.from_dict({q: {d: float(10 - r) for r, d in enumerate(order)}
                       for q in ("q1", "q2")}).to_file(tmp_path / f"{name}.trec")
    return folder


def test_workflow(built: Path, tmp_path: Path, capsys) -> None:
    code, out, err = _run(capsys, "pool", built, "--runs", tmp_path / "a.trec",
                          tmp_path / "b.trec", "--depth", "3", "-o", built / "pool.jsonl")
    assert code == 0, err
    assert "a.trec  0.000 → 0.300" in out  # 3 of its top 10 judged once the pool is
    items = read_pool(built / "pool.jsonl")
    assert [(i.doc_id, i.n_runs, i.best_rank) for i in items if i.query_id == "q1"] == [
        ("install.md", 2, 1), ("upgrade.md", 2, 1), ("configure.md", 1, 3),
        ("faq.html", 1, 3)]
    with JudgmentStore(built) as store:
        for item in items:
            for who, shift in (("alice", 0), ("bob", 1)):
                grade = min(3, (3 if item.doc_id.startswith("install") else 0) + shift)
                store.record(Judgment(item.query_id, item.doc_id, who, grade))
            store.record(Judgment(item.query_id, item.doc_id, "llm:m@v1", 1, kind="llm"))
    code, out, err = _run(capsys, "judge", "agreement", built, "--runs", tmp_path / "a.trec",
                          tmp_path / "b.trec", "--bootstrap", "100", "--json",
                          "-o", tmp_path / "adjudicate.jsonl")
    assert code == 0, err
    report = json.loads(out)
    again = read_pool(tmp_path / "adjudicate.jsonl")
    assert [(i.query_id, i.doc_id) for i in again] == [
        (d["query_id"], d["doc_id"]) for d in report["disagreements"]]
    assert again  # the LLM's 1 is 2 grades from the people's 3 on install.md
    assert report["pairs"]["alice vs bob"]["kappa"]["n_items"] == len(items)
    assert "kendall_tau" in report["llm"]["llm:m@v1"]
    code, out, err = _run(capsys, "judge", "export", built, "--adjudicate", "majority")
    assert code == 0, err
    assert "content hash: (none) → sha256:" in out
    qrels = read_qrels(built / "qrels.tsv").to_dict()
    assert qrels["q1"]["install.md"] == 3 and qrels["q1"]["upgrade.md"] == 0  # tie → lower
    code, out, err = _run(capsys, "evalset", "check", built)
    assert "verified 100%" in out and "judge agreement: 2 people, 1 LLM judges" in out
    code, out, err = _run(capsys, "pool", built, "--runs", tmp_path / "a.trec", "--depth", "3")
    assert code == 1 and "pool.jsonl: it exists already; pass --force" in err  # the old pool
    code, out, err = _run(capsys, "pool", built, "--runs", tmp_path / "a.trec", "--depth", "3",
                          "--force")
    assert code == 0 and "0 to judge" in out and "a.trec  0.300 → 0.300" in out


@pytest.mark.parametrize(("args", "message"), [
    (["pool", "{set}"], "error: pool needs at least one run"),
    (["pool", "{set}", "--runs", "{tmp}/bad.trec"],
     "error: bad.trec: 2 of 2 entries name 1 documents missing from the corpus"),
    (["judge", "export", "{set}", "--adjudicate", "annotator:nobody"],
     "error: --adjudicate annotator:nobody: no annotator 'nobody' in the store"),
    (["judge", "agreement", "{set}"], "error: {set}: no judging store with labels"),
    (["evalset", "add-queries", "{set}", "{tmp}/q.txt", "--source", "robots"], "Invalid value"),
])
def test_bad_input_is_one_error_line(built: Path, tmp_path: Path, capsys, args: list[str],
                                     message: str) -> None:
    Run.from_dict({"q1": {"nope.md": 1.0}, "q2": {"nope.md": 1.0}}).to_file(
        tmp_path / "bad.trec")
    if "export" in args:  # a store with a label, so the policy is what is wrong
        with JudgmentStore(built) as store:
            store.record(Judgment("q1", "install.md", "alice", 3))
    before = (built / "corpus.jsonl").read_bytes()
    code, _, err = _run(capsys, *[a.format(set=built, tmp=tmp_path) for a in args])
    assert code in (1, 2)
    assert message.format(set=built) in err
    if code == 1:
        assert err.count("\n") == 1 and "Traceback" not in err
    assert (built / "corpus.jsonl").read_bytes() == before


def test_names_from_files_reach_the_terminal_inert(tmp_path: Path, capsys) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "\x1b[31mred.md").write_text("# Red\n")
    (docs / "\x1b]0;title\x07.bin").write_bytes(b"\x00")
    code, out, err = _run(capsys, "evalset", "init", tmp_path / "set", "--docs", docs,
                          "--glob", "*")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "skipped \\u001b]0;title\\u0007.bin: unknown kind of file" in out
    assert '"id":"%1B[31mred.md"' in (tmp_path / "set" / "corpus.jsonl").read_text()
