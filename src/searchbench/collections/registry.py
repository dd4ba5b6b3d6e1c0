"""Names of evaluation sets → loaders: ``sb.load_evalset(spec, split=...)``.

=========================  ===========================================================
spec                       what it loads
=========================  ===========================================================
``pyref``                  the built-in set (files in ``searchbench/collections/pyref``)
``DIR`` / ``native:DIR``   a native folder (``corpus.jsonl``, ``queries.jsonl``,
                           ``qrels.tsv``, optional ``evidence.jsonl``); a folder with a
                           ``qrels/`` sub-folder is read as BEIR
``beir:DIR``               a BEIR folder, ``split`` (default ``test``)
``beir-download:NAME``     a public BEIR set, downloaded once and cached (see
                           :mod:`searchbench.collections.download`)
``cranfield:DIR`` …        the classic collections: ``cranfield``, ``cisi``, ``med``,
                           ``cacm``, ``vaswani`` (see :mod:`.classic`)
``trec:DOCS,TOPICS,QRELS``  TREC SGML documents, ``<top>`` topics and TREC qrels
=========================  ===========================================================
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._util import path_exists, safe_component
from ..data import EvalSet, read_beir, read_native
from ..errors import ConfigError
from .classic import CLASSIC
from .download import BEIR_MD5, beir_folder, cache_root

__all__ = ["PYREF_DIR", "list_datasets", "load_evalset"]

PYREF_DIR = Path(__file__).resolve().parent / "pyref"
_PREFIXES = ("native", "beir", "beir-download", *CLASSIC)
_ARG = {"beir-download": "NAME", "trec": "DOCS,TOPICS,QRELS"}


def load_evalset(
    spec: str | os.PathLike[str] | EvalSet,
    split: str = "test",
    *,
    strict: bool = True,
    ignore_identical_ids: bool = False,
    data_dir: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    quiet: bool | None = None,
) -> EvalSet:
    """Load an evaluation set by name or folder (see the module docstring for specs).

    ``strict=False`` loads a native/BEIR set with fixable problems (duplicate ids, quotes
    not found) recorded in ``es.issues`` instead of raising — what ``evalset check`` uses.
    ``ignore_identical_ids`` (BEIR, for ArguAna) drops hits whose doc id equals the query
    id when the set prepares a run. ``data_dir``/``cache_dir`` serve ``beir-download``,
    whose progress bar shows on a terminal unless ``quiet``.
    """
    if isinstance(spec, EvalSet):
        return spec
    safe_component(split, "split")  # it names qrels/<split>.tsv: no '/', '..', NUL…
    kind, arg = parse_spec(spec)
    if kind == "pyref":
        return _pyref(strict)
    if kind == "native":
        return _folder(arg, split, strict, ignore_identical_ids)
    if kind == "beir":
        return read_beir(arg, split, strict=strict, ignore_identical_ids=ignore_identical_ids)
    if kind == "beir-download":
        folder = beir_folder(arg, cache_dir=cache_dir, data_dir=data_dir, quiet=quiet)
        es = read_beir(folder, split, strict=strict, name=arg,
                       ignore_identical_ids=ignore_identical_ids)
        es.provenance["format"] = "beir-download"
        es.provenance["md5"] = BEIR_MD5[arg.partition("/")[0]]
        return es
    loader = CLASSIC[kind][0]
    es = loader(arg)
    es.provenance["spec"] = str(spec)
    return es


def parse_spec(spec: str | os.PathLike[str]) -> tuple[str, str]:
    """``"beir:path"`` → ``("beir", "path")``; a bare path → ``("native", path)``."""
    text = os.fspath(spec)
    if text == "pyref":
        return "pyref", ""
    prefix, sep, rest = text.partition(":")
    if sep and prefix in _PREFIXES:
        if not rest:
            raise ConfigError(f"evaluation set {text!r}: nothing after '{prefix}:'; expected "
                              f"'{prefix}:{_ARG.get(prefix, 'DIR')}'")
        return prefix, rest
    if sep and len(prefix) > 1 and not path_exists(text):
        raise ConfigError(
            f"unknown evaluation set {text!r}; expected 'pyref', a folder, or one of "
            + ", ".join(f"{p}:{_ARG.get(p, 'DIR')}" for p in _PREFIXES[1:]))
    return "native", text


def _folder(path: str, split: str, strict: bool, ignore_identical_ids: bool) -> EvalSet:
    root = Path(path)
    if not path_exists(root):
        raise ConfigError(f"{path}: no such folder; expected an evaluation set folder or a "
                          "name such as 'pyref' (see: searchbench datasets list)")
    if (root / "qrels").is_dir() and not (root / "qrels.tsv").exists():
        return read_beir(root, split, strict=strict, ignore_identical_ids=ignore_identical_ids)
    return read_native(root, strict=strict)


def _pyref(strict: bool) -> EvalSet:
    if not (PYREF_DIR / "queries.jsonl").is_file():
        raise ConfigError(f"the built-in set 'pyref' is not part of this installation yet "
                          f"(expected its files in {PYREF_DIR}); use a folder or a BEIR set")
    es = read_native(PYREF_DIR, strict=strict, name="pyref")
    es.provenance.update(format="builtin", spec="pyref")
    return es


def list_datasets() -> list[dict[str, Any]]:
    """Every set the registry knows: built-in, folder loaders and downloadable BEIR sets."""
    rows: list[dict[str, Any]] = [{
        "spec": "pyref", "kind": "built-in",
        "available": (PYREF_DIR / "queries.jsonl").is_file(),
        "description": "Python language & library reference topics, curated queries "
                       "with evidence quotes (offline)"}]
    rows.append({"spec": "DIR | native:DIR", "kind": "folder", "available": True,
                 "description": "native folder: corpus.jsonl, queries.jsonl, qrels.tsv"})
    rows.append({"spec": "beir:DIR", "kind": "folder", "available": True,
                 "description": "BEIR folder (corpus, queries, qrels/<split>.tsv)"})
    for name, (_, desc) in CLASSIC.items():
        spec = "trec:DOCS,TOPICS,QRELS" if name == "trec" else f"{name}:DIR"
        rows.append({"spec": spec, "kind": "files" if name == "trec" else "folder",
                     "available": True, "description": desc})
    cache = cache_root()
    for name in BEIR_MD5:
        rows.append({"spec": f"beir-download:{name}", "kind": "download",
                     "available": (cache / "beir" / name / ".complete").is_file(),
                     "description": f"BEIR {name} (md5 {BEIR_MD5[name]})"})
    return rows
