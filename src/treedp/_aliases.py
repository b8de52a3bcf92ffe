"""Keyword spellings the public functions also accept: ``neighbors=`` for ``neighbours=``.

One decorator, :func:`accepts_aliases`, maps an alias to the documented name before the call
(so the function's signature, its keyword count and ``inspect.signature`` stay the documented
ones) and refuses both spellings given at once. It is a front door's edge, like validation:
nothing inside the library ever sees the alias.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from treedp.exceptions import InvalidParameterError

__all__ = ["ALIASES", "accepts_aliases"]

P = ParamSpec("P")
R = TypeVar("R")

#: Accepted spelling -> the documented keyword it stands for.
ALIASES: dict[str, str] = {"neighbors": "neighbours"}
#: Per-person keywords of ``release_grouped`` that the other front doors take inside
#: ``privacy_unit=treedp.PrivacyUnit(...)``, or not at all: named in a clear refusal instead
#: of Python's "unexpected keyword argument".
_PERSON_KEYWORDS = (
    "privacy_unit",
    "max_contributions",
    "max_groups",
    "max_contributions_per_group",
)
#: Group-by keywords of ``release_grouped``: refused by the other front doors with a pointer
#: to it instead of Python's "unexpected keyword argument".
_GROUP_KEYWORDS = ("by", "keys")
#: The front doors with no per-person mode at all (the release's answers have one).
_NO_PERSON_MODE = ("quantiles", "median")


def accepts_aliases(func: Callable[P, R]) -> Callable[P, R]:
    """``func`` taking every spelling of :data:`ALIASES` for its documented keyword.

    The wrapper keeps ``func``'s name, docstring, annotations and signature
    (``functools.wraps``). Type checkers see the documented keyword only; the alias is a
    run-time convenience (docs/migration.md).

    Raises
    ------
    InvalidParameterError
        When a keyword is given under both spellings (``neighbours=`` and ``neighbors=``).

    Examples
    --------
    >>> @accepts_aliases
    ... def f(*, neighbours: str = "add_remove") -> str:
    ...     return neighbours
    >>> f(neighbors="replace")
    'replace'
    """

    accepted = set(inspect.signature(func).parameters)

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        _refuse_person_keywords(func.__name__, accepted, kwargs)
        _refuse_group_keywords(func.__name__, accepted, kwargs)
        for alias, name in ALIASES.items():
            if alias in kwargs:
                if name in kwargs:
                    raise InvalidParameterError(
                        f"Give '{name}' or its spelling '{alias}', not both: they are the "
                        "same parameter."
                    )
                kwargs[name] = kwargs.pop(alias)
        return func(*args, **kwargs)

    return wrapper


def _refuse_group_keywords(name: str, accepted: set[str], kwargs: dict[str, object]) -> None:
    """A group-by keyword ``name`` does not take: the front door that has it (public
    parameters only, before anything is read or charged)."""
    misplaced = [k for k in _GROUP_KEYWORDS if k in kwargs and k not in accepted]
    if not misplaced or name not in ("release_cdf", "quantiles", "median"):
        return  # Python's own TypeError names the keyword
    raise InvalidParameterError(
        f"{name}() has no '{misplaced[0]}=': a release per group is "
        "treedp.release_grouped(data, column=..., by=..., keys=[...], ...), whose "
        "per-key releases answer every query (quantiles included)."
    )


def _refuse_person_keywords(name: str, accepted: set[str], kwargs: dict[str, object]) -> None:
    """A per-person keyword ``name`` does not take: where it goes instead (public parameters
    only, before anything is read or charged)."""
    misplaced = [k for k in _PERSON_KEYWORDS if k in kwargs and k not in accepted]
    if not misplaced or ("privacy_unit" not in accepted and name not in _NO_PERSON_MODE):
        return  # Python's own TypeError names the keyword
    if "privacy_unit" in accepted:
        raise InvalidParameterError(
            f"{name}() takes the contribution bound inside 'privacy_unit': pass "
            f"privacy_unit=treedp.PrivacyUnit(column, {misplaced[0]}=...) instead of "
            f"'{misplaced[0]}='."
        )
    raise InvalidParameterError(
        f"{name}() has no per-person mode ('{misplaced[0]}='): release the distribution with "
        "treedp.release_cdf(..., privacy_unit=treedp.PrivacyUnit(column, "
        "max_contributions=...)) and read its quantiles from the release."
    )
