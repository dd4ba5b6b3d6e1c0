"""Freeze CPython's ``pydoc_data.topics`` into the built-in ``pyref`` corpus.

The Python language and library reference topics (PSF licence) shipped with CPython become
``src/searchbench/collections/pyref/corpus.jsonl.gz``: one JSON line per topic, sorted by
id, keys sorted, gzip with mtime 0 and no file name, so the same Python version always
writes byte-identical output. The file is committed; this script is only rerun on purpose
(it refuses a Python other than 3.11 unless ``--any-python`` is given, because the topics
change between versions and the judgments in ``qrels.tsv`` were made on 3.11's text).

Usage::

    python scripts/build_pyref_corpus.py            # writes the file, prints its hashes
    python scripts/build_pyref_corpus.py --check    # exits 1 if the file would change
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import platform
import sys
from pathlib import Path

OUT = (
    Path(__file__).resolve().parent.parent
    / "src" / "searchbench" / "collections" / "pyref" / "corpus.jsonl.gz"
)


def title_of(text: str, key: str) -> str:
    """The topic's first heading line: the line underlined by ``*`` (or its first line)."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        under = lines[i + 1].strip()
        if line.strip() and under and set(under) <= {"*", "="}:
            return line.strip()
    first = next((ln.strip() for ln in lines if ln.strip()), key)
    return first


def build_lines() -> bytes:
    """The uncompressed JSONL content, deterministic for a given set of topics."""
    from pydoc_data.topics import topics

    version = platform.python_version()
    out = io.StringIO()
    for key in sorted(topics):
        text = topics[key]
        record = {
            "id": key,
            "title": title_of(text, key),
            "text": text,
            "metadata": {"source": "pydoc_data.topics", "python_version": version},
        }
        out.write(json.dumps(record, sort_keys=True, ensure_ascii=False))
        out.write("\n")
    return out.getvalue().encode("utf-8")


def gzip_bytes(raw: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output .jsonl.gz path")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--any-python", action="store_true", help="allow a Python other than 3.11")
    args = parser.parse_args(argv)

    if sys.version_info[:2] != (3, 11) and not args.any_python:
        print(
            f"error: running Python {platform.python_version()}, expected 3.11.x: the pyref "
            "judgments were made on 3.11's topics; pass --any-python to rebuild anyway",
            file=sys.stderr,
        )
        return 1
    raw = build_lines()
    data = gzip_bytes(raw)
    content_sha = hashlib.sha256(raw).hexdigest()
    if args.check:
        current = gzip.decompress(args.out.read_bytes()) if args.out.exists() else b""
        same = hashlib.sha256(current).hexdigest() == content_sha
        print(f"{args.out}: {'up to date' if same else 'DIFFERS'} (content sha256 {content_sha})")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    n = raw.count(b"\n")
    print(f"wrote {args.out} ({n} documents, {len(data)} bytes)")
    print(f"content sha256 (uncompressed JSONL): {content_sha}")
    print(f"file sha256 (gzip):                  {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
