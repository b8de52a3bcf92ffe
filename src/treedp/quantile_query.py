"""The quantile part of a :class:`~treedp.query.Query`: levels, method, ``n`` policy, domain.

:func:`quantiles_request` checks the public parameters of a quantile query (what
:func:`treedp.quantiles` and :func:`treedp.median` take) before anything is read, and freezes
them into a :class:`QuantilesRequest`; :func:`treedp.quantiles_run.run_quantiles` runs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from treedp._validation import check_int, must
from treedp.bin_edges import MAX_BINS
from treedp.budget import MIN_EPSILON, check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.options import PrivateBounds
from treedp.quantile_privacy import check_privacy, equivalent_epsilon
from treedp.quantiles_choice import METHODS, check_n_share
from treedp.value_methods._column import check_nan, check_neighbours
from treedp.value_methods.bounds_split import DEFAULT_SHARE, private_request
from treedp.value_methods.private_bounds import check_known_bound
from treedp.value_methods.quantile_exponential import INTEGER_LIMIT

__all__ = ["INTEGER_MODES", "QuantilesRequest", "quantiles_request", "typed_bins"]

#: Why a quantile query runs in integer mode (:attr:`QuantilesResult.integer_mode`; None: it
#: does not): ``bins="integers"`` was given, or the column's declared type is an integer type.
INTEGER_MODES: tuple[str, ...] = ("declared", "column type")


@dataclass(frozen=True)
class QuantilesRequest:
    """A quantile query, checked (nothing read from the data).

    The privacy (``eps``, ``relation``), the domain (``bounds`` as given, ``bins``, the
    private-bounds ``request`` with its ``share`` and public side ``known``), the strategy
    (``method``; ``n`` the public count, or None when not given or ``"private"``;
    ``count_share`` the share of a private count, 0 without one) and the output (``qa`` the
    levels, ``scalar`` whether one level was given as a number, ``nan``). ``privacy``: a
    ``ZCDP`` or ``ApproxDP`` target (:mod:`treedp.quantile_privacy`; ``eps`` then stands for
    it in the choice rules until the method is calibrated), or None for a pure ``eps``.
    """

    qa: np.ndarray
    eps: float
    relation: str
    nan: str
    method: str
    bins: Any
    bounds: Any
    request: tuple[Any, Any] | None
    share: float
    known: str | None
    n: int | None
    private_n: bool
    count_share: float
    scalar: bool
    privacy: Any = None
    integer_mode: str | None = None


def quantiles_request(
    q: Any,
    epsilon: Any,
    method: Any,
    bins: Any,
    bounds: Any,
    n: Any,
    n_share: Any,
    neighbours: Any,
    nan: Any,
    refused: dict[str, Any],
    privacy: Any = None,
    integer_mode: str | None = None,
) -> QuantilesRequest:
    """Check a quantile query's public parameters; ``refused`` maps the release-only
    keywords to their values (None when not given); ``integer_mode`` is what
    :func:`typed_bins` said."""
    given = [name for name, value in refused.items() if value is not None]
    if given:
        raise InvalidParameterError(
            f"The {', '.join(repr(g) for g in given)} parameter(s) belong to a release "
            "(treedp.release_cdf), not to a quantile query."
        )
    epsilon, target = check_privacy(epsilon, privacy)
    eps = check_epsilon(epsilon if target is None else equivalent_epsilon(target))
    if target is not None and isinstance(n, str):
        raise InvalidParameterError(
            "A 'privacy' target (zCDP or (epsilon, delta)) takes public bounds or private "
            "ones without a bounds step, without n='private': the private count and the "
            "bounds scans are pure-epsilon steps. Give 'epsilon' for those."
        )
    qa = _levels(q)
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidParameterError(must("method", f"be one of {METHODS}. Got {method!r}."))
    if (
        bins is not None
        and not (isinstance(bins, str) and bins == "integers")  # an array: no element-wise ==
        and (isinstance(bins, bool) or not isinstance(bins, int) or bins < 1)
    ):
        raise InvalidParameterError(must("bins", f"be an int >= 1 or 'integers'. Got {bins!r}."))
    bounds, share = _bounds(bounds)
    request = private_request(bounds)
    private = request is not None
    lower, upper = request if request is not None else (None, None)
    known = check_known_bound(lower, upper, bins == "integers", "bounds") if private else None
    # Without n, "auto" with public bounds under a pure-epsilon budget spends a small share on
    # a noisy count wherever its choice of method or bins depends on n (nothing where it
    # cannot); not where the share would fall below the smallest epsilon, and not with
    # private bounds, whose unbounded route needs the method before any count.
    private_n = (isinstance(n, str) and n == "private") or (
        n is None
        and method == "auto"
        and target is None
        and request is None
        and eps * check_n_share(n_share, None) >= MIN_EPSILON
    )
    if isinstance(n, str) and n != "private":
        raise InvalidParameterError(must("n", f"be an int >= 0, 'private' or None. Got {n!r}."))
    if n_share is not None and not private_n:
        raise InvalidParameterError(
            "The 'n_share' parameter applies only with n='private' (or no n with "
            "method='auto', public bounds and 'epsilon'); it would be ignored."
        )
    count_share = check_n_share(n_share, share if private else None) if private_n else 0.0
    relation = check_neighbours(neighbours, ("add_remove", "replace"))
    return QuantilesRequest(
        qa=qa,
        eps=eps,
        relation=relation,
        nan=check_nan(nan, relation),
        method=method,
        bins=bins,
        bounds=bounds,
        request=request,
        share=share,
        known=known,
        n=None if private_n or n is None else check_int(n, "n", lo=0),
        private_n=private_n,
        count_share=count_share,
        scalar=np.ndim(q) == 0,
        privacy=target,
        integer_mode=integer_mode if bins == "integers" else None,
    )


def typed_bins(bins: Any, bounds: Any, typed: Callable[[], bool]) -> tuple[Any, Any, str | None]:
    """The bins and bounds of a quantile query, and why it runs in integer mode (one of
    :data:`INTEGER_MODES`, or None).

    ``bins`` given: unchanged (``"integers"`` is ``"declared"``). ``bins`` None and a column
    whose declared type is an integer type (``typed()``,
    :func:`treedp.engines.schema.integer_typed`: the schema, never the values):
    ``bins="integers"`` on the integers inside the bounds (a public side rounded inwards,
    ``ceil(lo)``, ``floor(hi)``: integer values clamp to the same ranks), where the bounds
    admit integer mode: numeric, holding at least one and at most ``MAX_BINS`` integers
    (one bin each for the tree) of magnitude below ``2**52`` (the grid of the exponential
    and recursive methods); ``"private"`` and one public side too. Otherwise (datetime or
    unreadable bounds, a range too wide) the query stays continuous, as for a float column,
    and the checks that follow refuse what they refused before. Public parameters only.
    """
    if bins is not None:
        return bins, bounds, "declared" if isinstance(bins, str) and bins == "integers" else None
    if isinstance(bounds, PrivateBounds) and bounds.datetimes:
        return bins, bounds, None
    inner = _integer_inside(bounds)
    if inner is None or not typed():
        return bins, bounds, None
    return "integers", inner, "column type"


def _integer_inside(bounds: Any) -> Any:
    """``bounds`` with each public side rounded inwards to an integer, or None where integer
    mode cannot hold them (see :func:`typed_bins`)."""
    if isinstance(bounds, PrivateBounds):
        sides = [_integer_side(b, up) if b is not None else None for b, up in
                 ((bounds.lower, True), (bounds.upper, False))]  # fmt: skip
        if (bounds.lower is not None and sides[0] is None) or (
            bounds.upper is not None and sides[1] is None
        ):
            return None
        return replace(bounds, lower=sides[0], upper=sides[1])
    if isinstance(bounds, str):
        return bounds if bounds == "private" else None
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        return None
    private = [isinstance(b, str) and b == "private" for b in bounds]
    pairs = zip(bounds, private, (True, False), strict=True)
    lo, hi = (b if p else _integer_side(b, up) for b, p, up in pairs)
    if lo is None or hi is None:
        return None
    if not any(private) and not 1 <= hi - lo + 1 <= MAX_BINS:
        return None
    return (lo, hi)


def _integer_side(bound: Any, lower: bool) -> int | None:
    """A public numeric side rounded inwards (up for the lower bound, down for the upper),
    or None: not a finite number, or of magnitude at or above ``2**52``."""
    if isinstance(bound, bool) or not isinstance(bound, int | float | np.integer | np.floating):
        return None
    if isinstance(bound, int | np.integer):
        side = int(bound)
    elif not math.isfinite(float(bound)):
        return None
    else:
        side = math.ceil(float(bound)) if lower else math.floor(float(bound))
    return side if abs(side) + (0 if lower else 1) < INTEGER_LIMIT else None


def _levels(q: Any) -> np.ndarray:
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qa.ndim != 1 or qa.size == 0:
        raise InvalidParameterError(
            f"The 'q' argument must hold at least one level, as a number or a 1-D list. Got {q!r}."
        )
    if np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(f"The 'q' argument must hold levels in [0, 1]. Got {q!r}.")
    return qa


def _bounds(bounds: Any) -> tuple[Any, float]:
    """The bounds as the quantile steps read them (a pair, or a private request) and the
    private bounds' share."""
    if isinstance(bounds, PrivateBounds):
        if bounds.max_bins is not None:
            raise InvalidParameterError(
                "treedp.PrivateBounds(max_bins=...) is for release_cdf with bins='integers'; "
                "the quantile methods choose their own bins."
            )
        return bounds.request if bounds.request != ("private", "private") else "private", float(
            bounds.share
        )
    private = private_request(bounds) is not None
    if isinstance(bounds, str) and not private:
        raise InvalidParameterError(must("bounds", f"be (lo, hi) or 'private'. Got {bounds!r}."))
    if not private and (not isinstance(bounds, tuple | list) or len(bounds) != 2):
        raise InvalidTypeError(must("bounds", f"be a pair (lo, hi) or 'private'. Got {bounds!r}."))
    return bounds, DEFAULT_SHARE
