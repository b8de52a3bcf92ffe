"""The quantile methods of ``treedp.quantiles``: one table row each, with its run.

:data:`QUANTILE_METHODS` maps a method's name (what ``method=`` takes and
:func:`treedp.quantiles_choice.choose_method` returns) to a :class:`QuantileMethod`: its
``run`` and the public facts the call checks before the charge, so that
:mod:`treedp.quantiles_run` asks the row instead of comparing names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.privacy import PureDP
from treedp.privacy.spend import SpendRecord
from treedp.quantiles_choice import tree_bins
from treedp.query import build_query
from treedp.release.discrete_quantiles import discrete_quantile_from
from treedp.release.shrunk import shrunk_quantiles
from treedp.release_stage import run_release
from treedp.value_methods._column import is_datetime_like, whole_pair
from treedp.value_methods.quantile_exponential import quantile_exponential
from treedp.value_methods.quantile_permute_flip import MAX_CANDIDATES, quantile_permute_flip
from treedp.value_methods.quantiles_recursive import quantiles_recursive

__all__ = [
    "QUANTILE_METHODS",
    "QuantileMethod",
    "binned_method",
    "fitting_bins",
    "inside_integer_limit",
    "integer_bounds",
]

#: What a method's run returns: the answers at the distinct levels, its spend record, its grid
#: size (or number of bins), its ε spent, for a method that releases counts its total n̂ (the
#: tree's total; the recursion's root side counts summed), and the tree's shrinkage toward the
#: uniform law (the share kept, :mod:`treedp.release.shrunk`; None for the other methods).
Outcome = tuple[Any, SpendRecord, int, float, float | None, float | None]
Run = Callable[
    [
        Any,
        np.ndarray,
        float,
        "tuple[Any, Any] | None",
        Any,
        str,
        "int | None",
        str,
        RandomSource,
        Any,
    ],
    Outcome,
]


@dataclass(frozen=True)
class QuantileMethod:
    """One quantile method.

    Attributes
    ----------
    name : str
    run : callable
        ``run(values, levels, epsilon, bounds, bins, neighbours, n, nan, source, privacy)``
        (``privacy``: a zCDP or (ε, δ) target for the tree; the selection methods get an
        ``epsilon`` calibrated to it, :mod:`treedp.quantile_privacy`).
    selections : bool
        One exponential selection per level: each must get a usable ε.
    binned : bool
        Counts into public bins (at most ``MAX_BINS``; datetime values need datetime bounds;
        privately found integer ranges are cut to ``MAX_BINS``).
    integer_mode : bool
        Works on the grid of integer bounds of magnitude below ``2**52``.
    unbounded : bool
        Runs without bounds (``bounds=None``): with ``bounds="private"`` it spends the whole
        ε on the quantiles, no share on a bounds step.
    sorted_after : bool
        Draws its levels independently: its answers are sorted (post-processing).
    max_integers : int or None
        Selects among the integers of public bounds: it needs ``bins="integers"`` and public
        bounds holding at most this many integers (checked before the charge). None: any.
    """

    name: str
    run: Run
    selections: bool
    binned: bool
    integer_mode: bool
    sorted_after: bool
    unbounded: bool = False
    max_integers: int | None = None


def _run_tree(
    values: Any,
    qa: np.ndarray,
    eps: float,
    bounds: tuple[Any, Any] | None,
    bins: Any,
    relation: str,
    n: int | None,
    nan: str,
    source: RandomSource,
    privacy: Any = None,
) -> Outcome:
    """The tree CDF's quantiles (a one-distribution release query, run by its stage); with a
    ``privacy`` target (zCDP or (ε, δ)) the release's Gaussian path at that target (its
    spend record states the measure)."""
    if bounds is None:  # pragma: no cover - the run gives the tree bounds (public or found)
        raise InvalidParameterError("The tree method needs bounds.")
    query = build_query(
        values,
        bounds=bounds,
        bins=fitting_bins(bounds, tree_bins(eps, n=n)) if bins is None else bins,
        epsilon=eps if privacy is None else None,
        privacy=privacy,  # a zCDP or (ε, δ) target: the Gaussian release
        neighbours=relation,
        n=n if relation == "replace" else None,  # under add/remove: the bins only
        nan=nan,
        rng=source,
    )
    rel = run_release(query)
    kept: float | None = None
    if bins == "integers":
        out: Any = discrete_quantile_from(rel.bins, rel.consistent_counts, qa)
    else:  # numbers: a point mass answered as the release does (release/atoms.py), off the
        # CDF shrunk toward the uniform law where noise alone could explain its shape
        answers, kept = shrunk_quantiles(rel, qa)
        out = np.atleast_1d(answers)
    spent = float(rel.guarantee.epsilon) if isinstance(rel.guarantee, PureDP) else 0.0
    return out, rel.mechanism.spend(), rel.bins.n_bins, spent, float(rel.n), kept


def fitting_bins(bounds: tuple[Any, Any], bins: int) -> int:
    """The rule's number of equal-width bins, halved until the public numeric ``bounds`` hold
    that many distinct float edges (datetime bounds: unchanged). The rule reads the released
    count, so its bins are only known after the charge: a refusal there would spend the
    budget for nothing (bounds ``(1e9, 1e9 + 1e-4)`` hold 256 bins, not 512)."""
    from treedp.domain import held_bins

    if is_datetime_like(bounds[0]) or is_datetime_like(bounds[1]):
        return bins
    while bins > 1 and held_bins(bounds, bins) is None:
        bins //= 2
    return bins


def _run_unbounded(
    values: Any,
    qa: np.ndarray,
    eps: float,
    bins: Any,
    relation: str,
    nan: str,
    source: RandomSource,
    independent: bool,
    side: tuple[Any, Any] = (None, None),
) -> Outcome:
    """No bounds: the exponential mechanism (one selection per level, or the recursion) over
    the lattice of the whole float line (:mod:`treedp.value_methods.unbounded_quantiles`);
    with ``bins="integers"`` its integer mode (each record spread over its integer's unit
    interval, answers integers; rounded down again, a no-op)."""
    from treedp.value_methods.float_lattice import TOTAL_CELLS
    from treedp.value_methods.unbounded_quantiles import quantiles_unbounded

    res = quantiles_unbounded(
        values,
        qa,
        epsilon=eps,
        neighbours=relation,
        nan=nan,
        rng=source,
        details=True,
        independent=independent,
        integers=bins == "integers",
        side=side,
    )
    out = np.asarray(res.value, dtype=np.float64)
    if bins == "integers":
        out = np.floor(out)
    return out, res.spend, TOTAL_CELLS, res.epsilon_spent, None, None


def _run_exponential(
    values: Any,
    qa: np.ndarray,
    eps: float,
    bounds: tuple[Any, Any] | None,
    bins: Any,
    relation: str,
    n: int | None,
    nan: str,
    source: RandomSource,
    privacy: Any = None,
) -> Outcome:
    """Smith's exponential mechanism per level (integers: ties spread inside their cell)."""
    if bounds is None or None in bounds:  # unknown bounds (a public side at most): the lattice
        side = _side(bounds, bins)
        return _run_unbounded(values, qa, eps, bins, relation, nan, source, True, side)
    if bins != "integers":
        return _on_grid(quantile_exponential, values, qa, eps, bounds, relation, nan, source)
    res = quantile_exponential(
        values,
        qa,
        bounds=inside_integer_limit(bounds),
        epsilon=eps,
        neighbours=relation,
        nan=nan,
        rng=source,
        details=True,
        integers=True,
    )
    return res.value, res.spend, res.grid_points, res.epsilon_spent, None, None


def _run_permute_and_flip(
    values: Any,
    qa: np.ndarray,
    eps: float,
    bounds: tuple[Any, Any] | None,
    bins: Any,
    relation: str,
    n: int | None,
    nan: str,
    source: RandomSource,
    privacy: Any = None,
) -> Outcome:
    """Permute-and-flip per level over the integers of the public bounds (integer bins only,
    checked before the charge). A zCDP or (ε, δ) target is met as pure ε (``ε²/2``)."""
    if bounds is None or bins != "integers":  # pragma: no cover - refused before the charge
        raise InvalidParameterError("permute_and_flip needs public bounds and integer bins.")
    res = quantile_permute_flip(
        values, qa, bounds=integer_bounds(bounds), epsilon=eps, neighbours=relation, nan=nan,
        rng=source, details=True,
    )  # fmt: skip
    return res.value, res.spend, res.grid_points, res.epsilon_spent, None, None


def _run_recursive(
    values: Any,
    qa: np.ndarray,
    eps: float,
    bounds: tuple[Any, Any] | None,
    bins: Any,
    relation: str,
    n: int | None,
    nan: str,
    source: RandomSource,
    privacy: Any = None,
) -> Outcome:
    """The recursive exponential mechanism (integers: the grid of ``[lo, hi + 1)``, ties
    spread inside their unit cell and the splits on whole cells, rounded down)."""
    if bounds is None or None in bounds:  # unknown bounds (a public side at most): the lattice
        side = _side(bounds, bins)
        return _run_unbounded(values, qa, eps, bins, relation, nan, source, False, side)
    if bins != "integers":
        return _on_grid(quantiles_recursive, values, qa, eps, bounds, relation, nan, source)
    lo, hi = integer_bounds(bounds)
    res = quantiles_recursive(
        values, qa, bounds=(lo, hi + 1), epsilon=eps, neighbours=relation, nan=nan, rng=source,
        details=True, integers=True,
    )  # fmt: skip
    out, spend, points, spent = res.value, res.spend, res.grid_points, res.epsilon_spent
    answers = np.minimum(np.floor(np.asarray(out, dtype=np.float64)), hi)
    return answers, spend, points, spent, res.records, None


def _side(bounds: tuple[Any, Any] | None, bins: Any) -> tuple[Any, Any]:
    """The public side of bounds with one unknown end (``(lo, None)``, ``(None, hi)``; on
    integer bins rounded inwards, to which integer data clamp with the same ranks); ``(None,
    None)`` for none."""
    if bounds is None:
        return None, None
    lo, hi = (float(b) if b is not None else None for b in bounds)
    if bins == "integers":
        lo = None if lo is None else float(math.ceil(lo))
        hi = None if hi is None else float(math.floor(hi))
    return lo, hi


def _on_grid(
    call: Callable[..., Any],
    values: Any,
    qa: np.ndarray,
    eps: float,
    bounds: tuple[Any, Any],
    relation: str,
    nan: str,
    source: RandomSource,
) -> Outcome:
    res = call(
        values,
        qa,
        bounds=bounds,
        epsilon=eps,
        neighbours=relation,
        nan=nan,
        rng=source,
        details=True,
    )
    return res.value, res.spend, res.grid_points, res.epsilon_spent, res.records, None


def inside_integer_limit(bounds: tuple[Any, Any]) -> tuple[int, int]:
    """Integer bounds moved inside the exponential method's integer mode (magnitude below
    ``2**52``): privately found ones may reach ``±(2**53 - 1)`` (public ones beyond the limit
    are refused before the charge). Post-processing of released bounds."""
    from treedp.value_methods.quantile_exponential import INTEGER_LIMIT

    lo, hi = integer_bounds(bounds)
    top = INTEGER_LIMIT - 2
    return max(min(lo, top - 1), -top), min(max(hi, -top + 1), top - 1)


def integer_bounds(bounds: tuple[Any, Any]) -> tuple[int, int]:
    if any(is_datetime_like(b) for b in bounds):
        raise InvalidTypeError("bins='integers' is for numbers, not datetimes.")
    pair = whole_pair(bounds)
    if pair is None:
        raise InvalidParameterError(
            f"The 'bounds' parameter must be whole numbers lo <= hi for bins='integers'. "
            f"Got {bounds!r} instead."
        )
    return pair


#: The quantile methods by name (the table :func:`treedp.quantiles` runs).
QUANTILE_METHODS: dict[str, QuantileMethod] = {
    "exponential": QuantileMethod("exponential", _run_exponential, True, False, True, True, True),
    "recursive": QuantileMethod("recursive", _run_recursive, True, False, True, False, True),
    "tree": QuantileMethod("tree", _run_tree, False, True, False, False),
    "permute_and_flip": QuantileMethod(
        "permute_and_flip", _run_permute_and_flip, True, False, True, True,
        max_integers=MAX_CANDIDATES,
    ),
}  # fmt: skip


def binned_method() -> QuantileMethod:
    """The method whose public checks are the strictest (it counts into bins): what a call
    checks when a private count may still pick the method."""
    return next(m for m in QUANTILE_METHODS.values() if m.binned)
