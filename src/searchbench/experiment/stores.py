"""The vector stores an experiment's grid reads (ARCHITECTURE §11), checked — and, when the
grid says so, loaded — before any cell runs.

Every store a ``db`` retriever's cells read (one per chunker when its URL names one store
per chunker, ``table=docs_{chunker}``) must exist and hold the evaluation set cut by the
cell's chunker, in the unit of the store's model, embedded with that model. A store that
fails the check is one :class:`~searchbench.errors.ConfigError` naming the config key, the
store and the ``searchbench db load`` command that makes it.

With ``load = "missing"`` on the ``db`` retriever, the stores that do not exist (or hold
no rows, or whose load was interrupted) are loaded first, through the same code as
``searchbench db load`` (:func:`~searchbench.retrieval.stores.load_store`: the pipeline's
encoders, the cell's chunker in the model's tokens, provenance recorded; the engine's
default index, cosine, as ``db load`` without options). Every store that exists is checked
before anything is loaded, so a store loaded with another model, chunker, unit or
evaluation set stops the experiment before any work; loading only adds rows, so nothing
stored is ever lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..retrieval import DbSpec, load_store

__all__ = ["StoreNeed", "prepare_stores"]

Log = Callable[[str], None]


@dataclass(frozen=True)
class StoreNeed:
    """One store a grid reads: the ``db`` spec as its cells run it (``{chunker}`` filled
    in), the chunker they ask for, the retriever table that names it and where that is."""

    part: DbSpec
    chunker: str
    table: Any = field(compare=False)  # experiment.config.RetrieverSpec
    where: str = field(default="config", compare=False)  # the config file

    @property
    def key(self) -> str:
        return f"{self.where}: key 'retrievers.{self.table.name}.url'"

    @property
    def public(self) -> str:
        from ..db import parse_store_url  # lazy: loads db, knn on first use

        return parse_store_url(self.part.url).public

    def command(self, evalset: str) -> str:
        """The ``searchbench db load`` command that makes this store."""
        return (f"searchbench db load '{self.public}' --evalset {evalset}"
                + (f" --chunk {self.chunker}" if self.chunker != "none" else "")
                + (f" --model {self.part.model}" if self.part.model else ""))


def prepare_stores(pipe: Any, evalset: Any, spec: str, needs: Sequence[StoreNeed],
                   say: Log, quiet: bool | None = None) -> None:
    """Check every store of ``needs`` on ``pipe`` (the experiment's
    :class:`~searchbench.retrieval.Pipeline` over ``evalset``, named ``spec`` in the
    config), then load those missing whose retriever says ``load = "missing"`` and check
    them again; see the module docstring."""
    state = {n: _state(n.part.url) if n.table.load == "missing" else "checked"
             for n in needs}
    for need in needs:  # every store that exists, checked before anything is loaded
        if state[need] != "absent":
            check_store(pipe, evalset, spec, need)
    missing = [n for n in needs if state[n] in ("absent", "partial")]
    for need in missing:
        _load(pipe, evalset, spec, need, say, quiet)
        check_store(pipe, evalset, spec, need)


def check_store(pipe: Any, evalset: Any, spec: str, need: StoreNeed) -> None:
    """The store exists and holds ``evalset`` cut by the need's chunker with the asked
    model: one error naming the config key, the store and what to do."""
    load = need.command(spec)
    hint = ("" if need.table.load else f" (or set load = \"missing\" on retrievers."
            f"{need.table.name} to load it when the experiment runs)")
    try:
        store = pipe.store(need.part)
        pipe.chunker(need.part, need.chunker)
    except ConfigError as exc:
        raise ConfigError(f"{need.key} (chunker {need.chunker!r}): {exc}; to load it: "
                          f"{load}{hint}") from None
    recorded = (store.stored.get("evalset") or {}).get("hash")
    if recorded and recorded != evalset.content_hash():
        raise ConfigError(f"{need.key}: the store {need.public} was loaded from another "
                          f"evaluation set ({recorded}, not {evalset.name} "
                          f"{evalset.content_hash()}); load this set into another store: "
                          f"{load}")


def _state(url: str) -> str:
    """``"absent"`` (no such store, or no rows), ``"partial"`` (its load was interrupted:
    provenance ``complete`` false) or ``"complete"``; what ``load = "missing"`` loads are
    the first two."""
    from ..db import connect  # lazy: loads db, knn on first use

    try:
        store = connect(url, must_exist=True)
    except ConfigError:  # no such store
        return "absent"
    with store:
        if store.count() == 0:
            return "absent"
        prov = store.describe().get("provenance") or {}
        return "partial" if prov.get("complete") is False else "complete"


def _load(pipe: Any, evalset: Any, spec: str, need: StoreNeed, say: Log,
          quiet: bool | None) -> None:
    """Load one missing store as ``searchbench db load`` would (see the module docs),
    with the pipeline's encoders; a refusal names the config key."""
    from ..db import connect  # lazy: loads db, knn on first use

    options = dict(pipe.options)
    cache = options.pop("cache", True)
    chunk = None if need.chunker == "none" else need.chunker
    say(f"  loading {need.public} for retrievers.{need.table.name} "
        f"[chunks: {need.chunker}] (load = \"missing\")")
    try:
        with connect(need.part.url) as store:
            model = need.part.model or _recorded_model(store) or "minilm"
            got = load_store(store, evalset, model, chunk=chunk, cache=cache, quiet=quiet,
                             encoder_options=options, encoders=pipe.encoders)
    except ConfigError as exc:
        raise ConfigError(f"{need.key} (load = \"missing\", chunker {need.chunker!r}): "
                          f"{exc}") from None
    pipe.reopen(need.part)  # read again: the store now records its complete load
    say(f"  loaded {need.public}: {got['added']} rows added, {got['skipped']} already "
        f"stored, in {got['load_seconds']:.1f} s")


def _recorded_model(store: Any) -> str | None:
    """The model an interrupted load recorded (resumed with it)."""
    return (store.describe().get("provenance") or {}).get("model")
