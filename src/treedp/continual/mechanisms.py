"""The continual-release mechanisms: one table, one row each, nothing else switches on names.

A row says which noise families the mechanism adds, how it is built for a budget from public
parameters (``build(horizon, noise, budget, contributions, n_bins)``; None when it does not
apply), how its exact parameters come back from a state file (``load``) and how that file's
calibration is rebuilt from the same public parameters (``rebuild``: a loaded state is refused
unless the two agree exactly, :func:`treedp.continual.stream.load_continual`). Each
mechanism's module states its guarantee, neighbour relation, privacy unit and sensitivity
derivation; its ``sensitivity()`` returns the sensitivities as data and ``loss()`` the exact
total loss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from treedp.continual.blt import BLT_LIMIT, BltCounter
from treedp.continual.full_tree import FULL_LIMIT, FullTreeCounter, full_tree, padded_horizon
from treedp.continual.optimal import OPT_LIMIT, OptCounter
from treedp.continual.planner import FANOUTS, classic_tree, mean_variance, planned_tree
from treedp.continual.sqrt import SqrtCounter
from treedp.continual.sqrt_norm import NORM_LIMIT, NormSqrtCounter
from treedp.continual.tree import TreeCounter

__all__ = ["AUTO_FULL_LIMIT", "MECHANISMS", "SQRT_LIMIT", "Counter", "Row", "choose"]

Counter = TreeCounter | SqrtCounter | NormSqrtCounter | OptCounter | FullTreeCounter | BltCounter

#: Largest ``T·B`` for the square root (its state keeps ``2·T·B`` integers).
SQRT_LIMIT = 2**20
#: ``auto`` considers ``tree_full`` up to this ``T·B`` only: its state (``T' + 1`` numbers
#: per bin, all of its noise drawn at creation) is rewritten after every step, about 1 MB of
#: JSON here; by name it goes to ``T'·B <= 2**21``.
AUTO_FULL_LIMIT = 2**16


@dataclass(frozen=True)
class Row:
    """One mechanism of the table."""

    noises: tuple[str, ...]
    build: Callable[[int, str, float, int, int], Counter | None]
    load: Callable[[dict[str, Any]], Counter]
    summary: str
    rebuild: Callable[[Counter, int, str, float, int, int], Counter | None]
    #: ``refuse(horizon, n_bins)``: why the row cannot serve these public parameters (the end
    #: of a "The 'mechanism' parameter must ..." message), or None.
    refuse: Callable[[int, int], str | None] = lambda horizon, n_bins: None
    #: ``auto`` considers the row only up to this ``T·B`` (None: wherever it builds).
    auto_limit: int | None = None


def _sqrt(horizon: int, noise: str, budget: float, m: int, n_bins: int) -> Counter | None:
    if noise != "gaussian" or horizon * n_bins > SQRT_LIMIT:
        return None
    return SqrtCounter.for_budget(horizon, budget, m)


def _sqrt_norm(horizon: int, noise: str, budget: float, m: int, n_bins: int) -> Counter | None:
    if noise != "gaussian" or horizon * n_bins > SQRT_LIMIT or horizon > NORM_LIMIT:
        return None
    return NormSqrtCounter.for_budget(horizon, budget, m)


def _opt(horizon: int, noise: str, budget: float, m: int, n_bins: int) -> Counter | None:
    if noise != "gaussian" or horizon * n_bins > SQRT_LIMIT or horizon > OPT_LIMIT:
        return None
    return OptCounter.for_budget(horizon, budget, m)


def _blt(horizon: int, noise: str, budget: float, m: int, n_bins: int) -> Counter | None:
    if noise != "gaussian" or horizon > BLT_LIMIT:
        return None
    return BltCounter.for_budget(horizon, budget, m)


def _full(horizon: int, noise: str, budget: float, m: int, n_bins: int) -> Counter | None:
    if noise != "laplace":
        return None
    return full_tree(horizon, budget, m, n_bins)


def _binary(horizon: int, noise: str, budget: float, m: int, n_bins: int) -> Counter | None:
    return classic_tree(horizon, noise, budget, m)


def _same(
    build: Callable[[int, str, float, int, int], Counter | None],
) -> Callable[[Counter, int, str, float, int, int], Counter | None]:
    """A row whose plan depends on the public parameters only: rebuilt from scratch."""
    return lambda _c, h, noise, b, m, n_bins: build(h, noise, b, m, n_bins)


def _rebuild_tree(c: Counter, h: int, noise: str, b: float, m: int, n_bins: int) -> Counter | None:
    """The planned tree with the stored fan-out (the search over fan-outs is skipped)."""
    if not isinstance(c, TreeCounter) or c.k not in FANOUTS:
        return None
    return planned_tree(h, noise, b, m, k=c.k)


def _rebuild_full(c: Counter, h: int, noise: str, b: float, m: int, n_bins: int) -> Counter | None:
    """``tree_full`` with the stored fan-out (the search over fan-outs takes 9 s at 2**20)."""
    if not isinstance(c, FullTreeCounter) or c.k not in FANOUTS or noise != "laplace":
        return None
    return full_tree(h, b, m, n_bins, k=c.k)


def _rebuild_opt(c: Counter, h: int, noise: str, b: float, m: int, n_bins: int) -> Counter | None:
    """``σ²`` for the stored ``v`` (planning ``v`` takes 13 s at 2**10; any ``v`` is private at
    the loss its own ``M`` gives, and ``from_description`` checked ``M`` reproduces)."""
    if not isinstance(c, OptCounter) or noise != "gaussian":
        return None
    if h * n_bins > SQRT_LIMIT or h > OPT_LIMIT:
        return None
    return OptCounter.for_budget(h, b, m, v=c.v)


def _refuse_sqrt(horizon: int, n_bins: int) -> str | None:
    if horizon * n_bins > SQRT_LIMIT:
        return f"be 'tree' when horizon x bins > {SQRT_LIMIT}."
    return None


def _refuse_norm(horizon: int, n_bins: int) -> str | None:
    if horizon > NORM_LIMIT and horizon * n_bins <= SQRT_LIMIT:
        return f"be 'sqrt' or 'tree' when horizon > {NORM_LIMIT}."
    return _refuse_sqrt(horizon, n_bins)


def _refuse_opt(horizon: int, n_bins: int) -> str | None:
    if horizon > OPT_LIMIT or horizon * n_bins > SQRT_LIMIT:
        return f"be 'tree' or 'sqrt' when horizon > {OPT_LIMIT} or horizon x bins > 2**20."
    return None


def _refuse_full(horizon: int, n_bins: int) -> str | None:
    if min(padded_horizon(horizon, k) * n_bins for k in range(2, 17)) > FULL_LIMIT:
        return f"be 'tree' when the padded horizon x bins > {FULL_LIMIT}."
    return None


def _refuse_blt(horizon: int, n_bins: int) -> str | None:
    return f"be 'tree' when horizon > {BLT_LIMIT}." if horizon > BLT_LIMIT else None


MECHANISMS: dict[str, Row] = {
    "binary": Row(
        ("laplace", "gaussian"),
        _binary,
        TreeCounter.from_description,
        "binary tree, log2 T + 1 levels, equal budgets, Honaker's online estimate (the seeds)",
        _same(_binary),
    ),
    "tree": Row(
        ("laplace", "gaussian"),
        lambda h, noise, b, m, n_bins: planned_tree(h, noise, b, m),
        TreeCounter.from_description,
        "k-ary tree (k = 2..16 planned) with tuned level budgets, Honaker's online estimate",
        _rebuild_tree,
    ),
    "tree_full": Row(
        ("laplace",),
        _full,
        FullTreeCounter.from_description,
        "k-ary tree decoded by full least squares, all noise drawn up front, pure ε, T'·B <= 2**21",
        _rebuild_full,
        _refuse_full,
        AUTO_FULL_LIMIT,
    ),
    "sqrt": Row(
        ("gaussian",),
        _sqrt,
        SqrtCounter.from_description,
        "square-root (Toeplitz) factorisation, streamed, zCDP only",
        _same(_sqrt),
        _refuse_sqrt,
    ),
    "sqrt_norm": Row(
        ("gaussian",),
        _sqrt_norm,
        NormSqrtCounter.from_description,
        "square root with every column scaled to unit norm, streamed, zCDP, T <= 2**13",
        _same(_sqrt_norm),
        _refuse_norm,
    ),
    "opt": Row(
        ("gaussian",),
        _opt,
        OptCounter.from_description,
        "numerically optimised lower-triangular factorisation, streamed, zCDP, T <= 2**10",
        _rebuild_opt,
        _refuse_opt,
    ),
    "blt": Row(
        ("gaussian",),
        _blt,
        BltCounter.from_description,
        "row-scaled buffered Toeplitz (sum of exponentials), 3d + 1 numbers per bin, zCDP, "
        "T <= 2**20",
        _same(_blt),
        _refuse_blt,
    ),
}

#: The rows ``mechanism="auto"`` chooses between (``binary`` is the baseline).
_AUTO = ("tree", "tree_full", "sqrt", "sqrt_norm", "opt", "blt")


@lru_cache(maxsize=32)
def choose(
    mechanism: str, horizon: int, noise: str, budget: float, m: int, n_bins: int
) -> tuple[str, Counter]:
    """The named row's counter, or (``"auto"``) the one with the least exact mean variance.

    Public parameters only, and the counters are frozen: the choice is kept per process
    (a Monte Carlo study of many seeded streams plans once; planning ``auto`` at ``T = 1024``
    fits 30 optimisations, seconds)."""
    names = _AUTO if mechanism == "auto" else (mechanism,)
    best: tuple[str, Counter] | None = None
    best_score = float("inf")
    for name in names:
        row = MECHANISMS[name]
        if noise not in row.noises:
            continue
        if mechanism == "auto" and row.auto_limit is not None and horizon * n_bins > row.auto_limit:
            continue
        counter = row.build(horizon, noise, budget, m, n_bins)
        if counter is None:
            continue
        score = mean_variance(counter)
        if score < best_score:
            best, best_score = (name, counter), score
    assert best is not None  # the public checks refused every impossible request
    return best
