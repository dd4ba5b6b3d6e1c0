"""Download the public BEIR zip files once, verify the pinned checksum, cache, extract.

* Cache: ``$SEARCHBENCH_CACHE`` (default ``~/.cache/searchbench``) ``/beir/<name>/``.
* Offline machines: ``data_dir=`` / ``--data-dir`` / ``$SEARCHBENCH_DATA_DIR`` points to a
  folder holding ``<name>.zip`` (verified like a download) or an extracted ``<name>/``.
* Safe to interrupt: bytes go to ``<name>.zip.part`` and a later call resumes it with an
  HTTP ``Range`` request (or starts over if the server ignores ranges); the zip is renamed
  into place only after its MD5 matches, and extraction goes to a temporary folder that is
  renamed into place with a ``.complete`` marker last.
* ``$SEARCHBENCH_BEIR_URL`` overrides the base URL (a mirror, or a test server).

The MD5 sums are those BEIR publishes in its README for each zip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from .._util import default_cache_dir, progress, public_mode, replace, write_text
from ..errors import BackendError, ConfigError

__all__ = ["BEIR_MD5", "beir_folder", "cache_root"]

BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
BEIR_MD5 = {
    "arguana": "8ad3e3c2a5867cdced806d6503f29b99",
    "climate-fever": "8b66f0a9126c521bae2bde127b4dc99d",
    "cqadupstack": "4e41456d7df8ee7760a7f866133bda78",
    "dbpedia-entity": "c2a39eb420a3164af735795df012ac2c",
    "fever": "5a818580227bfb4b35bb6fa46d9b6c03",
    "fiqa": "17918ed23cd04fb15047f73e6c3bd9d9",
    "hotpotqa": "f412724f78b0d91183a0e86805e16114",
    "msmarco": "444067daf65d982533ea17ebd59501e4",
    "nfcorpus": "a89dba18a62ef92f7d323ec890a0d38d",
    "nq": "d4d3d2e48787a744b6f6e691ff534307",
    "quora": "18fb154900ba42a600f84b839c173167",
    "scidocs": "38121350fc3a4d2f48850f6aff52e4a9",
    "scifact": "5f7d1de60b170fc8027bb7898e2efca1",
    "trec-covid": "ce62140cb23feb9becf6270d0d1fe6d1",
    "webis-touche2020": "46f650ba5a527fc69e0a6521c5a23563",
}
CHUNK = 1 << 20
MARKER = ".complete"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``cache_dir``, else the searchbench cache (:func:`default_cache_dir`)."""
    return Path(cache_dir).expanduser() if cache_dir else default_cache_dir()


def beir_folder(
    name: str,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    quiet: bool | None = None,
) -> Path:
    """A local folder holding BEIR set ``name`` — from the cache, a local copy, or a download.

    ``NAME/SUB`` picks a sub-set of a zip holding several (``cqadupstack/android``). A
    download shows a progress bar on stderr when it is a terminal and ``quiet`` is not set.
    """
    name, _, sub = name.partition("/")
    folder = _fetch(name, cache_dir, data_dir, base_url, quiet)
    return _subset(folder, name, sub)


def _subset(folder: Path, name: str, sub: str) -> Path:
    """``folder`` itself, or its sub-set ``sub``; a zip of sub-sets needs one named."""
    subsets = sorted(p.name for p in folder.iterdir()
                     if p.is_dir() and any(p.glob("corpus.jsonl*")))
    has_corpus = any(folder.glob("corpus.jsonl*"))
    if sub and sub in subsets:
        return folder / sub
    if sub or not has_corpus:
        raise ConfigError(
            f"BEIR set {name!r} " + (f"has no sub-set {sub!r}" if sub else "holds sub-sets")
            + f"; expected one of: {', '.join(f'{name}/{s}' for s in subsets) or 'none'}")
    return folder


def _fetch(name: str, cache_dir: str | os.PathLike[str] | None,
           data_dir: str | os.PathLike[str] | None, base_url: str | None,
           quiet: bool | None) -> Path:
    md5 = BEIR_MD5.get(name)
    if md5 is None:
        raise ConfigError(f"unknown BEIR set {name!r}; expected one of {', '.join(BEIR_MD5)}")
    root = cache_root(cache_dir) / "beir"
    dest = root / name
    if _complete(dest, md5):
        return dest
    local = data_dir or os.environ.get("SEARCHBENCH_DATA_DIR")
    if local:
        zip_path = _local_copy(Path(local).expanduser(), name)
        if zip_path.is_dir():
            return zip_path
    else:
        zip_path = root / f"{name}.zip"
        if not (zip_path.is_file() and _md5(zip_path) == md5):
            url = f"{(base_url or os.environ.get('SEARCHBENCH_BEIR_URL') or BEIR_URL).rstrip('/')}"
            _download(f"{url}/{name}.zip", zip_path, quiet)
    _verify(zip_path, md5, remove=not local)
    _extract(zip_path, dest, md5)
    return dest


def _local_copy(folder: Path, name: str) -> Path:
    if (folder / name / "corpus.jsonl").is_file() or (folder / name / "corpus.jsonl.gz").is_file():
        return folder / name
    if (folder / f"{name}.zip").is_file():
        return folder / f"{name}.zip"
    raise ConfigError(f"{folder}: holds neither {name}.zip nor an extracted {name}/ folder; "
                      "expected a local copy of the BEIR set (or unset the data dir to download)")


def _complete(dest: Path, md5: str) -> bool:
    marker = dest / MARKER
    return marker.is_file() and marker.read_text().strip() == md5


def _md5(path: Path) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _verify(zip_path: Path, md5: str, remove: bool) -> None:
    got = _md5(zip_path)
    if got != md5:
        if remove:
            zip_path.unlink()  # our own cached download: remove it so the next run refetches
        raise BackendError(f"{zip_path}: MD5 {got} does not match the pinned {md5}; the file "
                           "is corrupt or not the published one — download it again")


def _download(url: str, zip_path: Path, quiet: bool | None = None) -> None:
    """Fetch ``url`` into ``zip_path``, resuming ``zip_path.part`` when the server allows."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    part = zip_path.with_name(zip_path.name + ".part")
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "searchbench"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            resumed = bool(offset) and resp.status == 206
            total = int(resp.headers.get("Content-Length") or 0) + (offset if resumed else 0)
            with open(part, "ab" if resumed else "wb") as out, \
                    progress(total, f"downloading {zip_path.name}", quiet, unit="bytes") as advance:
                advance(offset if resumed else 0)
                for block in iter(lambda: resp.read(CHUNK), b""):
                    out.write(block)
                    advance(len(block))
    except urllib.error.HTTPError as exc:
        if exc.code != 416:  # 416: the part file already holds every byte
            raise BackendError(f"{url}: HTTP {exc.code} {exc.reason}; expected the BEIR zip — "
                               "check the name, or use --data-dir with a local copy") from None
    except (urllib.error.URLError, OSError) as exc:
        raise BackendError(f"{url}: download failed ({exc}); the partial file is kept and the "
                           "next run resumes it; offline: use --data-dir / "
                           "SEARCHBENCH_DATA_DIR with a local copy") from None
    replace(part, zip_path)


def _extract(zip_path: Path, dest: Path, md5: str) -> None:
    """Extract into a temp folder, move the set's folder to ``dest``, write the marker last."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        with zipfile.ZipFile(zip_path) as zf:
            for member in zf.namelist():
                target = (tmp / member).resolve()
                if not target.is_relative_to(tmp.resolve()):
                    raise BackendError(f"{zip_path}: member {member!r} escapes the folder")
            zf.extractall(tmp)
        top = _set_folder(tmp, zip_path)
        write_text(top / MARKER, md5 + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        replace(top, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _set_folder(tmp: Path, zip_path: Path) -> Path:
    """The zip's single top folder (``scifact/``), or the extraction folder itself."""
    if not any(tmp.rglob("corpus.jsonl*")):
        raise BackendError(f"{zip_path}: no corpus.jsonl inside; expected a BEIR zip")
    entries = [p for p in tmp.iterdir() if p.name != "__MACOSX"]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    inner = Path(tempfile.mkdtemp(prefix="set.", dir=tmp))
    os.chmod(inner, public_mode(folder=True))  # it becomes the set's folder: not 0700
    for p in entries:
        replace(p, inner / p.name)
    return inner
