"""The HTTP retriever against a real search service and hostile ones, all on 127.0.0.1.

The real service (``search_service.py``, a subprocess stopped by its pid) ranks the pyref
corpus with BM25, so the run obtained over HTTP must equal the in-process BM25 run exactly
(ids, order and scores: JSON numbers round-trip floats exactly). Hostile services are
threads answering every POST with one behaviour.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import searchbench as sb
from searchbench.cli.main import main
from searchbench.errors import BackendError, ConfigError
from searchbench.retrieval import HttpRetriever
from searchbench.retrieval.http_search import fill_template, parse_template

pytest.importorskip("bm25s")
pytest.importorskip("jsonpath_ng")

TOKEN = "tok-search-5e2b91"
SERVICE = Path(__file__).with_name("search_service.py")


# -- the real service ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator[dict[str, Any]]:
    log = tmp_path_factory.mktemp("svc") / "requests.jsonl"
    env = {**os.environ, "SERVICE_TOKEN": TOKEN, "SERVICE_TENANT": "a",
           "SERVICE_LOG": str(log)}
    proc = subprocess.Popen([sys.executable, str(SERVICE), "pyref"], stdout=subprocess.PIPE,
                            env=env, text=True)
    try:
        port = int(proc.stdout.readline())
        yield {"url": f"http://127.0.0.1:{port}", "log": log}
    finally:
        proc.kill()  # by its own pid
        proc.wait()
        proc.stdout.close()


@pytest.fixture()
def token(monkeypatch) -> str:
    monkeypatch.setenv("SB_SEARCH_TOKEN", TOKEN)
    return TOKEN


@pytest.fixture(scope="module")
def pyref() -> Any:
    return sb.load_evalset("pyref", quiet=True)


def retriever(url: str, **kw: Any) -> HttpRetriever:
    kw = {"request": '{"q": "{query}", "k": {k}}', "ids": "$.hits[*].id",
          "scores": "$.hits[*].score", "headers": ["X-Tenant: a"],
          "auth_env": "SB_SEARCH_TOKEN", "retries": 0, "timeout": 5.0, "backoff": 0.0, **kw}
    return HttpRetriever(url, **kw)


def test_run_over_http_equals_the_same_bm25_in_process(service, token, pyref):
    got = retriever(service["url"] + "/search").index(pyref.corpus).search(pyref.queries, k=10)
    want = sb.retrieval.BM25().index(pyref.corpus).search(pyref.queries, k=10)
    for q in pyref.queries.ids:
        assert got.ranking(q) == want.ranking(q)
    assert got.metadata["endpoint"] == service["url"] + "/search"
    assert got.metadata["headers"] == ["X-Tenant"]  # names only: values may be secrets


def test_elasticsearch_shape_and_rank_derived_scores(service, token, pyref):
    es_shape = retriever(service["url"] + "/es", ids="$.hits.hits[*]._id",
                         scores="$.hits.hits[*]._score",
                         request='{"query": {"match": {"text": "{query}"}}, "size": {k}}')
    listed = retriever(service["url"] + "/list", ids="$[*].id", scores=None)
    a = es_shape.index(pyref.corpus).search(pyref.queries, k=5)
    b = listed.index(pyref.corpus).search(pyref.queries, k=5)
    for q in pyref.queries.ids:
        ids = [d for d, _ in a.ranking(q)]
        assert [d for d, _ in b.ranking(q)] == ids
        assert [s for _, s in b.ranking(q)] == [float(len(ids) - r) for r in range(len(ids))]
    assert b.metadata["scores"].startswith("rank-derived")


def test_query_text_cannot_break_or_inject_into_the_template(service, token, pyref):
    hostile = 'a "b", "k": 1} {k} \\ {query_id} \u0000 ünï'
    queries = sb.Queries.from_dict({"q{k}": hostile})
    r = retriever(service["url"] + "/search",
                  request='{"q": "{query}", "k": {k}, "tag": "id={query_id}"}')
    r.index(pyref.corpus).search(queries, k=3)
    sent = json.loads(service["log"].read_text().splitlines()[-1])["body"]
    assert sent == {"q": hostile, "k": 3, "tag": "id=q{k}"}


def test_template_placeholders_are_values_not_text():
    t = parse_template('{"a": {k}, "b": "{k}", "c": ["top {k} of {query}"], "d": "{x}"}')
    assert fill_template(t, {"k": 7, "query": "{k}", "query_id": "1"}) == \
        {"a": 7, "b": 7, "c": ["top 7 of {k}"], "d": "{x}"}
    with pytest.raises(ConfigError, match="--request"):
        parse_template('{"q": {query}')


def test_missing_credentials_and_header_are_the_services_refusal(service, monkeypatch, pyref):
    monkeypatch.delenv("SB_SEARCH_TOKEN", raising=False)
    with pytest.raises(BackendError, match=r"pyref-001.*HTTP 401"):
        retriever(service["url"] + "/search").index(pyref.corpus).search(
            pyref.queries.subset(["pyref-001"]), k=3)


def test_cli_run_http_writes_the_run_and_provenance(service, token, pyref, tmp_path, capsys):
    out = tmp_path / "http.trec"
    args = ["run", "pyref", "-r", "http", "--endpoint", service["url"] + "/search",
            "--request", '{"q": "{query}", "k": {k}}', "--ids", "$.hits[*].id",
            "--scores", "$.hits[*].score", "--header", "X-Tenant: a",
            "--auth-env", "SB_SEARCH_TOKEN", "--concurrency", "3", "--retries", "1",
            "--timeout", "5", "-k", "10", "-o", str(out)]
    assert main(args) == 0
    want = sb.retrieval.BM25().index(pyref.corpus).search(pyref.queries, k=10)
    ndcg = sb.evaluate(pyref.qrels, want, ["nDCG@10"]).mean["nDCG@10"]
    assert f"nDCG@10 {ndcg:.4f}" in capsys.readouterr().out
    side = out.with_name("http.trec.json").read_text()
    assert TOKEN not in side and json.loads(side)["retrieval"]["retriever"] == "http"


def test_cli_http_errors_are_one_line(service, token, tmp_path, capsys):
    base = ["run", "pyref", "-r", "http", "-o", str(tmp_path / "x.trec")]
    assert main(base) == 2  # a usage error
    assert "needs --endpoint" in capsys.readouterr().err
    assert main([*base, "--endpoint", service["url"] + "/search", "--ids", "$.[["]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--ids" in err and "Traceback" not in err
    assert main([*base, "--endpoint", service["url"] + "/search", "--header", "bad"]) == 1
    err = capsys.readouterr().err  # the value may be a secret: not echoed
    assert "--header: expected 'Name: value'" in err and "bad" not in err


def test_http_in_experiment_toml_and_as_hybrid_part():
    from searchbench.retrieval import HttpSpec, build_retriever, retriever_spec

    http = retriever_spec("http", {"endpoint": "http://127.0.0.1:9/s", "scores": "$..s",
                                   "headers": {"X-Tenant": "a"}, "concurrency": 2})
    assert http == HttpSpec(endpoint="http://127.0.0.1:9/s", scores="$..s",
                            headers=(("X-Tenant", "a"),), concurrency=2)
    hybrid = retriever_spec("hybrid", {}, parts=(retriever_spec("bm25", {}), http))
    built = build_retriever(hybrid)
    assert isinstance(built.retrievers[1], HttpRetriever)
    for bad in ({"endpoint": "ftp://x"}, {"endpoint": "http://h", "concurrency": 0},
                {"endpoint": "http://h", "timeout": 0}, {"endpoint": "http://h", "nope": 1},
                {}):
        with pytest.raises(ConfigError):
            build_retriever(retriever_spec("http", bad, key=lambda k: f"retrievers.h.{k}"))


# -- hostile services ------------------------------------------------------------------------
Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


class Stub:
    """A loopback HTTP server (a thread) answering every POST with ``behaviour``."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour, self.requests = behaviour, []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"auth": self.headers.get("Authorization"), **body})
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner.behaviour(self, body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/search"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture()
def stubs() -> Iterator[Callable[[Behaviour], Stub]]:
    made: list[Stub] = []

    def make(behaviour: Behaviour) -> Stub:
        made.append(Stub(behaviour))
        return made[-1]
    yield make
    for s in made:
        s.close()


def send(h: BaseHTTPRequestHandler, status: int, payload: Any = None, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> None:
    data = raw if raw is not None else json.dumps(payload).encode()
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def hits(ids: list[Any], scores: list[Any] | None = None) -> dict[str, Any]:
    scores = scores if scores is not None else [1.0] * len(ids)
    return {"hits": [{"id": i, "score": s} for i, s in zip(ids, scores, strict=True)]}


CORPUS = sb.Corpus.from_dict({"d1": "alpha", "d2": "beta", "d3": "gamma"})
ONE = sb.Queries.from_dict({"q7": "alpha"})


def search(url: str, **kw: Any) -> sb.Run:
    return retriever(url, headers=None, **kw).index(CORPUS).search(ONE, k=10)


def fails(url: str, match: str, **kw: Any) -> str:
    with pytest.raises(BackendError, match=match) as info:
        search(url, **kw)
    text = str(info.value)
    assert "q7" in text and url in text and TOKEN not in text and info.value.__cause__ is None
    return text


@pytest.mark.parametrize(("answer", "match"), [
    (b"<html>login</html>", "not JSON"),
    (b'{"hits": [{"id": "d1", "score": 1}, {"id": "d2"}]}', "found 2 values but.*found 1"),
    (json.dumps(hits(["d1"], ["high"])).encode(), "finite JSON numbers"),
    (b'{"hits": [{"id": "d1", "score": NaN}]}', "finite JSON numbers"),
    (json.dumps(hits([None])).encode(), "null among the ids"),
    (json.dumps(hits([{"x": 1}])).encode(), "dict.*among the ids"),
])
def test_malformed_answers_name_endpoint_and_query(stubs, token, answer, match):
    fails(stubs(lambda h, b: send(h, 200, raw=answer)).url, match)


def test_unknown_ids_and_duplicates(stubs, token):
    with pytest.raises(BackendError, match=r"1 returned ids are not in .*'zz9'"):
        search(stubs(lambda h, b: send(h, 200, hits(["d1", "zz9"]))).url)
    run = search(stubs(lambda h, b: send(h, 200, hits(["d2", "d1", "d2"], [3, 2, 1]))).url)
    assert run.ranking("q7") == [("d2", 3.0), ("d1", 2.0)]
    assert run.metadata["duplicate_ids_dropped"] == 1


def test_429_with_retry_after_then_success(stubs, token):
    state = {"n": 0}

    def behaviour(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        state["n"] += 1
        if state["n"] == 1:
            send(h, 429, {"error": "slow down"}, headers={"Retry-After": "0.3"})
        else:
            send(h, 200, hits(["d2", "d1"], [2.0, 1.0]))
    stub = stubs(behaviour)
    t0 = time.monotonic()
    run = search(stub.url, retries=2)
    assert time.monotonic() - t0 >= 0.3  # the service's Retry-After was honoured
    assert [d for d, _ in run.ranking("q7")] == ["d2", "d1"] and len(stub.requests) == 2
    assert stub.requests[0]["auth"] == f"Bearer {TOKEN}"


def test_500s_are_retried_then_one_error(stubs, token):
    stub = stubs(lambda h, b: send(h, 503, {"error": f"echo {h.headers['Authorization']}"}))
    text = fails(stub.url, "failed after 3 attempts", retries=2)
    assert len(stub.requests) == 3 and "[redacted]" in text


def test_4xx_is_not_retried_and_its_body_cannot_drive_the_terminal(stubs, token):
    stub = stubs(lambda h, b: send(h, 400, raw=b'{"error": "bad \x1b[2J\x1b]0;owned\x07"}'))
    text = fails(stub.url, "refused the request.*HTTP 400", retries=3)
    assert len(stub.requests) == 1 and "\x1b" not in text and "\x07" not in text


def test_redirect_to_another_host_never_gets_the_credential(stubs, token):
    other = stubs(lambda h, b: send(h, 200, hits(["d1"])))
    first = stubs(lambda h, b: send(h, 307, {}, headers={"Location": other.url}))
    fails(first.url, "redirected to another origin.*SB_SEARCH_TOKEN")
    assert other.requests == [] and first.requests[0]["auth"] == f"Bearer {TOKEN}"


def test_huge_body_is_cut(stubs, token):
    big = json.dumps(hits(["d1"] * 40_000)).encode()
    fails(stubs(lambda h, b: send(h, 200, raw=big)).url, "larger than", max_body=2**16)


def test_slow_body_hits_the_deadline(stubs, token):
    def trickle(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        data = json.dumps(hits(["d1"])).encode()
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        for byte in data:
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
            time.sleep(0.05)
    fails(stubs(trickle).url, "within the timeout of 0.5 s", timeout=0.5)


def test_concurrency_is_bounded(stubs, token):
    live = {"now": 0, "max": 0}
    lock = threading.Lock()

    def behaviour(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with lock:
            live["now"] += 1
            live["max"] = max(live["max"], live["now"])
        time.sleep(0.05)
        with lock:
            live["now"] -= 1
        send(h, 200, hits(["d1"]))
    queries = sb.Queries.from_dict({f"q{i}": "x" for i in range(12)})
    run = retriever(stubs(behaviour).url, headers=None, concurrency=3).index(CORPUS).search(
        queries, k=1)
    assert run.n_queries == 12 and 1 <= live["max"] <= 3
    assert np.all(run.scores == 1.0)


def test_experiment_toml_runs_http_alone_and_fused_with_bm25(service, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.setenv("SB_SEARCH_TOKEN", TOKEN)
    config = tmp_path / "exp.toml"
    config.write_text(f"""evalset = "pyref"
measures = ["nDCG@10"]
[[retrievers]]
type = "bm25"
[[retrievers]]
name = "search"
type = "http"
endpoint = "{service["url"]}/search"
request = '{{"q": "{{query}}", "k": {{k}}}}'
scores = '$.hits[*].score'
headers = {{"X-Tenant" = "a"}}
auth_env = "SB_SEARCH_TOKEN"
[[retrievers]]
name = "fused"
type = "hybrid"
of = ["bm25", "search"]
""")
    assert main(["experiment", "run", str(config)]) == 0
    out = "".join(capsys.readouterr())  # progress lines go to stderr
    ndcg = {line.split()[2]: line.split()[3] for line in out.splitlines()
            if line.strip().startswith("done")}
    # the service ranks with the same BM25: identical runs, and RRF of two identical runs
    # keeps their order
    assert ndcg["search"] == ndcg["bm25"] == ndcg["fused"]
    config.write_text(config.read_text().replace('measures', 'chunkers = ["tokens:64"]\nmeasures'))
    assert main(["experiment", "run", str(config)]) == 1  # refused before any work
    assert "retrievers.search: an http retriever answers whole documents" in \
        capsys.readouterr().err
    assert TOKEN not in out
