"""Request parameters, checked once for every route of the app (:mod:`.app`) and of explore
mode (:mod:`._explore`): a malformed one is a :class:`BadRequest` (a 400 with the app's own
page, ARCHITECTURE §12.y)."""

from __future__ import annotations

from starlette.requests import Request

from ...errors import SearchbenchError

__all__ = ["BadRequest", "item_number", "one_param"]


class BadRequest(SearchbenchError):
    """A malformed request parameter (a 400 with the app's own page)."""


def one_param(request: Request, name: str, what: str) -> str:
    """The query parameter ``name``, given exactly once and non-empty, else
    :class:`BadRequest` naming ``what`` was expected."""
    values = request.query_params.getlist(name)
    if len(values) != 1 or not values[0] or len(values[0]) > 4096:
        raise BadRequest(f"Bad request: expected one {what} (?{name}=…).")
    return values[0]


def item_number(request: Request, n_items: int) -> int:
    """The ``i`` parameter: a decimal item number (at most 12 digits; ``i`` given once), else
    :class:`BadRequest` — never an ``int()`` of a 5,000-digit string."""
    value = one_param(request, "i", "item number")
    if not (value.isascii() and value.isdigit() and len(value) <= 12):
        raise BadRequest(f"Bad request: the item number must be 0 to {max(n_items - 1, 0)} "
                         f"(decimal digits).")
    return int(value)
