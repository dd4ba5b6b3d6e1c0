"""Export: adjudication policies, LLM labels never mixed in silently, min annotators, skips,
per-judgment provenance, evidence, verified queries, the content hash and the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbench.data import read_native, read_qrels
from searchbench.errors import ConfigError, DataFormatError
from searchbench.judging import Judgment, JudgmentStore, Quote, adjudicate, export

LLM = "llm:m@v1"


def J(q: str, d: str, who: str, grade: int | None, **kw) -> Judgment:
    kind = "llm" if who.startswith("llm:") else "human"
    return Judgment(q, d, who, grade, kind=kind, **kw)  # type: ignore[arg-type]


LABELS = [
    J("q1", "d1", "alice", 3), J("q1", "d1", "bob", 1), J("q1", "d1", "carol", 1),
    J("q1", "d1", LLM, 3),
    J("q1", "d2", "alice", 2), J("q1", "d2", "bob", 1),       # tie 1/2, mean 1.5
    J("q1", "d2", LLM, 0),
    J("q2", "d1", LLM, 2),                                    # only the LLM
    J("q2", "d2", "alice", 0), J("q2", "d2", "bob", None),    # bob skipped
]


def _grades(items) -> dict[tuple[str, str], int]:
    return {(a.query_id, a.doc_id): a.grade for a in items}


def test_majority_uses_people_only_ties_go_low() -> None:
    items, left = adjudicate(LABELS, "majority")
    assert _grades(items) == {("q1", "d1"): 1, ("q1", "d2"): 1, ("q2", "d2"): 0}
    assert left == {"too_few_labels": 0, "llm_only": 1}
    assert all(j.kind == "human" for a in items for j in a.labels)


def test_mean_rounds_half_up() -> None:
    items, _ = adjudicate(LABELS, "mean")
    assert _grades(items) == {("q1", "d1"): 2, ("q1", "d2"): 2, ("q2", "d2"): 0}  # 5/3, 1.5


def test_humans_over_llm_and_a_named_annotator() -> None:
    items, left = adjudicate(LABELS, "humans-over-llm")
    assert _grades(items)[("q2", "d1")] == 2 and left["llm_only"] == 0
    rules = {(a.query_id, a.doc_id): a.rule for a in items}
    assert rules[("q2", "d1")] == "majority of LLM judges"
    assert rules[("q1", "d1")] == "majority of people"
    named, _ = adjudicate(LABELS, f"annotator:{LLM}")
    assert _grades(named) == {("q1", "d1"): 3, ("q1", "d2"): 0, ("q2", "d1"): 2,
                              ("q2", "d2"): 0}
    assert {(a.query_id, a.doc_id): a.rule for a in named}[("q2", "d2")] == \
        "majority of people"


def test_min_annotators_counts_labels_not_skips() -> None:
    items, left = adjudicate(LABELS, "majority", min_annotators=2)
    assert set(_grades(items)) == {("q1", "d1"), ("q1", "d2")}
    assert left["too_few_labels"] == 1  # q2/d2: alice only, bob skipped


def test_bad_policies() -> None:
    with pytest.raises(ConfigError, match="no annotator 'dave'"):
        adjudicate(LABELS, "annotator:dave")
    with pytest.raises(ConfigError, match="expected one of majority, mean"):
        adjudicate(LABELS, "vote")
    with pytest.raises(ConfigError, match="--min-annotators 0"):
        adjudicate(LABELS, "majority", min_annotators=0)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    root.mkdir()
    (root / "corpus.jsonl").write_text(
        '{"id": "d1", "text": "The answer is forty-two."}\n'
        '{"id": "d2", "text": "Nothing here."}\n{"id": "d3", "text": "Old."}\n')
    (root / "queries.jsonl").write_text(
        '{"id": "q1", "text": "what is the answer"}\n'
        '{"id": "q2", "text": "synthetic one", "source": "synthetic", "generator": "m"}\n'
        '{"id": "q3", "text": "judged before"}\n')
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td3\t1\n")
    return root


def test_export_writes_qrels_evidence_provenance_and_keeps_history(folder: Path) -> None:
    quote = Quote(4, 24, "answer is forty-two.")
    with JudgmentStore(folder) as store:
        store.record(J("q1", "d1", "alice", 3, evidence=(quote,)))
        store.record(J("q1", "d1", "bob", 2))
        store.record(J("q1", "d2", "alice", 0))
        store.record(J("q2", "d1", LLM, 2))
    first = export(folder, policy="majority")
    qrels = read_qrels(folder / "qrels.tsv").to_dict()
    assert qrels == {"q1": {"d1": 2, "d2": 0}, "q3": {"d3": 1}}  # tie 2/3 → 2; q3 kept
    evidence = [json.loads(x) for x in (folder / "evidence.jsonl").read_text().splitlines()]
    assert evidence == [{"query_id": "q1", "doc_id": "d1", "grade": 2,
                         "quote": "answer is forty-two."}]
    prov = [json.loads(x) for x in (folder / "qrels.provenance.jsonl").read_text().splitlines()]
    by_pair = {(p["query_id"], p["doc_id"]): p for p in prov}
    assert by_pair[("q1", "d1")]["policy"] == "majority"
    assert [lab["annotator"] for lab in by_pair[("q1", "d1")]["labels"]] == ["alice", "bob"]
    assert by_pair[("q3", "d3")]["origin"] == "previous qrels.tsv"
    assert first.left_out["llm_only"] == 1  # the LLM label is not exported by majority
    es = read_native(folder)
    assert [q.verified for q in es.queries] == [True, False, False]  # a person judged q1
    saved = json.loads((folder / "provenance.json").read_text())
    assert saved["content_hash"] == es.content_hash() == first.content_hash
    assert first.history is not None  # the hand-written qrels.tsv was kept
    assert (folder / first.history / "qrels.tsv").read_text().endswith("q3\td3\t1\n")

    second = export(folder, policy="humans-over-llm")
    assert read_qrels(folder / "qrels.tsv").to_dict()["q2"] == {"d1": 2}
    assert second.previous_hash == first.content_hash != second.content_hash
    kept = folder / second.history
    assert read_qrels(kept / "qrels.tsv").to_dict() == qrels  # the previous version
    assert json.loads((kept / "provenance.json").read_text())["content_hash"] == \
        first.content_hash
    history = json.loads((folder / "provenance.json").read_text())["history"]
    assert [h["content_hash"] for h in history][-1] == first.content_hash


def test_an_undone_label_leaves_the_next_export(folder: Path) -> None:
    with JudgmentStore(folder) as store:
        store.record(J("q1", "d1", "alice", 3))
        store.record(J("q1", "d2", "alice", 1))
    export(folder)
    with JudgmentStore(folder) as store:
        store.undo("alice")  # q1/d2 undone
    export(folder)
    assert read_qrels(folder / "qrels.tsv").to_dict() == {"q1": {"d1": 3}, "q3": {"d3": 1}}


def test_nothing_to_export(folder: Path) -> None:
    with pytest.raises(DataFormatError, match="no judging store"):
        export(folder)
    with pytest.raises(DataFormatError, match="nothing to export"):
        export(folder, [J("q1", "d1", LLM, 2)], policy="majority")
    assert (folder / "qrels.tsv").read_text().endswith("q3\td3\t1\n")  # untouched


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith("judging.sqlite")}


def test_unchanged_export_writes_nothing_and_says_so(folder: Path, capsys) -> None:
    from searchbench.cli.main import main

    quote = Quote(4, 24, "answer is forty-two.")
    with JudgmentStore(folder) as store:
        store.record(J("q1", "d1", "alice", 3, evidence=(quote,)))
        store.record(J("q2", "d2", "bob", 1))
    first = export(folder)
    before = _snapshot(folder)
    histories = sorted((folder / "history").iterdir())
    second = export(folder)  # nothing changed: nothing written, no history copy
    assert second.unchanged_since is not None and second.history is None
    assert second.content_hash == first.content_hash
    assert _snapshot(folder) == before
    assert sorted((folder / "history").iterdir()) == histories
    assert main(["judge", "export", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "nothing changed since the export of" in out and "nothing written" in out
    assert "→" not in out and _snapshot(folder) == before
    # each kind of change is exported again: another policy, a new label, an edited set
    assert export(folder, policy="mean").unchanged_since is None
    assert export(folder, policy="mean").unchanged_since is not None
    with JudgmentStore(folder) as store:
        store.record(J("q1", "d2", "alice", 0))
    assert export(folder, policy="mean").unchanged_since is None
    with (folder / "corpus.jsonl").open("a") as fh:
        fh.write('{"id": "d4", "text": "New."}\n')
    changed = export(folder, policy="mean")
    assert changed.unchanged_since is None and changed.content_hash != first.content_hash
    with JudgmentStore(folder) as store:  # a label with new evidence, same grade
        store.record(J("q1", "d1", "alice", 3, evidence=(Quote(0, 3, "The"),)))
    assert export(folder, policy="mean").unchanged_since is None
