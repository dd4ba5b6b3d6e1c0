"""Secrets echoed back by hostile services never reach the user's screen or files, URL
parse errors hold no password, and a failing batch of requests stops at once.

Every command runs as its own process (``python -m searchbench …``), so the secrets it
redacts are the ones it holds itself, not ones an earlier test left in this process. The
services are real HTTP servers on 127.0.0.1 that echo the bearer token, the ``--header``
value and the URL's password in error bodies (before and across the 80/200-character cuts
messages make), in JSON ids, in non-JSON answers, in completions, in redirects and in
response headers, as is and encoded. The check scans stdout, stderr and every file the
command wrote (run, sidecar, caches, stores, questions) for each secret and for every piece
of 8 characters of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jsonpath_ng")

TOKEN = "sk-live/9f3c+2a7b=e1d04c55a8e6b2f10d7c93ab"  # '/', '+', '=': encodings differ
HEADER = "hv-7Qz9KpL2mXw4RtY8nB"
PASSWORD = "Pw-3kd93jdmq0zR"
SECRETS = (TOKEN, HEADER, PASSWORD)
SRC = str(Path(__file__).resolve().parents[2] / "src")

Reply = tuple[int, dict[str, str], bytes]


# -- helpers -----------------------------------------------------------------------------------
class Echo:
    """A loopback HTTP server answering every POST with ``behaviour(handler, body)``;
    counts the requests it received."""

    def __init__(self, behaviour: Callable[[BaseHTTPRequestHandler, Any], Reply]) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"null")
                owner.requests.append({"headers": dict(self.headers), "body": body})
                status, headers, data = behaviour(self, body)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture()
def serve() -> Iterator[Callable[..., Echo]]:
    made: list[Echo] = []

    def make(behaviour: Callable[[BaseHTTPRequestHandler, Any], Reply]) -> Echo:
        made.append(Echo(behaviour))
        return made[-1]
    yield make
    for server in made:
        server.close()


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``searchbench ARGS`` in a process of its own (the secrets in its environment)."""
    full = {**os.environ, "PYTHONPATH": SRC, "SB_TOKEN": TOKEN, "SB_KEY": TOKEN,
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "SEARCHBENCH_CACHE": str(cwd / ".cache"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "searchbench", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout)


def one_error(proc: subprocess.CompletedProcess[str]) -> bool:
    """stderr ends with exactly one ``error:`` line."""
    lines = proc.stderr.splitlines()
    return bool(lines) and lines[-1].startswith("error: ") and \
        sum(line.startswith("error: ") for line in lines) == 1


def leaks(text: str, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    """Each secret, or piece of 8 characters of one, found in ``text`` (any case)."""
    low = text.lower()
    return sorted({s[i:i + 8] for s in secrets for i in range(len(s) - 7)
                   if s[i:i + 8].lower() in low})


def written(root: Path, inputs: tuple[str, ...] = ()) -> str:
    """Every file under ``root`` (the command's outputs, caches and stores) but the
    ``inputs`` the user wrote, as text."""
    return "\n".join(p.read_bytes().decode("utf-8", "replace")
                     for p in sorted(root.rglob("*")) if p.is_file() and p.name not in inputs)


def assert_no_secret(proc: subprocess.CompletedProcess[str], root: Path,
                     secrets: tuple[str, ...] = SECRETS, inputs: tuple[str, ...] = ()) -> None:
    """No piece of 8 characters of any of ``secrets`` (the ones the command holds) in
    its stdout, stderr or any file under ``root`` but the ``inputs``."""
    for where, text in (("stdout", proc.stdout), ("stderr", proc.stderr),
                        ("files", written(root, inputs))):
        found = leaks(text, secrets)
        assert not found, f"secret pieces {found} in {where}: {text[-2000:]}"


def evalset(root: Path, n_queries: int = 2) -> Path:
    """A small native evaluation set (3 documents, ``n_queries`` judged queries)."""
    folder = root / "set"
    folder.mkdir(parents=True)
    docs = {"d1": "alpha apples", "d2": "beta bananas", "d3": "gamma grapes"}
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"id": d, "title": "", "text": t}) + "\n" for d, t in docs.items()))
    qids = [f"q{i}" for i in range(n_queries)]
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"id": q, "text": f"alpha {q}"}) + "\n" for q in qids))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\td1\t1\n" for q in qids))
    return folder


def echoed(pad: int = 0) -> str:
    """Every secret, each at ``pad`` characters into its own part: as is, URL-encoded,
    JSON-escaped with '\\/', as a bearer credential."""
    filler = "x" * pad
    return " | ".join([filler + TOKEN + HEADER + PASSWORD,
                       filler + urllib.parse.quote(TOKEN, ""),
                       filler + json.dumps(TOKEN)[1:-1].replace("/", "\\/"),
                       filler + f"Authorization: Bearer {TOKEN}, X-Api-Key: {HEADER}"])


def body(payload: Any) -> bytes:
    return json.dumps(payload).encode()


# -- the search service: run -r http -----------------------------------------------------------
def hits(*ids: Any) -> bytes:
    return body({"hits": [{"id": i, "score": 1.0} for i in ids]})


SEARCH_CASES: dict[str, Callable[[int], Reply]] = {
    # error bodies, the secrets before, across and after the 80- and 200-character cuts
    "400 body, cut at 80": lambda port: (400, {}, body({"error": echoed(60)})),
    "400 body, cut at 200": lambda port: (400, {}, body({"error": echoed(185)})),
    "503 body, retried": lambda port: (503, {}, body({"error": echoed(190)})),
    "429 body, retried": lambda port: (429, {"Retry-After": "0"}, echoed(70).encode()),
    # ids that are the secrets (unknown ids), or objects holding them (wrong id type)
    "unknown ids": lambda port: (200, {}, hits("d1", TOKEN, HEADER, PASSWORD)),
    "ids escaped": lambda port: (200, {}, hits(urllib.parse.quote(TOKEN, ""),
                                               "\\/".join(TOKEN.split("/")))),
    "object id": lambda port: (200, {}, hits({"k": "x" * 20 + TOKEN})),
    "long id": lambda port: (200, {}, hits("x" * 50 + TOKEN + HEADER)),
    # answers that are not JSON, not the expected shape, scores that are not numbers
    "not JSON": lambda port: (200, {}, ("<html>" + echoed(70) + "</html>").encode()),
    "not JSON, control chars": lambda port: (
        200, {}, ("\x1b[2J" + TOKEN[:20] + "\n\x00" + TOKEN[20:] + HEADER).encode()),
    "bad score": lambda port: (200, {}, body({"hits": [{"id": "d1", "score": TOKEN}]})),
    # a redirect to a host named after a secret; secrets in the answer's headers
    "redirect": lambda port: (307, {"Location": f"http://{HEADER.lower()}.example:1/x"}, b""),
    "headers": lambda port: (401, {"X-Echo": TOKEN, "WWW-Authenticate": f"Bearer {HEADER}"},
                             body({"error": "no"})),
}


def endpoint(port: int, path: str = "/search") -> str:
    return f"http://user:{PASSWORD}@127.0.0.1:{port}{path}"


def run_http(server: Echo, root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli("run", str(root / "set"), "-r", "http", "--endpoint", endpoint(server.port),
               "--request", '{"q": "{query}", "k": {k}}', "--scores", "$.hits[*].score",
               "--auth-env", "SB_TOKEN",
               "--header", f"X-Api-Key: {HEADER}", "--retries", "1", "--timeout", "5",
               "-o", str(root / "out" / "run.trec"), *extra, cwd=root)


@pytest.mark.parametrize("case", list(SEARCH_CASES))
def test_secrets_echoed_by_a_search_service_are_never_shown(serve, tmp_path, case):
    evalset(tmp_path)
    server = serve(lambda h, b: SEARCH_CASES[case](0))
    proc = run_http(server, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert one_error(proc) and "Traceback" not in proc.stderr, proc.stderr
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert server.requests[0]["headers"]["X-Api-Key"] == HEADER
    assert_no_secret(proc, tmp_path)


def test_a_run_echoing_secrets_writes_none_to_the_run_or_sidecar(serve, tmp_path):
    """A successful run: the answers echo every secret beside the ids; the sidecar holds
    the command line (with the --header value and the URL's password) and the settings."""
    evalset(tmp_path)
    server = serve(lambda h, b: (200, {"X-Echo": TOKEN}, body({
        "echo": echoed(10), "hits": [{"id": "d1", "score": 2.0, "why": TOKEN}]})))
    body_key = "tk-body-Xy7Pq9Lm2N"  # a credential field of the request template
    proc = run_http(server, tmp_path, f"--header=X-Other: {HEADER}", "--request",
                    '{"q": "{query}", "k": {k}, "api_key": "' + body_key + '"}')
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["body"]["api_key"] == body_key
    side = json.loads((tmp_path / "out" / "run.trec.json").read_text())
    assert "X-Api-Key: [redacted]" in side["command"]
    assert "--header=X-Other: [redacted]" in side["command"]
    assert side["retrieval"]["headers"] == ["X-Api-Key", "X-Other"]  # names only
    assert (tmp_path / "out" / "run.trec").read_text().split()[2] == "d1"
    assert_no_secret(proc, tmp_path, (*SECRETS, body_key))


def test_an_experiment_stores_and_reports_no_secret(serve, tmp_path):
    """An http retriever in an experiment config: header value and URL password in the
    TOML, the key in the environment, every secret echoed in the answers; neither the
    results store (config text, settings, provenance) nor the reports hold them."""
    evalset(tmp_path)
    server = serve(lambda h, b: (200, {}, body({
        "echo": echoed(5), "hits": [{"id": "d1", "score": 2.0}, {"id": "d2", "score": 1.0}]})))
    (tmp_path / "exp.toml").write_text(f"""evalset = "set"
measures = ["nDCG@10"]
[[retrievers]]
name = "search"
type = "http"
endpoint = "{endpoint(server.port)}"
request = '{{"q": "{{query}}", "k": {{k}}}}'
scores = '$.hits[*].score'
headers = {{"X-Api-Key" = "{HEADER}"}}
auth_env = "SB_TOKEN"
""")
    proc = cli("experiment", "run", "exp.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["headers"]["X-Api-Key"] == HEADER
    report = cli("experiment", "report", "exp.toml", "-f", "all", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert any(tmp_path.glob("report/*.html")), report.stdout
    assert_no_secret(proc, tmp_path, inputs=("exp.toml",))
    # the report's process never held the secrets: the store was written without them
    assert_no_secret(report, tmp_path, inputs=("exp.toml",))


# -- the chat endpoint: judge llm and synth ----------------------------------------------------
def completion(text: str) -> bytes:
    return body({"choices": [{"message": {"role": "assistant", "content": text}}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 2}})


CHAT_CASES: dict[str, Reply] = {
    "400 body, cut at 80": (400, {}, body({"error": echoed(60)})),
    "400 body, cut at 200": (400, {}, body({"error": echoed(185)})),
    "503 body, retried": (503, {}, body({"error": echoed(190)})),
    "not JSON": (200, {}, ("<html>" + echoed(65)).encode()),
    "not a completion": (200, {}, body({"choices": echoed(70)})),
    "answer not a grade": (200, {}, completion("I cannot say. " + echoed(30))),
    "grade with the key in its reasoning": (
        200, {}, completion(f"The key {TOKEN} was sent.\n##final score: 2")),
}


@pytest.fixture()
def judged_set(tmp_path: Path) -> Path:
    from searchbench.judging.labels import PoolItem, write_pool

    folder = evalset(tmp_path)
    write_pool(folder / "pool.jsonl", [PoolItem("q0", d, 1, r)
                                        for r, d in enumerate(("d1", "d2"), 1)])
    return folder


@pytest.mark.parametrize("case", list(CHAT_CASES))
def test_secrets_echoed_by_a_chat_endpoint_are_never_shown_or_stored(serve, judged_set,
                                                                    tmp_path, case):
    server = serve(lambda h, b: CHAT_CASES[case])
    proc = cli("judge", "llm", str(judged_set), "--pool", str(judged_set / "pool.jsonl"),
               "--endpoint", f"http://u:{PASSWORD}@127.0.0.1:{server.port}/v1",
               "--model", "m", "--api-key-env", "SB_KEY", "--retries", "1", "--timeout", "5",
               cwd=tmp_path)
    assert proc.returncode == (0 if CHAT_CASES[case][0] == 200 and "grade" in case else 1), \
        proc.stderr
    assert "Traceback" not in proc.stderr
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    # the key and the URL's password (judge llm takes no --header); cache and store included
    assert_no_secret(proc, tmp_path, (TOKEN, PASSWORD))


def test_synth_questions_echoing_the_key_are_written_without_it(serve, tmp_path):
    pytest.importorskip("sentence_transformers")
    folder = evalset(tmp_path)

    def behaviour(h: BaseHTTPRequestHandler, b: Any) -> Reply:
        prompt = b["messages"][-1]["content"]
        if "<<<QUERY" in prompt:  # the answerability check
            return 200, {}, completion(f"{TOKEN}\n##final score: 3")
        return 200, {}, completion(json.dumps({"questions": [
            f"which fruit is alpha apples {TOKEN}", f"what is {PASSWORD} beside apples"]}))
    server = serve(behaviour)
    proc = cli("synth", str(folder), "--endpoint",
               f"http://u:{PASSWORD}@127.0.0.1:{server.port}/v1", "--model", "m",
               "--api-key-env", "SB_KEY", "-o", str(tmp_path / "synth.jsonl"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[redacted]" in (tmp_path / "synth.jsonl").read_text()
    assert_no_secret(proc, tmp_path, (TOKEN, PASSWORD))


# -- URL parse errors --------------------------------------------------------------------------
BAD_URLS = [  # the parser takes (part of) the password for a port, or fails on the host
    f"pgvector://user:{PASSWORD}/x@/app?table=docs",
    f"pgvector://user:{PASSWORD}/app?table=docs",  # no '@': the password read as a port
    f"pgvector://user:{PASSWORD}@127.0.0.1:99999/app?table=docs",
    f"pgvector://user:{PASSWORD}@[::1/app?table=docs",
    f"qdrant://user:{PASSWORD}#x@127.0.0.1:6333?collection=c",
]
BAD_ENDPOINTS = [f"http://user:{PASSWORD}/x@127.0.0.1:1/search",
                 f"https://u:{PASSWORD}@[fe80::1/v1", f"http://u:{PASSWORD}@127.0.0.1:70000/v1"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_store_url_parse_errors_hold_no_password(tmp_path, url):
    evalset(tmp_path)
    for args in (["run", str(tmp_path / "set"), "-r", "db", "--db", url],
                 ["db", "describe", url]):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 1 and one_error(proc), proc.stderr
        assert "not a valid URL" in proc.stderr
        assert_no_secret(proc, tmp_path)


@pytest.mark.parametrize("url", BAD_ENDPOINTS)
def test_endpoint_parse_errors_hold_no_password(tmp_path, url):
    folder = evalset(tmp_path)
    (folder / "pool.jsonl").write_text("")
    for args in (["run", str(folder), "-r", "http", "--endpoint", url],
                 ["run", str(folder), "-r", "dense", "--model", "openai:m", "--endpoint", url],
                 ["judge", "llm", str(folder), "--pool", str(folder / "pool.jsonl"),
                  "--endpoint", url, "--model", "m"]):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 1 and one_error(proc), proc.stderr
        assert "not a valid URL" in proc.stderr and "Traceback" not in proc.stderr
        assert_no_secret(proc, tmp_path)


# -- a failing batch stops at once -------------------------------------------------------------
FOREVER = ["1000000000", "Fri, 31 Dec 9999 23:59:59 GMT", "86400"]


@pytest.mark.parametrize("retry_after", FOREVER)
def test_a_service_asking_to_wait_forever_fails_the_run_at_once(serve, tmp_path, retry_after):
    """429 with a huge Retry-After: the first query fails without waiting (more than the
    60 s budget per request), the other queries are never sent, exit 1."""
    evalset(tmp_path, n_queries=5)
    server = serve(lambda h, b: (429, {"Retry-After": retry_after}, body({"error": "later"})))
    t0 = time.monotonic()
    proc = cli("run", str(tmp_path / "set"), "-r", "http", "--endpoint",
               f"http://127.0.0.1:{server.port}/search", "--retries", "1",
               "--concurrency", "1", "-o", str(tmp_path / "run.trec"), cwd=tmp_path)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 1 and "Retry-After" in proc.stderr, proc.stderr
    assert len(server.requests) == 1  # the pending queries were not sent
    assert elapsed < 60  # the documented bound is (retries + 1) x timeout + 60 s = 80 s


def test_a_failure_stops_queries_in_flight_and_pending(serve, tmp_path):
    """Concurrency 2: one query hangs, another is refused; the run ends without waiting
    for the hanging one (its connection is shut) and sends no further query."""
    evalset(tmp_path, n_queries=12)
    release, hanging = threading.Event(), threading.Event()

    def behaviour(h: BaseHTTPRequestHandler, b: Any) -> Reply:
        if b["query"] == "alpha q0":
            hanging.set()
            release.wait(30)  # hangs far longer than the test waits
            return 200, {}, hits("d1")
        hanging.wait(10)  # refuse once q0 is surely in flight
        return 400, {}, body({"error": "refused"})
    server = serve(behaviour)
    t0 = time.monotonic()
    try:
        proc = cli("run", str(tmp_path / "set"), "-r", "http", "--endpoint",
                   f"http://127.0.0.1:{server.port}/search", "--retries", "0",
                   "--concurrency", "2", "--timeout", "60", "-o", str(tmp_path / "run.trec"),
                   cwd=tmp_path)
    finally:
        release.set()
    assert proc.returncode == 1 and "HTTP 400" in proc.stderr, proc.stderr
    assert time.monotonic() - t0 < 25  # not the 30 s hang, nor the 60 s timeout
    assert len(server.requests) == 2  # q0 (hung) and q1 (refused); q2…q11 never sent


def test_judge_llm_stops_at_a_huge_retry_after(serve, judged_set, tmp_path):
    server = serve(lambda h, b: (429, {"Retry-After": FOREVER[0]}, body({"error": "later"})))
    proc = cli("judge", "llm", str(judged_set), "--pool", str(judged_set / "pool.jsonl"),
               "--endpoint", f"http://127.0.0.1:{server.port}/v1", "--model", "m",
               "--retries", "3", "--concurrency", "1", cwd=tmp_path)
    assert proc.returncode == 1 and "Retry-After" in proc.stderr, proc.stderr
    assert len(server.requests) == 1
