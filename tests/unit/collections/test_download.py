"""beir-download end to end against a local HTTP server on 127.0.0.1 (no outside network)."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import searchbench as sb
from searchbench.collections import download
from searchbench.errors import BackendError, ConfigError


def build_zip(*prefixes: str) -> bytes:
    """A BEIR zip with one set under each prefix (``tiny/`` by default, ``""`` = at the root)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for prefix in prefixes or ("tiny/",):
            docs = [{"_id": f"d{i}", "title": "", "text": f"document number {i} " * 50}
                    for i in range(40)]
            zf.writestr(f"{prefix}corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
            zf.writestr(f"{prefix}queries.jsonl", '{"_id": "q1", "text": "number 3"}\n'
                                                  '{"_id": "q2", "text": "number 7"}\n')
            zf.writestr(f"{prefix}qrels/test.tsv",
                        "query-id\tcorpus-id\tscore\nq1\td3\t1\nq2\td7\t1\n")
    return buf.getvalue()


class Server:
    """Serves one payload at /tiny.zip; honours Range when ``ranges`` is True."""

    def __init__(self, payload: bytes, ranges: bool = True) -> None:
        self.payload, self.ranges, self.requests = payload, ranges, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(dict(self.headers))
                if self.path != "/tiny.zip":
                    self.send_error(404)
                    return
                body, status = outer.payload, 200
                rng = self.headers.get("Range")
                if rng and outer.ranges:
                    start = int(rng.split("=")[1].rstrip("-"))
                    if start >= len(body):
                        self.send_error(416)
                        return
                    body, status = body[start:], 206
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def payload() -> bytes:
    return build_zip()


@pytest.fixture
def server(payload: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Server]:
    srv = Server(payload)
    monkeypatch.setitem(download.BEIR_MD5, "tiny", hashlib.md5(payload).hexdigest())
    monkeypatch.setenv("SEARCHBENCH_BEIR_URL", srv.url)
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SEARCHBENCH_DATA_DIR", raising=False)
    yield srv
    srv.close()


def test_download_verify_extract_and_cache(server: Server, tmp_path: Path) -> None:
    es = sb.load_evalset("beir-download:tiny")
    assert (len(es.corpus), len(es.queries), len(es.qrels)) == (40, 2, 2)
    assert es.provenance["format"] == "beir-download" and es.name == "tiny"
    beir = tmp_path / "cache" / "beir"
    assert (beir / "tiny" / ".complete").is_file() and (beir / "tiny.zip").is_file()
    assert not list(beir.glob("*.part")) and not list(beir.glob(".tiny.*"))
    sb.load_evalset("beir-download:tiny")
    assert len(server.requests) == 1  # the second load uses the cache


def test_resume_from_a_partial_download(server: Server, payload: bytes, tmp_path: Path) -> None:
    beir = tmp_path / "cache" / "beir"
    beir.mkdir(parents=True)
    (beir / "tiny.zip.part").write_bytes(payload[:1000])
    folder = download.beir_folder("tiny")
    assert server.requests[0]["Range"] == "bytes=1000-"
    assert (beir / "tiny.zip").read_bytes() == payload
    assert (folder / "qrels" / "test.tsv").is_file()


def test_server_without_ranges_restarts(payload: bytes, server: Server, tmp_path: Path) -> None:
    server.ranges = False
    beir = tmp_path / "cache" / "beir"
    beir.mkdir(parents=True)
    (beir / "tiny.zip.part").write_bytes(b"garbage that must not be kept")
    download.beir_folder("tiny")
    assert (beir / "tiny.zip").read_bytes() == payload


def test_checksum_mismatch_removes_the_file(server: Server, monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setitem(download.BEIR_MD5, "tiny", "0" * 32)
    with pytest.raises(BackendError, match="does not match the pinned 0000"):
        sb.load_evalset("beir-download:tiny")
    beir = tmp_path / "cache" / "beir"
    assert not (beir / "tiny.zip").exists() and not (beir / "tiny").exists()


def test_interrupted_extraction_is_redone(server: Server, tmp_path: Path) -> None:
    folder = download.beir_folder("tiny")
    (folder / ".complete").unlink()  # as if the process died before the marker
    (folder / "corpus.jsonl").write_text("broken")
    es = sb.load_evalset("beir-download:tiny")
    assert len(es.corpus) == 40


def test_offline_data_dir(payload: bytes, monkeypatch: pytest.MonkeyPatch,
                          tmp_path: Path) -> None:
    monkeypatch.setitem(download.BEIR_MD5, "tiny", hashlib.md5(payload).hexdigest())
    monkeypatch.setenv("SEARCHBENCH_BEIR_URL", "http://127.0.0.1:9/unreachable")
    offline = tmp_path / "offline"
    offline.mkdir()
    (offline / "tiny.zip").write_bytes(payload)
    es = sb.load_evalset("beir-download:tiny", data_dir=offline, cache_dir=tmp_path / "c")
    assert len(es.corpus) == 40
    with pytest.raises(ConfigError, match=r"holds neither tiny.zip nor an extracted tiny/"):
        download.beir_folder("tiny", data_dir=tmp_path, cache_dir=tmp_path / "c2")
    extracted = tmp_path / "extracted"
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        zf.extractall(extracted)
    monkeypatch.setenv("SEARCHBENCH_DATA_DIR", str(extracted))
    folder = download.beir_folder("tiny", cache_dir=tmp_path / "c3")
    assert folder == extracted / "tiny" and not (tmp_path / "c3").exists()


def test_unknown_name_and_http_errors(server: Server) -> None:
    with pytest.raises(ConfigError, match="unknown BEIR set 'nope'; expected one of arguana"):
        sb.load_evalset("beir-download:nope")
    download.BEIR_MD5["missing"] = "0" * 32
    try:
        with pytest.raises(BackendError, match="HTTP 404"):
            download.beir_folder("missing")
    finally:
        del download.BEIR_MD5["missing"]


def test_pinned_checksums_are_md5_hex() -> None:
    assert download.BEIR_MD5["scifact"] == "5f7d1de60b170fc8027bb7898e2efca1"
    assert all(len(v) == 32 and int(v, 16) >= 0 for v in download.BEIR_MD5.values())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_only(server: Server, payload: bytes, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    download.beir_folder("tiny")
    assert "downloading tiny.zip" in term.getvalue()
    assert (tmp_path / "cache" / "beir" / "tiny.zip").read_bytes() == payload
    quiet = _Terminal()
    monkeypatch.setattr("sys.stderr", quiet)
    download.beir_folder("tiny", cache_dir=tmp_path / "other", quiet=True)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("layout", [("",), ("tiny/a/", "tiny/b/")])
def test_zip_layouts(layout: tuple[str, ...], monkeypatch: pytest.MonkeyPatch,
                     tmp_path: Path) -> None:
    payload = build_zip(*layout)
    srv = Server(payload)
    monkeypatch.setitem(download.BEIR_MD5, "tiny", hashlib.md5(payload).hexdigest())
    monkeypatch.setenv("SEARCHBENCH_BEIR_URL", srv.url)
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    try:
        if layout == ("",):  # files at the zip's root
            assert len(sb.load_evalset("beir-download:tiny").corpus) == 40
            return
        with pytest.raises(ConfigError, match="'tiny' holds sub-sets; expected one of: "
                                              "tiny/a, tiny/b"):
            sb.load_evalset("beir-download:tiny")
        es = sb.load_evalset("beir-download:tiny/b")
        assert es.name == "tiny/b" and len(es.qrels) == 2
        with pytest.raises(ConfigError, match="has no sub-set 'c'"):
            sb.load_evalset("beir-download:tiny/c")
        assert len(srv.requests) == 1
    finally:
        srv.close()
