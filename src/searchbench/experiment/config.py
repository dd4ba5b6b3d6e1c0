"""Experiment configuration: a TOML file, validated before any work starts, and its grid.

A config names evaluation sets, retrievers (``[[retrievers]]`` tables), chunkers and
evaluation levels; the grid is their product (:func:`expand_grid`). Every problem raises
one :class:`~searchbench.errors.ConfigError` naming the key and the allowed values.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SearchbenchError

__all__ = ["DEFAULT_MEASURES", "Cell", "ExperimentConfig", "RetrieverSpec", "expand_grid",
           "load_config", "parse_config"]

DEFAULT_MEASURES = ["nDCG@10", "RR@10", "R@10", "R@100", "P@5"]
LEVELS = ("doc", "chunk")
RETRIEVER_TYPES = ("bm25", "dense", "hybrid")
FUSIONS = ("rrf", "weighted")
NORMALIZATIONS = ("minmax", "zscore")

_TOP_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str, "evalset": (str, list), "k": int, "levels": list, "measures": list,
    "chunkers": list, "baseline": str, "test": str, "correction": str, "seed": int,
    "alpha": float, "n_permutations": int, "runs_dir": str, "retrievers": list,
}
_RETRIEVER_KEYS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "bm25": {"k1": (int, float), "b": (int, float), "method": str,
             "stopwords": (str, bool), "stemmer": (str, bool), "with_title": bool},
    "dense": {"model": str, "metric": str, "query_prefix": str, "doc_prefix": str,
              "with_title": bool},
    "hybrid": {"of": list, "fusion": str, "rrf_k": int, "weights": list,
               "normalization": str},
}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", list: "a list",
               bool: "true or false"}


@dataclass(frozen=True)
class RetrieverSpec:
    """One ``[[retrievers]]`` table: a name, a type and its settings."""

    name: str
    type: str
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, **self.settings}


@dataclass(frozen=True)
class Cell:
    """One point of the grid: evaluation set × retriever × chunker × level."""

    evalset: str
    retriever: RetrieverSpec
    chunker: str
    level: str
    k: int

    @property
    def system(self) -> str:
        """The label of this cell in comparisons: ``retriever`` or ``retriever/chunker``."""
        return self.retriever.name if self.chunker == "none" else \
            f"{self.retriever.name}/{self.chunker}"

    def to_dict(self, components: list[RetrieverSpec] = ()) -> dict[str, Any]:
        out = {"evalset": self.evalset, "retriever": self.retriever.to_dict(),
               "chunker": self.chunker, "level": self.level, "k": self.k}
        if components:
            out["components"] = [c.to_dict() for c in components]
        return out

    def key(self, evalset_hash: str, components: list[RetrieverSpec] = ()) -> str:
        """Identity of the work this cell does (same key, same run)."""
        data = {**self.to_dict(components), "evalset_hash": evalset_hash}
        data["retriever"] = {k: v for k, v in data["retriever"].items() if k != "name"}
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:20]


@dataclass
class ExperimentConfig:
    """A validated experiment configuration (see :func:`parse_config`)."""

    name: str
    evalsets: list[str]
    retrievers: list[RetrieverSpec]
    chunkers: list[str] = field(default_factory=lambda: ["none"])
    levels: list[str] = field(default_factory=lambda: ["doc"])
    k: int = 100
    measures: list[str] = field(default_factory=lambda: list(DEFAULT_MEASURES))
    baseline: str | None = None
    test: str = "randomization"
    correction: str = "holm"
    seed: int = 0
    alpha: float = 0.05
    n_permutations: int = 10_000
    runs_dir: str = "runs"
    path: Path | None = None
    text: str = ""

    @property
    def base_dir(self) -> Path:
        """Folder the config's relative paths are resolved against."""
        return self.path.parent if self.path else Path.cwd()

    def retriever(self, name: str) -> RetrieverSpec:
        for r in self.retrievers:
            if r.name == name:
                return r
        raise ConfigError(f"retriever {name!r} is not defined; defined: "
                          f"{', '.join(r.name for r in self.retrievers)}")

    def components(self, spec: RetrieverSpec) -> list[RetrieverSpec]:
        """The retrievers a hybrid fuses (empty for the others)."""
        return [self.retriever(n) for n in spec.settings.get("of", [])]

    def cells(self) -> list[Cell]:
        return expand_grid(self)

    def baseline_system(self) -> str:
        """The baseline cell's system label (default: first retriever, first chunker)."""
        systems = [c.system for c in self.cells()]
        if self.baseline is None:
            return systems[0]
        if self.baseline in systems:
            return self.baseline
        first = [s for s in systems if s.split("/", 1)[0] == self.baseline]
        return first[0]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("text")
        out["path"] = str(self.path) if self.path else None
        out["retrievers"] = [r.to_dict() for r in self.retrievers]
        return out


# -- parsing ----------------------------------------------------------------------------------
def load_config(path: str | os.PathLike[str]) -> ExperimentConfig:
    """Read and validate a TOML config file; relative paths are relative to its folder."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file; create one with "
                          f"'searchbench experiment init {p}'") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot be read ({exc.strerror or exc}); expected a readable "
                          "TOML file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{p}:{line}: byte {raw[exc.start]:#04x} (offset {exc.start}) is not "
                          "valid UTF-8; expected a UTF-8 TOML file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting too deep
        why = "nested too deeply" if isinstance(exc, RecursionError) else \
            "an integer of more than 4300 digits" if "Exceeds the limit" in str(exc) else str(exc)
        raise ConfigError(f"{p}: cannot be read as TOML ({why}); expected an experiment "
                          "config") from None
    cfg = parse_config(data, name=p.stem, where=str(p))
    cfg.path, cfg.text = p.resolve(), text
    validate_resources(cfg)
    return cfg


def parse_config(data: dict[str, Any], name: str = "experiment",
                 where: str = "config") -> ExperimentConfig:
    """Validate a parsed TOML document (no file access, no model loading)."""
    _check_keys(data, _TOP_KEYS, where, "top-level")
    retrievers = _retrievers(data.get("retrievers", []), where)
    cfg = ExperimentConfig(
        name=data.get("name", name), evalsets=_evalsets(data.get("evalset"), where),
        retrievers=retrievers, chunkers=_chunkers(data.get("chunkers", ["none"]), where),
        levels=_levels(data.get("levels", ["doc"]), where), k=_positive(data, "k", 100, where),
        measures=_measures(data.get("measures", DEFAULT_MEASURES), where),
        baseline=data.get("baseline"), seed=data.get("seed", 0),
        test=_stat_name(data, "test", "randomization", where),
        correction=_stat_name(data, "correction", "holm", where),
        alpha=float(data.get("alpha", 0.05)),
        n_permutations=_positive(data, "n_permutations", 10_000, where),
        runs_dir=data.get("runs_dir", "runs"))
    if not cfg.cells():
        raise ConfigError(f"{where}: the grid is empty (retrievers × chunkers × levels gives "
                          "no cell); level 'chunk' needs a chunker other than 'none'")
    _check_baseline(cfg, where)
    return cfg


def _type_ok(value: Any, expected: type | tuple[type, ...]) -> bool:
    types = expected if isinstance(expected, tuple) else (expected,)
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types) or (float in types and isinstance(value, int))


def _check_keys(data: dict[str, Any], allowed: dict[str, Any], where: str, what: str) -> None:
    for key, value in data.items():
        if key not in allowed:
            raise ConfigError(f"{where}: unknown {what} key {key!r}; allowed keys: "
                              f"{', '.join(sorted(allowed))}")
        if not _type_ok(value, allowed[key]):
            types = allowed[key] if isinstance(allowed[key], tuple) else (allowed[key],)
            want = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
            raise ConfigError(f"{where}: key {key!r} is {value!r} "
                              f"({type(value).__name__}); expected {want}")


def _strings(value: Any, key: str, where: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise ConfigError(f"{where}: key {key!r} is {value!r}; expected a list of strings")
    return items


def _evalsets(value: Any, where: str) -> list[str]:
    if value is None:
        raise ConfigError(f"{where}: missing key 'evalset'; expected 'pyref', a folder, or "
                          "beir:DIR, cranfield:DIR, … (see: searchbench datasets list)")
    items = _strings(value, "evalset", where)
    if not items:
        raise ConfigError(f"{where}: key 'evalset' is an empty list; the grid is empty")
    return items


def _levels(value: Any, where: str) -> list[str]:
    items = _strings(value, "levels", where)
    bad = [v for v in items if v not in LEVELS]
    if bad or not items:
        raise ConfigError(f"{where}: key 'levels' has {bad or items!r}; allowed values: "
                          f"{', '.join(LEVELS)} (a non-empty list)")
    return list(dict.fromkeys(items))


def _chunkers(value: Any, where: str) -> list[str]:
    from ..retrieval.chunking import parse_chunker

    items = _strings(value, "chunkers", where)
    for spec in items:
        try:
            parse_chunker(spec)
        except ConfigError as exc:
            raise ConfigError(f"{where}: key 'chunkers': {exc}; or 'none' for whole "
                              "documents") from None
    return list(dict.fromkeys(items))


def _measures(value: Any, where: str) -> list[str]:
    from ..measures import parse_measures

    items = _strings(value, "measures", where)
    if not items:
        raise ConfigError(f"{where}: key 'measures' is empty; e.g. {DEFAULT_MEASURES}")
    try:
        return [m.name for m in parse_measures(items)]
    except SearchbenchError as exc:
        raise ConfigError(f"{where}: key 'measures': {exc}") from None


def _positive(data: dict[str, Any], key: str, default: int, where: str) -> int:
    value = data.get(key, default)
    if value <= 0:
        raise ConfigError(f"{where}: key {key!r} is {value}; expected a positive integer")
    return value


def _stat_name(data: dict[str, Any], key: str, default: str, where: str) -> str:
    from ..stats.corrections import correction_name
    from ..stats.paired import test_name

    try:
        return (test_name if key == "test" else correction_name)(data.get(key, default))
    except SearchbenchError as exc:
        raise ConfigError(f"{where}: key {key!r}: {exc}") from None


def _retrievers(items: Any, where: str) -> list[RetrieverSpec]:
    if not items:
        raise ConfigError(f"{where}: no [[retrievers]]: the grid is empty; add at least one "
                          f"table with type = one of {', '.join(RETRIEVER_TYPES)}")
    out: list[RetrieverSpec] = []
    for i, table in enumerate(items):
        out.append(_retriever(table, f"{where}: retrievers[{i}]"))
    names = [r.name for r in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}: retriever names must be unique; repeated: {dup}")
    for r in out:
        _check_hybrid(r, out, where)
    return out


def _retriever(table: Any, where: str) -> RetrieverSpec:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table ([[retrievers]]), got {table!r}")
    kind = table.get("type")
    if kind not in RETRIEVER_TYPES:
        raise ConfigError(f"{where}: key 'type' is {kind!r}; allowed values: "
                          f"{', '.join(RETRIEVER_TYPES)}")
    allowed = {"name": str, "type": str, **_RETRIEVER_KEYS[kind]}
    _check_keys(table, allowed, where, f"{kind} retriever")
    settings = {k: v for k, v in table.items() if k not in ("name", "type")}
    if kind == "dense" and "model" not in settings:
        raise ConfigError(f"{where}: a dense retriever needs key 'model'; allowed: "
                          f"{', '.join(_model_names())}, sentence-transformers:/path, "
                          "model2vec:/path")
    default = (Path(settings["model"].split(":", 1)[-1]).name or settings["model"]
               if kind == "dense" else kind)
    name = table.get("name", default)
    if "/" in name or not name:
        raise ConfigError(f"{where}: key 'name' is {name!r}; expected a non-empty name "
                          "without '/'")
    return RetrieverSpec(name, kind, settings)


def _check_hybrid(r: RetrieverSpec, all_specs: list[RetrieverSpec], where: str) -> None:
    if r.type != "hybrid":
        return
    s = r.settings
    plain = [x.name for x in all_specs if x.type != "hybrid"]
    parts = s.get("of", [])
    if len(parts) < 2 or any(p not in plain for p in parts):
        raise ConfigError(f"{where}: retriever {r.name!r}: key 'of' is {parts!r}; expected "
                          f"at least 2 names of bm25/dense retrievers: {', '.join(plain)}")
    if s.get("fusion", "rrf") not in FUSIONS:
        raise ConfigError(f"{where}: retriever {r.name!r}: key 'fusion' is "
                          f"{s['fusion']!r}; allowed values: {', '.join(FUSIONS)}")
    if s.get("normalization", "minmax") not in NORMALIZATIONS:
        raise ConfigError(f"{where}: retriever {r.name!r}: key 'normalization' is "
                          f"{s['normalization']!r}; allowed values: {', '.join(NORMALIZATIONS)}")
    weights = s.get("weights")
    if weights is not None and (len(weights) != len(parts) or
                                not all(_type_ok(w, float) for w in weights)):
        raise ConfigError(f"{where}: retriever {r.name!r}: key 'weights' is {weights!r}; "
                          f"expected {len(parts)} numbers, one per entry of 'of'")


def _check_baseline(cfg: ExperimentConfig, where: str) -> None:
    if cfg.baseline is None:
        return
    systems = list(dict.fromkeys(c.system for c in cfg.cells()))
    names = [r.name for r in cfg.retrievers]
    if cfg.baseline not in systems and cfg.baseline not in names:
        raise ConfigError(f"{where}: key 'baseline' is {cfg.baseline!r}; allowed values: "
                          f"{', '.join(dict.fromkeys(names + systems))}")


def expand_grid(cfg: ExperimentConfig) -> list[Cell]:
    """Every cell: evaluation sets × retrievers × chunkers × levels (no chunk level
    without a chunker)."""
    return [Cell(e, r, c, lvl, cfg.k) for e in cfg.evalsets for lvl in cfg.levels
            for c in cfg.chunkers for r in cfg.retrievers
            if not (lvl == "chunk" and c == "none")]


# -- resources (checked before work, without loading anything heavy) --------------------------
def _model_names() -> list[str]:
    from ..retrieval.encoders import available_models

    return [*available_models(), "model2vec"]


def _check_model(spec: str, base: Path, where: str) -> None:
    if spec in _model_names():
        return
    kind, _, rest = spec.partition(":")
    if kind in ("sentence-transformers", "st", "model2vec") and rest:
        path = Path(rest) if Path(rest).is_absolute() else base / rest
        if path.is_dir():
            return
    if kind in ("onnx", "onnx-int8", "openai") and rest:
        return
    if Path(spec).is_dir() or (base / spec).is_dir():
        return
    raise ConfigError(f"{where}: key 'model' is {spec!r}: unknown model and not a local "
                      f"folder (searchbench never downloads models); allowed: "
                      f"{', '.join(_model_names())}, sentence-transformers:/path, "
                      "model2vec:/path, onnx:NAME, openai:MODEL")


def resolve_model(spec: str, base: Path) -> str:
    """``spec`` with a relative local model folder made absolute against ``base``."""
    kind, sep, rest = spec.partition(":")
    if sep and kind in ("sentence-transformers", "st", "model2vec") and rest and \
            not Path(rest).is_absolute() and (base / rest).is_dir():
        return f"{kind}:{(base / rest).resolve()}"
    if not sep and spec not in _model_names() and not Path(spec).is_dir() and \
            (base / spec).is_dir():
        return str((base / spec).resolve())
    return spec


def _check_evalset(spec: str, base: Path, where: str) -> None:
    from ..collections.registry import parse_spec

    try:
        kind, arg = parse_spec(spec)
    except ConfigError as exc:
        raise ConfigError(f"{where}: key 'evalset': {exc}") from None
    if kind in ("pyref", "beir-download"):
        return
    path = Path(arg) if Path(arg).is_absolute() else base / arg
    if not path.exists():
        raise ConfigError(f"{where}: key 'evalset' is {spec!r}: {path} does not exist; "
                          "expected 'pyref', a folder, or beir:DIR, cranfield:DIR, … "
                          "(see: searchbench datasets list)")


def resolve_evalset(spec: str, base: Path) -> str:
    """``spec`` with a relative folder made absolute against the config's folder."""
    from ..collections.registry import parse_spec

    kind, arg = parse_spec(spec)
    if kind in ("pyref", "beir-download") or Path(arg).is_absolute():
        return spec
    full = str((base / arg).resolve())
    return full if kind == "native" and ":" not in spec else f"{kind}:{full}"


def validate_resources(cfg: ExperimentConfig) -> None:
    """Evaluation sets exist and models are known — one clear error before any work."""
    where = str(cfg.path or "config")
    for spec in cfg.evalsets:
        _check_evalset(spec, cfg.base_dir, where)
    for r in cfg.retrievers:
        if r.type == "dense":
            _check_model(r.settings["model"], cfg.base_dir, f"{where}: retriever {r.name!r}")
