"""``CallableRetriever``: a user's own Python callable as the system under test.

Expected runs are built by hand from what the callables return (the reference is the
callable itself); the trec_eval tie rule is the one :class:`~searchbench.Run` applies."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import textwrap
import time

import pytest

import searchbench as sb
from searchbench.errors import BackendError, ConfigError, SearchbenchWarning
from searchbench.retrieval.callable import CallableRetriever, load_target


@pytest.fixture(scope="module")
def pyref():
    return sb.load_evalset("pyref")


def _docs(es, n=30):
    return [d.id for d in es.corpus][:n]


def _retriever(fn, es, **kw):
    return CallableRetriever(fn, **kw).index(es.corpus)


def test_batch_callable_gives_its_ranking_with_scores(pyref):
    ids = _docs(pyref)
    calls = []

    def retrieve(queries: list[str], k: int):
        calls.append((len(queries), k))
        return [[(ids[(i + j) % len(ids)], 1.0 / (j + 1)) for j in range(k)]
                for i, _ in enumerate(queries)]

    queries = pyref.judged_queries
    run = _retriever(retrieve, pyref, batch_size=8).search(queries, k=5)
    assert all(n <= 8 and k == 5 for n, k in calls)
    first = queries.ids[0]
    assert [d for d, _ in run.ranking(first)] == ids[:5]
    assert run.metadata["adapter"]["call"] == "batch"
    assert run.metadata["latency"]["calls"] == len(calls)


def test_single_and_async_callables_agree(pyref):
    ids = _docs(pyref)

    def one(query, k):
        h = int(hashlib.sha256(query.encode()).hexdigest(), 16)
        return [(ids[(h + j) % len(ids)], float(k - j)) for j in range(k)]

    async def one_async(query, k):
        await asyncio.sleep(0)
        return one(query, k)

    async def many_async(queries: list[str], k: int):
        return [one(q, k) for q in queries]

    queries = pyref.judged_queries
    runs = [_retriever(f, pyref, concurrency=3).search(queries, k=7)
            for f in (one, one_async, many_async)]
    for run in runs[1:]:
        for q in queries.ids:
            assert run.ranking(q) == runs[0].ranking(q)
    assert runs[1].metadata["adapter"]["async"] is True


def test_ids_without_scores_rank_by_order_and_ties_follow_trec_eval(pyref):
    ids = _docs(pyref, 4)
    run = _retriever(lambda q, k: list(ids), pyref).search(pyref.judged_queries, k=4)
    q = pyref.judged_queries.ids[0]
    assert [d for d, _ in run.ranking(q)] == ids          # n − rank + 1
    tied = _retriever(lambda q, k: [(i, 1.0) for i in ids], pyref)
    run = tied.search(pyref.judged_queries, k=4)
    expected = sb.Run.from_columns([q] * 4, ids, [1.0] * 4)
    assert run.ranking(q) == expected.ranking(q)          # trec_eval's order for ties


def test_chunks_of_one_document_collapse_and_the_system_is_asked_for_more(pyref):
    ids = _docs(pyref, 12)
    asked = []

    def chunks(query, k):
        asked.append(k)
        # three chunks per document, best first: k results hold only k/3 documents
        return [(f"{ids[j // 3]}#{(j % 3) * 10}-{(j % 3) * 10 + 5}", 100.0 - j)
                for j in range(min(k, 3 * len(ids)))]

    run = _retriever(chunks, pyref).search(pyref.judged_queries, k=10)
    q = pyref.judged_queries.ids[0]
    assert [d for d, _ in run.ranking(q)] == ids[:10]
    assert max(asked) >= 30 and run.metadata["deepening"]["short_queries"] == 0


def test_deepening_goes_on_while_the_next_chunks_all_belong_to_documents_found(pyref):
    """One long document fills the first two answers (10, then 20 of its 25 chunks): the
    system is not exhausted, it still answers more results each time."""
    ids = _docs(pyref, 12)
    asked = []

    def long_first(query, k):
        asked.append(k)
        hits = [f"{ids[0]}#{j * 10}-{j * 10 + 5}" for j in range(25)] + ids[1:]
        return [(h, 100.0 - j) for j, h in enumerate(hits[:k])]

    run = _retriever(long_first, pyref).search(pyref.judged_queries, k=10)
    q = pyref.judged_queries.ids[0]
    assert [d for d, _ in run.ranking(q)] == ids[:10]
    assert sorted(set(asked)) == [10, 20, 40]
    assert run.metadata["deepening"]["short_queries"] == 0


def test_a_tie_at_the_cut_keeps_the_documents_exact_search_keeps(pyref):
    """The k-th and (k+1)-th documents tie (the same best chunk text in both): the cut
    follows the tie rule (id descending), not the order the system listed them in."""
    a, b, c = sorted(_docs(pyref, 3))                      # byte-wise: a < b < c
    answer = [(a, 3.0), (b, 1.0), (c, 1.0)]                # c outranks b on the tie
    run = _retriever(lambda q, k: answer, pyref).search(pyref.judged_queries, k=2)
    q = pyref.judged_queries.ids[0]
    assert run.ranking(q) == [(a, 3.0), (c, 1.0)]


def test_unknown_ids_are_counted_and_all_unknown_names_the_mistake(pyref):
    ids = _docs(pyref, 3)
    some = _retriever(lambda q, k: [*ids, "no-such-doc"], pyref)
    with pytest.warns(SearchbenchWarning, match=r"1 returned ids are not documents.*"
                      r"no-such-doc"):
        some.search(pyref.judged_queries, k=4)
    none = _retriever(lambda q, k: ["node-1f3a", "node-99b2"], pyref)
    with pytest.raises(BackendError, match=r"none of the 2 returned ids.*--id-from"):
        none.search(pyref.judged_queries, k=2)


@pytest.mark.parametrize(("answer", "needle"), [
    ({"a": 1}, "returned a dict"),
    ([None], "a result is a NoneType"),
    ([("d", float("nan"))], "expected a finite number"),
    ([("d", "high")], "expected a number"),
    ([("", 1.0)], "non-empty string"),
])
def test_garbage_answers_are_one_error(pyref, answer, needle):
    r = _retriever(lambda q, k: answer, pyref)
    with pytest.raises(BackendError, match=needle):
        r.search(pyref.judged_queries, k=3)


def test_a_raising_call_names_the_query_or_is_skipped(pyref):
    queries = pyref.judged_queries
    bad = queries.texts()[1]
    ids = _docs(pyref, 3)

    def flaky(query, k):
        if query == bad:
            raise RuntimeError("index shard 3 offline\nsecond line")
        return list(ids)

    with pytest.raises(BackendError, match=rf"query '{queries.ids[1]}': RuntimeError: index "
                       r"shard 3 offline \(--on-error skip"):
        _retriever(flaky, pyref, batch_size=1).search(queries, k=3)
    with pytest.warns(SearchbenchWarning, match=r"1 queries failed"):
        run = _retriever(flaky, pyref, batch_size=1, on_error="skip").search(queries, k=3)
    assert queries.ids[1] not in set(run.query_ids.astype(str).tolist())
    assert run.metadata["failed_queries"] == [queries.ids[1]]


def test_a_hanging_call_stops_the_run_at_its_timeout(pyref):
    def hang(query, k):
        time.sleep(30)
        return []

    t0 = time.monotonic()
    with pytest.raises(BackendError, match=r"no answer within 0.5 s"):
        _retriever(hang, pyref, timeout=0.5).search(pyref.judged_queries, k=3)
    assert time.monotonic() - t0 < 20   # abandoned, not waited for


@pytest.mark.parametrize(("kw", "needle"), [
    ({"on_error": "ignore"}, "on_error='ignore'"),
    ({"batch_size": 0}, "batch_size=0"),
    ({"timeout": float("inf")}, "timeout=inf"),
    ({"id_from": "meta"}, "id_from='meta'"),
])
def test_bad_settings_are_config_errors(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        CallableRetriever(lambda q, k: [], **kw)


def test_targets_load_factories_and_refuse_what_is_not_there(tmp_path, monkeypatch):
    (tmp_path / "myapp_search.py").write_text(textwrap.dedent("""
        def retrieve(query, k):
            return []

        def build(prefix="x"):
            return lambda query, k: [prefix]
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_target("myapp_search:retrieve").__name__ == "retrieve"    # the callable
    assert load_target("myapp_search:build", {"prefix": "p"})("q", 1) == ["p"]   # factory
    with pytest.raises(ConfigError, match="cannot import 'nope_mod'"):
        load_target("nope_mod:fn")
    with pytest.raises(ConfigError, match="has no attribute 'missing'"):
        load_target("myapp_search:missing")
    with pytest.raises(ConfigError, match="expected 'module:name'"):
        load_target("myapp_search.retrieve")


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "searchbench", *args], capture_output=True,
                          text=True, cwd=cwd, check=False)


def test_cli_runs_a_callable_and_refuses_a_broken_one_in_one_line(tmp_path, pyref):
    ids = _docs(pyref, 5)
    (tmp_path / "mine.py").write_text(
        f"IDS = {ids!r}\n"
        "def retrieve(queries: list[str], k: int):\n"
        "    return [[(d, 1.0 / (i + 1)) for i, d in enumerate(IDS[:k])] for _ in queries]\n"
        "def broken(query, k):\n"
        "    raise ValueError('boom')\n")
    done = _cli("run", "pyref", "-r", "python", "--target", "mine:retrieve", "-k", "5",
                "-o", "mine.trec", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    side = (tmp_path / "mine.trec.json").read_text()
    assert '"target": "mine:retrieve"' in side and '"module_sha256"' in side
    run = sb.Run.from_file(tmp_path / "mine.trec")
    assert [d for d, _ in run.ranking(pyref.judged_queries.ids[0])] == ids
    for target, needle in (("mine:broken", "ValueError: boom"),
                           ("mine:nothing", "has no attribute 'nothing'"),
                           ("nomod:fn", "cannot import 'nomod'")):
        done = _cli("run", "pyref", "-r", "python", "--target", target, "-o", "bad.trec",
                    cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and lines[-1].startswith("error: ")
        assert needle in lines[-1] and "Traceback" not in done.stderr
        assert not (tmp_path / "bad.trec").exists()
    done = _cli("run", "pyref", "-r", "python", "-o", "x.trec", cwd=tmp_path)
    assert done.returncode == 2 and "needs --target" in done.stderr  # a usage error


def test_id_from_a_function_of_the_result_maps_ids(pyref, tmp_path, monkeypatch):
    ids = _docs(pyref, 3)
    (tmp_path / "idmap.py").write_text("def doc_of(item):\n    return item['meta']['src']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    answer = [{"id": f"chunk-{i}", "score": 3.0 - i, "meta": {"src": d}}
              for i, d in enumerate(ids)]

    class Mapped:
        def __call__(self, query: str, k: int):
            return answer

    r = _retriever(Mapped(), pyref, id_from="python:idmap:doc_of")
    run = r.search(pyref.judged_queries, k=3)
    assert [d for d, _ in run.ranking(pyref.judged_queries.ids[0])] == ids
    with pytest.raises(ConfigError, match="has no attribute"):
        CallableRetriever(lambda q, k: [], id_from="python:idmap:nothing")
