"""The tree shapes the planner tries, and the references it must never lose to."""

from __future__ import annotations

import math

import numpy as np

from treedp.planning.levels import Family, budgets_from
from treedp.tree.design import (
    best_factorisation,
    budgets_for_branching,
    optimal_height,
    smooth_paddings,
)

__all__ = [
    "FLAT_LIMIT",
    "candidate_shapes",
    "mixed_shapes",
    "near_equal",
    "neighbour_shapes",
    "paper_configuration",
    "references",
]


def near_equal(n_bins: int, height: int) -> list[tuple[int, ...]]:
    """The smallest common fan-out covering ``B`` in ``height`` levels, and the same with as
    many levels as possible one smaller."""
    b = max(2, math.ceil(n_bins ** (1 / height)))
    while b > 2 and (b - 1) ** height >= n_bins:
        b -= 1
    while b**height < n_bins:
        b += 1
    out = [(b,) * height]
    if b - 1 >= 2:
        for smaller in range(height, 0, -1):
            if (b - 1) ** smaller * b ** (height - smaller) >= n_bins:
                out.append((b - 1,) * smaller + (b,) * (height - smaller))
                break
    return out


#: Above this many bins the flat tree (error ~ B, a tree's ~ a power of log B) cannot win.
FLAT_LIMIT = 4096


def candidate_shapes(n_bins: int, deep: bool = False) -> list[tuple[int, ...]]:
    """The classic shapes: the flat tree, near-equal fan-outs (both orders) and exact
    factorisations of nearby smooth sizes; ``deep`` tries every height up to ``log2 B``."""
    if n_bins < 2:
        return [()]
    shapes: set[tuple[int, ...]] = {(n_bins,)} if n_bins <= FLAT_LIMIT else set()
    max_height = max(1, math.ceil(math.log2(n_bins)))
    # around the best common fan-out (about 17): heights log_64 B .. log_2 B, capped unless
    # deep (Gaussian noise favours small fan-outs: L2² grows like the number of levels)
    low = max(1, math.floor(math.log(n_bins, 64)))
    heights = range(low, (max_height if deep else min(max_height, low + 8)) + 1)
    for height in heights:
        for vec in near_equal(n_bins, height):
            shapes.add(vec)
            shapes.add(vec[::-1])
    if n_bins <= 10**8:
        for padded in smooth_paddings(n_bins)[:3]:
            for height in range(max(1, low), min(max_height, low + 4) + 1):
                found = best_factorisation(padded, height)
                if found is not None and (height > 1 or n_bins <= FLAT_LIMIT):
                    shapes.add(found[0])
                    shapes.add(found[0][::-1])
    return sorted(s for s in shapes if all(k >= 2 for k in s))


def mixed_shapes(n_bins: int) -> list[tuple[int, ...]]:
    """Mixed radices: a small fan-out at the top, near-equal ones increasing below it (the
    shape of the best trees with free budgets and the root off)."""
    if n_bins < 4:
        return []
    max_height = math.ceil(math.log2(n_bins))
    low = max(2, math.floor(math.log(n_bins, 64)))
    out: set[tuple[int, ...]] = set()
    for height in range(low, min(max_height, low + 4) + 1):
        for top in range(2, 9):
            rest = -(-n_bins // top)
            if rest < 2:
                continue
            for vec in near_equal(rest, height - 1):
                out.add((top, *sorted(vec)))
    return sorted(s for s in out if all(k >= 2 for k in s))


def neighbour_shapes(branching: tuple[int, ...], n_bins: int) -> set[tuple[int, ...]]:
    """Shapes one step away: one fan-out ±1, a neighbouring level's or the leaves' refitted
    to cover ``B``."""
    h = len(branching)
    out: set[tuple[int, ...]] = set()
    for i in range(h):
        for delta in (-1, 1):
            k = branching[i] + delta
            if k < 2:
                continue
            for j in {i - 1, i + 1, h - 1}:  # a neighbour level or the leaves refit
                if j == i or not 0 <= j < h:
                    continue
                vec = list(branching)
                vec[i] = k
                others = math.prod(vec) // vec[j]
                vec[j] = max(2, -(-n_bins // others))
                candidate = tuple(vec)
                if candidate != branching and math.prod(candidate) <= 2 * n_bins:
                    out.add(candidate)
    return out


def paper_configuration(n_bins: int, eps: float) -> tuple[tuple[int, ...], list[float]]:
    """The paper's recipe: pad to ``B`` or the next power of two, take the height and exact
    factors of eq. (7) (Theorems V.1-V.2), then the budgets of Theorem IV.2."""
    options = []
    for padded in sorted({n_bins, 1 << max(1, (n_bins - 1).bit_length())}):
        if padded < 2:
            continue
        _, factors, cost = optimal_height(padded)
        options.append((padded * cost, factors))
    factors = min(options)[1]
    return factors, budgets_for_branching(factors, eps)


def references(
    n_bins: int, eps: float, nb: str, family: Family
) -> list[tuple[tuple[int, ...], tuple[float, ...], str]]:
    """Configurations the plan must never lose to: the binary tree and, for variances
    ``∝ budget⁻²`` (Laplace), the paper's optimum."""
    if n_bins < 2:
        return []
    height = max(1, (n_bins - 1).bit_length())
    equal = tuple(budgets_from(np.ones(height + 1), eps, nb).tolist())
    refs = [((2,) * height, equal, "binary tree, equal budgets")]
    if n_bins <= 2**25 and family.exponent == 2:
        factors, below = paper_configuration(n_bins, eps)
        if nb == "add_remove":  # the paper has an exact root; give the root an equal share
            share = eps / (len(factors) + 1)
            budgets = (share, *[b * (eps - share) / eps for b in below])
        else:
            budgets = (0.0, *below)
        refs.append((tuple(factors), budgets, "paper optimum (Thms IV.2, V.1-V.2)"))
    return refs
