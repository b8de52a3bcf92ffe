"""Keyword spellings the public functions also accept: ``neighbors=`` for ``neighbours=``.

One decorator, :func:`accepts_aliases`, maps an alias to the documented name before the call
(so the function's signature, its keyword count and ``inspect.signature`` stay the documented
ones) and refuses both spellings given at once. It is a front door's edge, like validation:
nothing inside the library ever sees the alias.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from treedp.exceptions import InvalidParameterError

__all__ = ["ALIASES", "accepts_aliases"]

P = ParamSpec("P")
R = TypeVar("R")

#: Accepted spelling -> the documented keyword it stands for.
ALIASES: dict[str, str] = {"neighbors": "neighbours"}


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

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
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
