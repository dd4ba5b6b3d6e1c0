"""Experiment configuration: a TOML file, validated before any work starts, and its grid.

A config names evaluation sets, retrievers (``[[retrievers]]`` tables), chunkers and
evaluation levels; the grid is their product (:func:`expand_grid`). Every problem raises
one :class:`~searchbench.errors.ConfigError` naming the key and the allowed values.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._util import is_dir, path_exists
from ..errors import ConfigError, SearchbenchError
from ..measures import parse_measures
from ..retrieval import RetrieverSpec as RetrievalSpec
from ..retrieval import (
    available_models,
    is_template,
    parse_chunker,
    retriever_spec,
    spec_to_dict,
    store_url,
)
from ..vocab import (
    DEFAULT_MEASURES,
    DEFAULT_STATS,
    RETRIEVER_TYPES,
    Correction,
    StatsSettings,
    TestName,
    UnanswerablePolicy,
    canonical_level,
    canonical_retriever_type,
    canonical_unanswerable,
    check_positive_int,
)
from .naming import cell_key, check_name, work_key

__all__ = ["DEFAULT_MEASURES", "Cell", "ExperimentConfig", "RetrieverSpec", "expand_grid",
           "load_config", "parse_config"]

_TOP_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str, "evalset": (str, list), "k": int, "levels": list, "measures": list,
    "chunkers": list, "baseline": str, "test": str, "correction": str, "seed": int,
    "alpha": float, "confidence": float, "n_permutations": int, "runs_dir": str,
    "retrievers": list, "unanswerable": str,
}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", list: "a list",
               bool: "true or false"}


@dataclass(frozen=True)
class RetrieverSpec:
    """One ``[[retrievers]]`` table: a name, a type and its settings (the keys the table
    gives, in canonical spelling; ``of`` names a hybrid's parts). ``spec`` is the validated
    :data:`searchbench.retrieval.spec.RetrieverSpec` the builder takes — the same object
    the ``run`` command's flags give."""

    name: str
    type: str
    settings: dict[str, Any] = field(default_factory=dict)
    spec: RetrievalSpec | None = field(default=None, compare=False, repr=False)
    #: ``"missing"``: a db retriever's stores the grid needs and that are missing (or
    #: whose load was interrupted) are loaded before any cell runs (see
    #: :mod:`.stores`). Not part of a cell's identity: it says how to get the store,
    #: not what the cell computes.
    load: str | None = field(default=None, compare=False)

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

    def to_dict(self, components: Sequence[RetrieverSpec] = ()) -> dict[str, Any]:
        out = {"evalset": self.evalset, "retriever": self.retriever.to_dict(),
               "chunker": self.chunker, "level": self.level, "k": self.k}
        if components:
            out["components"] = [c.to_dict() for c in components]
        return out

    def key(self, evalset_hash: str, components: Sequence[RetrieverSpec] = ()) -> str:
        """Identity of this cell's result, names included (see :func:`.naming.cell_key`)."""
        return cell_key(self.to_dict(components), evalset_hash)

    def work_key(self, evalset_hash: str, components: Sequence[RetrieverSpec] = ()) -> str:
        """Identity of the work this cell does, names left out (same key, same run)."""
        return work_key(self.to_dict(components), evalset_hash)


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
    test: TestName = DEFAULT_STATS.test
    correction: Correction = DEFAULT_STATS.correction
    seed: int = DEFAULT_STATS.seed
    alpha: float = DEFAULT_STATS.alpha
    n_permutations: int = DEFAULT_STATS.n_permutations
    confidence: float = DEFAULT_STATS.confidence
    runs_dir: str = "runs"
    unanswerable: UnanswerablePolicy = "skip"  # queries marked no_answer (report time)
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

    @property
    def stats(self) -> StatsSettings:
        """The statistics settings (validated when the config was parsed)."""
        return StatsSettings(self.test, self.correction, self.alpha,
                             self.confidence, self.seed, self.n_permutations)


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
        text = raw.decode("utf-8-sig")  # a leading BOM (Windows editors) is dropped
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
    """Validate a parsed TOML document — every key, before any work (no file access, no
    model loading). A problem raises one :class:`ConfigError` naming ``where`` (the file),
    the key (``retrievers.bm25.k1``), the value found and the valid values."""
    _check_keys(data, _TOP_KEYS, where, "top-level")
    try:
        stats = StatsSettings.from_mapping(data, key=lambda k: f"key {k!r}")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    retrievers = _retrievers(data.get("retrievers", []), where)
    cfg = ExperimentConfig(
        name=_experiment_name(data, name, where), evalsets=_evalsets(data.get("evalset"), where),
        retrievers=retrievers, chunkers=_chunkers(data.get("chunkers", ["none"]), where),
        levels=_levels(data.get("levels", ["doc"]), where), k=_positive(data, "k", 100, where),
        measures=_measures(data.get("measures", list(DEFAULT_MEASURES)), where),
        baseline=data.get("baseline"), seed=stats.seed, test=stats.test,
        correction=stats.correction, alpha=stats.alpha, confidence=stats.confidence,
        n_permutations=stats.n_permutations, runs_dir=_runs_dir(data, where),
        unanswerable=canonical_unanswerable(data.get("unanswerable", "skip"),
                                            f"{where}: key 'unanswerable'"))
    if not cfg.cells():
        raise ConfigError(f"{where}: the grid is empty (retrievers × chunkers × levels gives "
                          "no cell); level 'chunk' needs a chunker other than 'none'")
    _check_baseline(cfg, where)
    _check_http(cfg, where)
    _check_db(cfg, where)
    return cfg


def db_parts(cfg: ExperimentConfig) -> list[tuple[RetrieverSpec, Any]]:
    """``(retriever table, its DbSpec)`` of every retriever that reads a vector store
    (a db retriever, or a hybrid with a db part: then the db part's own table)."""
    out = []
    for r in cfg.retrievers:
        if r.type == "db":
            out.append((r, r.spec))
    return out


def _check_db(cfg: ExperimentConfig, where: str) -> None:
    """A store holds one chunking: several chunkers need one store per chunker, named by
    a ``{chunker}`` template in the URL (checked for every chunker, before any work)."""
    for r, spec in db_parts(cfg):
        key = f"key 'retrievers.{r.name}.url'"
        if is_template(spec.url):
            for chunk in cfg.chunkers:
                try:
                    store_url(spec.url, chunk, key)
                except ConfigError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
        elif len(cfg.chunkers) > 1:
            raise ConfigError(
                f"{where}: {key}: a vector store holds one chunking, and the grid has "
                f"chunkers {cfg.chunkers}: name one store per chunker with {{chunker}} in "
                "its name (e.g. table=docs_{chunker}, each loaded with `searchbench db "
                "load URL --evalset SET --chunk CHUNKER`), or run this retriever in an "
                "experiment whose chunkers = [the store's chunking]")


def _check_http(cfg: ExperimentConfig, where: str) -> None:
    """A search service over HTTP answers whole documents: refuse it in a grid that chunks
    (before any work, rather than failing at its first chunked cell)."""
    parts = {r.name: [r.spec, *getattr(r.spec, "parts", ())] for r in cfg.retrievers}
    http = [n for n, specs in parts.items() if any(s.type == "http" for s in specs)]
    if http and (cfg.chunkers != ["none"] or cfg.levels != ["doc"]):
        raise ConfigError(f"{where}: retrievers.{http[0]}: an http retriever answers whole "
                          "documents; it runs only with chunkers = ['none'] and levels = "
                          "['doc'] (put chunked retrievers in another experiment)")


def _experiment_name(data: dict[str, Any], default: str, where: str) -> str:
    if "name" in data:
        return check_name(data["name"], "key 'name'", where)
    return check_name(default, "the experiment name (from the file name; set key 'name')",
                      where)


def _runs_dir(data: dict[str, Any], where: str) -> str:
    value = data.get("runs_dir", "runs")
    if not value.strip():
        raise ConfigError(f"{where}: key 'runs_dir' is {value!r}; expected a folder name")
    return value


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
    if not items:
        raise ConfigError(f"{where}: key 'levels' is []; expected a non-empty list of doc, "
                          "chunk")
    try:
        return list(dict.fromkeys(canonical_level(v, f"key 'levels[{i}]'")
                                  for i, v in enumerate(items)))
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _chunkers(value: Any, where: str) -> list[str]:
    items = _strings(value, "chunkers", where)
    for spec in items:
        try:
            parse_chunker(spec)
        except ConfigError as exc:
            raise ConfigError(f"{where}: key 'chunkers': {exc}; or 'none' for whole "
                              "documents") from None
    return list(dict.fromkeys(items))


def _measures(value: Any, where: str) -> list[str]:
    items = _strings(value, "measures", where)
    if not items:
        raise ConfigError(f"{where}: key 'measures' is empty; e.g. {DEFAULT_MEASURES}")
    try:
        return [m.name for m in parse_measures(items)]
    except SearchbenchError as exc:
        raise ConfigError(f"{where}: key 'measures': {exc}") from None


def _positive(data: dict[str, Any], key: str, default: int, where: str) -> int:
    try:
        return check_positive_int(data.get(key, default), f"key {key!r}")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _retrievers(items: Any, where: str) -> list[RetrieverSpec]:
    if not items:
        raise ConfigError(f"{where}: no [[retrievers]]: the grid is empty; add at least one "
                          f"table with type = one of {', '.join(RETRIEVER_TYPES)}")
    tables = [_table(t, i, where) for i, t in enumerate(items)]
    names = [n for n, _, _ in tables]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}: retriever names must be unique; repeated: {dup}")
    base = {n: _retriever(n, kind, t, {}, where) for n, kind, t in tables if kind != "hybrid"}
    out = []
    for n, kind, table in tables:
        out.append(base[n] if n in base else _retriever(n, kind, table, base, where))
    return out


def _table(table: Any, i: int, where: str) -> tuple[str, str, dict[str, Any]]:
    """``(name, type, table)`` of ``retrievers[i]``, name and type checked."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: retrievers[{i}]: expected a table ([[retrievers]]), "
                          f"got {table!r}")
    try:
        kind = canonical_retriever_type(table.get("type"), f"key 'retrievers[{i}].type'")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    model = table.get("model", "")
    default = (Path(model.split(":", 1)[-1]).name or model
               if kind == "dense" and isinstance(model, str) and model else kind)
    name = check_name(table.get("name", default), f"key 'retrievers[{i}].name'", where)
    if kind == "dense" and "model" not in table:
        raise ConfigError(f"{where}: retrievers.{name}: a dense retriever needs key 'model'; "
                          f"allowed: {', '.join(_model_names())}, sentence-transformers:/path, "
                          "model2vec:/path, onnx:NAME, openai:MODEL")
    return name, kind, table


def _retriever(name: str, kind: str, table: dict[str, Any], base: dict[str, RetrieverSpec],
               where: str) -> RetrieverSpec:
    """One validated table; a hybrid's ``of`` names retrievers of ``base``."""
    settings = {k: v for k, v in table.items() if k not in ("name", "type")}
    load = _load_key(name, kind, settings.pop("load", None), where)
    parts: list[Any] = []
    if kind == "hybrid":
        of = settings.get("of")
        if not isinstance(of, list) or len(of) < 2 or \
                any(not isinstance(p, str) or p not in base for p in of) or \
                len(set(of)) != len(of):
            raise ConfigError(f"{where}: key 'retrievers.{name}.of' is {of!r}; expected at least "
                              f"2 different names of bm25/dense/http retrievers: "
                              f"{', '.join(base) or '(none defined)'}")
        parts = [base[p].spec for p in of]
    try:
        spec = retriever_spec(kind, settings, parts=parts,
                              key=lambda k: f"key 'retrievers.{name}.{k}'")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    canon = {k: ("norm" if k in ("normalization", "normalisation") else k) for k in settings}
    given = {canon[k]: (v if canon[k] == "of" else _plain(getattr(spec, canon[k])))
             for k, v in settings.items()}
    if kind == "db":  # parameters as a table; no credentials (the text is stored)
        given.update({k: v for k, v in spec_to_dict(spec).items() if k in given})
        if given.get("url") != getattr(spec, "url", None):
            raise ConfigError(f"{where}: key 'retrievers.{name}.url' holds a password or "
                              "credential; the config text is stored with the results, so "
                              "give it through the environment (PGPASSWORD, ~/.pgpass, ...)")
    return RetrieverSpec(name, kind, given, spec, load)


#: The values of a db retriever's ``load`` key.
LOAD_VALUES = ("missing",)


def _load_key(name: str, kind: str, value: Any, where: str) -> str | None:
    """A db retriever's ``load`` key: ``"missing"`` or absent."""
    if value is None:
        return None
    key = f"key 'retrievers.{name}.load'"
    if kind != "db":
        raise ConfigError(f"{where}: {key}: only a db retriever loads a store; remove it "
                          f"(a {kind} retriever builds its index itself)")
    if value not in LOAD_VALUES:
        raise ConfigError(f"{where}: {key} is {value!r}; expected \"missing\" (load the "
                          "stores the grid needs that are missing, before any cell runs) "
                          "or leave it out (a missing store is an error)")
    return str(value)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


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
    return [*available_models(), "model2vec"]


def _check_model(spec: str, base: Path, where: str) -> None:
    if spec in _model_names():
        return
    kind, _, rest = spec.partition(":")
    if kind in ("sentence-transformers", "st", "model2vec") and rest:
        path = Path(rest) if Path(rest).is_absolute() else base / rest
        if is_dir(path):
            return
    if kind in ("onnx", "onnx-int8", "openai") and rest:
        return
    if is_dir(spec) or is_dir(base / spec):
        return
    raise ConfigError(f"{where}: key 'model' is {spec!r}: unknown model and not a local "
                      f"folder (searchbench never downloads models); allowed: "
                      f"{', '.join(_model_names())}, sentence-transformers:/path, "
                      "model2vec:/path, onnx:NAME, openai:MODEL")


def resolve_model(spec: str, base: Path) -> str:
    """``spec`` with a relative local model folder made absolute against ``base``."""
    kind, sep, rest = spec.partition(":")
    if sep and kind in ("sentence-transformers", "st", "model2vec") and rest and \
            not Path(rest).is_absolute() and is_dir(base / rest):
        return f"{kind}:{(base / rest).resolve()}"
    if not sep and spec not in _model_names() and not is_dir(spec) and \
            is_dir(base / spec):
        return str((base / spec).resolve())
    return spec


def _check_evalset(spec: str, base: Path, where: str) -> None:
    from ..collections import parse_spec  # lazy: loads collections, data on first use

    try:
        kind, arg = parse_spec(spec)
    except ConfigError as exc:
        raise ConfigError(f"{where}: key 'evalset': {exc}") from None
    if kind in ("pyref", "beir-download"):
        return
    path = Path(arg) if Path(arg).is_absolute() else base / arg
    if not path_exists(path):
        raise ConfigError(f"{where}: key 'evalset' is {spec!r}: {path} does not exist; "
                          "expected 'pyref', a folder, or beir:DIR, cranfield:DIR, … "
                          "(see: searchbench datasets list)")


def resolve_evalset(spec: str, base: Path) -> str:
    """``spec`` with a relative folder made absolute against the config's folder."""
    from ..collections import parse_spec  # lazy: loads collections, data on first use

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
