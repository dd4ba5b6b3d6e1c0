"""``searchbench.distributed.evaluate_files``: what ``searchbench eval`` does, from Python —
in memory or streamed, the same numbers, through the one scoring step."""

from __future__ import annotations

import pytest

from searchbench.data.qrels import Qrels
from searchbench.data.run import Run
from searchbench.distributed import evaluate_files
from searchbench.errors import ConfigError, SearchbenchWarning
from searchbench.measures import Evaluator


def _files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\nq3 0 d 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 b 1 3.0 t\nq1 Q0 a 2 2.0 t\nq2 Q0 c 1 1.0 t\nq2 Q0 x 2 0.5 t\n"
                   "q3 Q0 y 1 1.0 t\n")
    return qrels, run


def test_in_memory_and_streamed_give_the_evaluators_numbers(tmp_path):
    qrels, run = _files(tmp_path)
    measures = ["nDCG@10", "RR", "R@10"]
    # the reference: the evaluator on the whole run, read by hand
    want = Evaluator(Qrels.from_file(qrels), measures).evaluate(Run.from_file(run)).mean
    for stream in (False, True):
        done = evaluate_files(qrels, [run], measures, stream=stream, quiet=True)
        (res,) = done.results
        assert res.measures == measures  # the Judged@10 probe taken out
        assert res.mean == pytest.approx(want)
        assert done.coverage[0].k == 10 and done.coverage[0].mean == pytest.approx(
            (1.0 + 0.5 + 0.0) / 3)  # Judged@10 per query: 2/2, 1/2, 0/1
        assert done.runs[0].name == "run.trec"
    marked = evaluate_files(qrels, [run], measures, no_answer=["q3"], quiet=True)
    assert marked.results[0].num_q == 2 and marked.scored[0].to_dict()


def test_an_unjudged_run_warns_and_two_engines_at_once_are_refused(tmp_path):
    qrels, _ = _files(tmp_path)
    other = tmp_path / "other.trec"
    other.write_text("q1 Q0 zz 1 1.0 t\nq2 Q0 zy 1 1.0 t\nq3 Q0 zx 1 1.0 t\n")
    with pytest.warns(SearchbenchWarning, match="only 0.0% of its top 10"):
        evaluate_files(qrels, [other], ["nDCG@10"], quiet=True)
    with pytest.raises(ConfigError, match="choose one"):
        evaluate_files(qrels, [other], stream=True, engine="ray")
    with pytest.raises(ConfigError, match="engine 'spark'"):
        evaluate_files(qrels, [other], engine="spark")


def test_errors_come_in_the_order_of_a_reading_in_one_thread(tmp_path):
    """The runs are read by a background thread while the qrels are read (the read-ahead);
    what a user sees is what reading them one after the other gives: a bad measure before
    any file, a bad qrels file before a bad run, the first bad run by its line."""
    from searchbench.errors import DataFormatError, UnknownMeasureError

    qrels, run = _files(tmp_path)
    bad_run = tmp_path / "bad.trec"
    bad_run.write_text("q1 Q0 a 1 3.0 t\nq1 Q0 b 2 two t\n")
    bad_qrels = tmp_path / "bad_qrels.txt"
    bad_qrels.write_text("q1 0 a 1\nq1 0 b\n")
    with pytest.raises(UnknownMeasureError):
        evaluate_files(qrels, [bad_run], ["nDCG@x"], quiet=True)
    with pytest.raises(DataFormatError, match=r"bad_qrels\.txt"):
        evaluate_files(bad_qrels, [bad_run], ["nDCG@10"], quiet=True)
    with pytest.raises(DataFormatError, match=r"bad\.trec:2"):
        evaluate_files(qrels, [run, bad_run, run], ["nDCG@10"], quiet=True)
    done = evaluate_files(qrels, [run, run], ["nDCG@10"], names=["a", "b"], quiet=True)
    assert [r.run_name for r in done.results] == ["a", "b"]
