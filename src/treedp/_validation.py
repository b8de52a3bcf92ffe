"""One rule for checking parameters.

Wrong type → :class:`InvalidTypeError`, wrong value → :class:`InvalidParameterError`.

Every message names the parameter, what is allowed and what was received (a parameter, never
a data value: data is checked elsewhere and its messages name no count or value).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = [
    "check_bool",
    "check_int",
    "check_level",
    "check_option",
    "check_real",
    "check_simulations",
    "each_warning_once",
    "held_warnings",
    "must",
    "user_stacklevel",
    "warn_user",
]


def must(name: str, requirement: str) -> str:
    """Every parameter message of the library, formatted here: ``"The '<name>' parameter must
    <requirement>"`` (the requirement says what is allowed and, where useful, what was
    received; a parameter, never a data value).

    Examples
    --------
    >>> must("bins", "be an int >= 1. Got 0 instead.")
    "The 'bins' parameter must be an int >= 1. Got 0 instead."
    """
    return f"The '{name}' parameter must {requirement}"


def _got(value: Any) -> str:
    return f"Got {type(value).__name__} {value!r} instead."


def check_int(value: Any, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as an int in ``[lo, hi]`` (either end optional).

    Raises
    ------
    InvalidTypeError
        If ``value`` is not an integer (bools are refused).
    InvalidParameterError
        If it is outside ``[lo, hi]``.
    """
    allowed = _int_range(lo, hi)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidTypeError(must(name, f"be an int{allowed}. {_got(value)}"))
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):  # the type was right
        raise InvalidParameterError(must(name, f"be an int{allowed}. Got {v!r} instead."))
    return v


def _int_range(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f" in [{lo}, {hi}]"
    if lo is not None:
        return f" >= {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""


def check_real(
    value: Any,
    name: str,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
) -> float:
    """Return ``value`` as a finite float in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``).

    Raises
    ------
    InvalidTypeError
        If ``value`` is not a real number (bools and strings are refused).
    InvalidParameterError
        If it is not finite or outside the range.
    """
    left = "(" if lo_open else "["
    allowed = (
        f" in {left}{lo}, {hi}]"
        if lo is not None and hi is not None
        else (f" {'>' if lo_open else '>='} {lo}" if lo is not None else "")
    )
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidTypeError(must(name, f"be a float{allowed}. {_got(value)}"))
    v = float(value)
    bad = not math.isfinite(v)
    if lo is not None:
        bad = bad or (v <= lo if lo_open else v < lo)
    if hi is not None:
        bad = bad or v > hi
    if bad:
        raise InvalidParameterError(
            must(
                name,
                f"be a float{allowed} (finite and positive where a budget). Got {value!r} instead.",
            )
        )
    return v


def check_option(value: Any, name: str, options: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``options`` (strings).

    Raises
    ------
    InvalidTypeError
        If ``value`` is not a string.
    InvalidParameterError
        If it is a string outside ``options``.
    """
    opts = tuple(options)
    listed = ", ".join(map(repr, opts))
    if not isinstance(value, str):
        raise InvalidTypeError(must(name, f"be one of {listed}. {_got(value)}"))
    if value not in opts:
        raise InvalidParameterError(must(name, f"be one of {listed}. Got {value!r} instead."))
    return value


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool (numpy bools included).

    Raises
    ------
    InvalidTypeError
        If ``value`` is not a bool.
    """
    if not isinstance(value, bool | np.bool_):
        raise InvalidTypeError(must(name, f"be True or False. {_got(value)}"))
    return bool(value)


def check_level(level: Any) -> float:
    """The coverage ``level`` as a float in ``(0, 1)``, or a clear error."""
    if isinstance(level, bool) or not (isinstance(level, float | int) and 0 < level < 1):
        raise InvalidParameterError(must("level", f"be a float in (0, 1). Got {level!r} instead."))
    return float(level)


def check_simulations(simulations: Any, level: float | None = None) -> int:
    """The number of band simulations, an int of at least 100; with a (checked) ``level``,
    at least ``level / (1 - level)``: the band's critical value is the ``ceil(level·(R + 1))``-th
    of ``R`` simulated statistics, which must exist for the band to cover at ``level``."""
    if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 100:
        raise InvalidParameterError(must("simulations", f"be an int >= 100. Got {simulations!r}."))
    if level is not None and simulations < enough_simulations(level):
        raise InvalidParameterError(
            must(
                "simulations",
                f"be at least {enough_simulations(level)} for level={level!r} (a band at that "
                f"level is the ceil(level·(R + 1))-th of R simulations). Got {simulations!r}.",
            )
        )
    return simulations


def enough_simulations(level: float) -> int:
    """The fewest simulations ``R`` with ``ceil(level·(R + 1)) <= R``: ``level / (1 - level)``
    rounded up (999 at 0.999)."""
    need = max(1, math.floor(level / (1.0 - level)) - 1)  # the ratio is rounded: from below
    while math.ceil(level * (need + 1)) > need:  # the rule as critical_value computes it
        need += 1
    return need


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` made by this function's caller that points
    at the first line outside treedp (the user's call), however deep the call went."""
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # the function that warns
    level = 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE)
        or frame.f_code.co_filename == contextlib.__file__  # a treedp `with` block's exit
    ):
        frame = frame.f_back
        level += 1
    return level


#: Per thread: the warnings a worker thread holds for the thread that started it (None: warn).
_HELD = threading.local()


def warn_user(message: str, category: type[Warning]) -> None:
    """Warn at the user's call (:func:`user_stacklevel`); on a worker thread inside
    :func:`held_warnings`, hold the warning instead, for the thread that started the work to
    emit: a worker's stack holds no user line (``treedp.profile``'s columns run on threads,
    and their warnings pointed at ``threading.py``)."""
    held = getattr(_HELD, "warnings", None)
    if held is not None:
        held.append((message, category))
        return
    warnings.warn(message, category, stacklevel=user_stacklevel())


@contextmanager
def each_warning_once(prefix: str = "") -> Iterator[None]:
    """Emit each distinct warning raised inside once, at the user's call, when the block ends
    (``prefix`` before its words: a column's name): a page that reads a release's quantiles in
    a table, a figure and a summary warned the same words three or four times."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen: set[tuple[str, type[Warning]]] = set()
    for item in caught:
        words = str(item.message)
        key = (words if words.startswith(prefix) else prefix + words, item.category)
        if key not in seen:
            seen.add(key)
            warnings.warn(key[0], key[1], stacklevel=user_stacklevel())


@contextmanager
def held_warnings() -> Iterator[list[tuple[str, type[Warning]]]]:
    """On this (worker) thread, collect what :func:`warn_user` would emit, in order."""
    held: list[tuple[str, type[Warning]]] = []
    outer = getattr(_HELD, "warnings", None)  # nested: the outer hold resumes after
    _HELD.warnings = held
    try:
        yield held
    finally:
        _HELD.warnings = outer
