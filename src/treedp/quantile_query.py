"""The quantile part of a :class:`~treedp.query.Query`: levels, method, ``n`` policy, domain.

:func:`quantiles_request` checks the public parameters of a quantile query (what
:func:`treedp.quantiles` and :func:`treedp.median` take) before anything is read, and freezes
them into a :class:`QuantilesRequest`; :func:`treedp.quantiles_run.run_quantiles` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp._validation import check_int, must
from treedp.budget import MIN_EPSILON, check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.options import PrivateBounds
from treedp.quantile_privacy import check_privacy, equivalent_epsilon
from treedp.quantiles_choice import METHODS, check_n_share
from treedp.value_methods._column import check_nan, check_neighbours
from treedp.value_methods.bounds_split import DEFAULT_SHARE, private_request
from treedp.value_methods.private_bounds import check_known_bound

__all__ = ["QuantilesRequest", "quantiles_request"]


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
) -> QuantilesRequest:
    """Check a quantile query's public parameters; ``refused`` maps the release-only
    keywords to their values (None when not given)."""
    given = [name for name, value in refused.items() if value is not None]
    if given:
        raise InvalidParameterError(
            f"The {', '.join(repr(g) for g in given)} parameter(s) belong to a release "
            "(treedp.release_cdf), not to a quantile query."
        )
    epsilon, target = check_privacy(epsilon, privacy)
    eps = check_epsilon(epsilon if target is None else equivalent_epsilon(target))
    if target is not None and (isinstance(n, str) or (bounds is not None and _one_sided(bounds))):
        raise InvalidParameterError(
            "A 'privacy' target (zCDP or (epsilon, delta)) takes public bounds or "
            "bounds='private' (no bounds step), without n='private': the one-sided bounds "
            "scan and the private count are pure-epsilon steps. Give 'epsilon' for those."
        )
    qa = _levels(q)
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidParameterError(must("method", f"be one of {METHODS}. Got {method!r}."))
    if (
        bins is not None
        and bins != "integers"
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
    )


def _one_sided(bounds: Any) -> bool:
    """One public side and one private (a pure-ε scan)."""
    if isinstance(bounds, PrivateBounds):
        return bounds.request != ("private", "private")
    request = private_request(bounds)
    return request is not None and request != (None, None)


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
        return bounds.request if bounds.request != ("private", "private") else "private", float(
            bounds.share
        )
    private = private_request(bounds) is not None
    if isinstance(bounds, str) and not private:
        raise InvalidParameterError(must("bounds", f"be (lo, hi) or 'private'. Got {bounds!r}."))
    if not private and (not isinstance(bounds, tuple | list) or len(bounds) != 2):
        raise InvalidTypeError(must("bounds", f"be a pair (lo, hi) or 'private'. Got {bounds!r}."))
    return bounds, DEFAULT_SHARE
