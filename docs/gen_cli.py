"""Generate the CLI reference (docs/cli.md) from the Click command tree.

Every command and sub-command of ``searchbench`` gets a section: its usage line, its help
text and a table of its arguments and options, read from the Click objects themselves.
``tests/cli/test_cli_docs.py`` checks that each command appears here.
"""

from __future__ import annotations

import enum
import inspect
import typing
from collections.abc import Iterator
from typing import Any

# The Click objects are handled by duck typing rather than ``isinstance(..., click.Option)``.
Command = Any
Context = Any
Param = Any


def root_command() -> Command:
    """The ``searchbench`` command as a Click object (sub-commands load on demand)."""
    import importlib

    return importlib.import_module("searchbench.cli.main").app


def is_group(cmd: Command) -> bool:
    return hasattr(cmd, "list_commands")


def iter_commands(cmd: Command, path: tuple[str, ...] = ("searchbench",),
                  parent: Context | None = None
                  ) -> Iterator[tuple[tuple[str, ...], Command, Context]]:
    """``(path, command, context)`` for the command and every sub-command, depth first."""
    ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent)
    yield path, cmd, ctx
    if is_group(cmd):
        for name in sorted(cmd.list_commands(ctx)):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from iter_commands(sub, (*path, name), ctx)


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# Click's parameter types by the Python type they give.
_PYTHON_NAMES = {"integer": "int", "integer range": "int", "float": "float",
                 "float range": "float", "text": "str", "path": "Path", "boolean": "bool"}


def _annotation(param: Param) -> Any:
    """The Python type behind a parameter (Typer >= 0.2x keeps it, not a Click type)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        return descriptor.annotation
    kind = getattr(param, "type", None)
    if hasattr(kind, "choices"):
        return kind
    name = _PYTHON_NAMES.get(getattr(kind, "name", ""))
    return name or kind


def _type(param: Param) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    kind = _annotation(param)
    many = typing.get_origin(kind) in (list, tuple) or getattr(param, "multiple", False) \
        or getattr(param, "nargs", 1) == -1
    if typing.get_origin(kind) in (list, tuple):
        kind = typing.get_args(kind)[0]
    if typing.get_origin(kind) is typing.Union:
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        text = " \\| ".join(f"`{m.value}`" for m in kind)
    elif typing.get_origin(kind) is typing.Literal:
        text = " \\| ".join(f"`{v}`" for v in typing.get_args(kind))
    elif hasattr(kind, "choices"):
        text = " \\| ".join(f"`{getattr(c, 'value', c)}`" for c in kind.choices)
    elif isinstance(kind, str):
        text = kind
    else:
        text = _cell(getattr(kind, "__name__", None) or getattr(kind, "name", kind) or "text")
    repeat = many and param.param_type_name == "option"
    return text + (", repeatable" if repeat else "")


def _default(param: Param) -> str:
    default = param.default
    if _unset(default) or default is None or default is False or default == () or callable(default):
        return ""
    if isinstance(default, (list, tuple)):
        default = ",".join(map(str, default))
    if isinstance(default, enum.Enum):
        default = default.value
    return f"`{_cell(default)}`"


def _unset(value: object) -> bool:
    """Click's sentinel for "no default given" (Click >= 8.3)."""
    return type(value).__name__ == "Sentinel" and getattr(value, "name", "") == "UNSET"


def _param_row(param: Param) -> str:
    if param.param_type_name == "option":
        names = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts))
    else:
        names = f"`{(param.metavar or param.name).upper()}`" + \
            ("" if param.required else " (optional)")
    help_text = _cell(getattr(param, "help", None) or "")
    return f"| {names} | {_type(param)} | {_default(param)} | {help_text} |"


def _section(path: tuple[str, ...], cmd: Command, ctx: Context) -> str:
    level = "#" * min(len(path) + 1, 4)
    lines = [f"{level} `{' '.join(path)}`", ""]
    pieces = " ".join(cmd.collect_usage_pieces(ctx))
    lines += ["```", f"{' '.join(path)} {pieces}".rstrip(), "```", ""]
    if cmd.help:
        lines += [inspect.cleandoc(cmd.help), ""]
    params = [p for p in cmd.get_params(ctx) if not getattr(p, "hidden", False)]
    if params:
        lines += ["| argument / option | type | default | help |", "|---|---|---|---|"]
        lines += [_param_row(p) for p in params]
        lines.append("")
    if is_group(cmd):
        subs = [n for n in sorted(cmd.list_commands(ctx)) if not cmd.get_command(ctx, n).hidden]
        lines += ["Sub-commands: " + ", ".join(f"`{' '.join((*path, n))}`" for n in subs), ""]
    return "\n".join(lines)


def cli_markdown() -> str:
    """The whole CLI reference as Markdown."""
    return "\n".join(_section(*item) for item in iter_commands(root_command()))
