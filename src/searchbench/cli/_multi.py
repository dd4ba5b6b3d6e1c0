"""An option taking one or more values after a single flag: ``--runs a.trec b.trec``.

Click options take one value per occurrence; :class:`GreedyOption` (used with
``multiple=True``) also takes the words that follow, up to the next word starting with
``-``, so ``--runs a b`` and ``--runs a --runs b`` mean the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["GreedyOption", "runs_option"]


class GreedyOption(click.Option):
    """A ``multiple=True`` option whose flag takes every following non-option word."""

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is None:
                continue
            process = option.process

            def greedy(value: Any, state: Any, process: Any = process) -> None:
                process(value, state)
                while state.rargs and not state.rargs[0].startswith("-"):
                    process(state.rargs.pop(0), state)

            option.process = greedy


def runs_option(help: str) -> Any:
    """``--runs RUN...``: one or more existing run files after one flag."""
    return click.option("--runs", "runs", multiple=True, cls=GreedyOption,
                        type=click.Path(path_type=Path, exists=True), metavar="RUN...",
                        help=help)
