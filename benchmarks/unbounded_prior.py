"""Quantiles without bounds at small budgets: the recursion's base measures against the uniform.

Run: ``PYTHONPATH=src:benchmarks python benchmarks/unbounded_prior.py [--reps R]``.

``treedp.quantiles(x, q, bounds="private", epsilon=ε)`` (``method="auto"``) on columns a
statistician meets (proportions capped at 1.0, percentages capped at 100, symmetric data at
three scales, heavy tails, small positive scales, zero-inflated, tied floats, a constant
column, two Adult integer columns), ``n`` in {10^3, 10^4}, ``ε·n`` in {100, 1000}, ``m`` in
{1, 3, 5, 9, 29} evenly spaced levels. Two columns per cell, the same data and noise seeds in
the same process: "uniform", every recursion node weighing its units alike (the release
before :mod:`treedp.value_methods.lattice_prior`, restored here by replacing its
``node_prior`` with one that returns None), "unthinned", session 22's measures (weight 1 from
``BOOST_BITS`` octaves on: ``THIN_BITS = 0``), and "measures", the shipped default. Printed per
column, averaged over the settings: the mean rank gap (``_common.rank_gap``, over ``n``) and
the shares of answers inside the data's range widened 10x and 1000x on each side (``[min -
10 r, max + 10 r]``, ``r`` the range, or ``max(|x|, 1)`` for a constant column), then the
settings where the shipped measures lose to each baseline.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import treedp
from _common import machine, rank_gap
from treedp.noise import InsecureSeededSource
from treedp.value_methods import lattice_prior as lp
from treedp.value_methods import unbounded_quantiles as uq

LEVELS = {m: list(np.arange(1, m + 1) / (m + 1)) for m in (1, 3, 5, 9, 29)}


def columns() -> dict[str, Callable[[int, np.random.Generator], np.ndarray]]:
    adult = treedp.datasets.load_adult()

    def resample(name: str) -> Callable[[int, np.random.Generator], np.ndarray]:
        col = np.asarray(adult[name]).astype(np.int64)
        return lambda n, r: col[r.integers(0, col.size, n)]

    return {
        "proportions, 15% at the cap 1.0": lambda n, r: np.where(
            r.random(n) < 0.15, 1.0, r.beta(2, 5, n)
        ),
        "percentages capped at 100": lambda n, r: np.minimum(
            100.0, np.round(r.normal(70, 25, n), 1)
        ),
        "normal(0, 0.01)": lambda n, r: r.normal(0, 0.01, n),
        "normal(0, 1)": lambda n, r: r.normal(0, 1, n),
        "normal(0, 1000)": lambda n, r: r.normal(0, 1000, n),
        "t(3)": lambda n, r: r.standard_t(3, n),
        "normal(5, 10)": lambda n, r: r.normal(5, 10, n),
        "uniform(0, 1)": lambda n, r: r.random(n),
        "lognormal(0, 3)": lambda n, r: r.lognormal(0, 3, n),
        "lognormal(-5, 2)": lambda n, r: r.lognormal(-5, 2, n),
        "zero-inflated (50% 0, else lognormal(3, 1))": lambda n, r: np.where(
            r.random(n) < 0.5, 0.0, r.lognormal(3, 1, n)
        ),
        "floats 0, 1, 2": lambda n, r: r.integers(0, 3, n).astype(np.float64),
        "a 0/1 flag as floats, 30% ones": lambda n, r: (r.random(n) < 0.3).astype(np.float64),
        "ratings 1-5 as floats": lambda n, r: r.choice(
            np.arange(1.0, 6.0), n, p=[0.05, 0.1, 0.2, 0.35, 0.3]
        ),
        "constant 5.0": lambda n, r: np.full(n, 5.0),
        "Adult capital_gain, int": resample("capital_gain"),
        "Adult hours_per_week, int": resample("hours_per_week"),
    }


def in_range(xs: np.ndarray, answers: np.ndarray, widen: float = 10.0) -> float:
    r = xs[-1] - xs[0]
    r = r if r > 0 else max(abs(float(xs[-1])), 1.0)
    inside = (answers >= xs[0] - widen * r) & (answers <= xs[-1] + widen * r)
    return float(np.mean(inside))


VARIANTS = ("uniform", "unthinned", "measures")
#: The figures of a cell: the mean rank gap over n, the share of answers in the range widened
#: 10x and widened 1000x.
FIGURES = ("gap", "in range", "within 1000x")


def run(x: np.ndarray, q: list[float], eps: float, reps: int, variant: str) -> list[float]:
    """:data:`FIGURES` over ``reps`` seeded calls."""
    real, thin = uq.node_prior, lp.THIN_BITS
    if variant == "uniform":
        uq.node_prior = lambda *args, **kwargs: None  # type: ignore[assignment]
    if variant == "unthinned":
        lp.THIN_BITS = 0
    try:
        got = []
        xs = np.sort(x.astype(np.float64))
        for rep in range(reps):
            res = treedp.quantiles(x, q, bounds="private", epsilon=eps,
                                   rng=InsecureSeededSource(1000 + rep))  # fmt: skip
            v = np.asarray(res.values, dtype=np.float64)
            got.append([rank_gap(xs, v, q) / x.size, in_range(xs, v), in_range(xs, v, 1e3)])
    finally:
        uq.node_prior, lp.THIN_BITS = real, thin
    return list(np.mean(got, axis=0))


def _cells(mean: np.ndarray) -> str:
    """A table row's figures: per figure, per variant."""
    k = len(VARIANTS)
    return " | ".join(
        " | ".join(f"{v:.{4 if f == 0 else 3}f}" for v in mean[f * k : (f + 1) * k])
        for f in range(len(FIGURES))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    start = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# {machine()}; {args.reps} repetitions; {stamp}")
    heads = " | ".join(f"{what}: {v}" for what in FIGURES for v in VARIANTS)
    print(f"| column | {heads} |")
    print("|---" * (1 + len(FIGURES) * len(VARIANTS)) + "|")
    rows: list[tuple[Any, ...]] = []
    totals = np.zeros(len(FIGURES) * len(VARIANTS))
    for name, make in columns().items():
        cells = []
        for n in (1000, 10_000):
            x = make(n, np.random.default_rng(7))
            for en in (100, 1000):
                for m, q in LEVELS.items():
                    got = np.array([run(x, q, en / n, args.reps, v) for v in VARIANTS])
                    cells.append(got.T.ravel())  # figure-major
                    rows.append((name, n, en, m, *cells[-1]))
        mean = np.mean(cells, axis=0)
        totals += mean
        print(f"| {name} | {_cells(mean)} |")
    print(f"| **mean over the columns** | {_cells(totals / len(columns()))} |")
    shipped = len(VARIANTS) - 1
    for b, base in enumerate(VARIANTS[:-1]):
        worse = [r for r in rows if r[4 + shipped] > 1.1 * r[4 + b] + 0.002]
        better = [r for r in rows if r[4 + shipped] < 0.9 * r[4 + b] - 0.002]
        print(f"\nAgainst {base}, {len(rows)} settings: gap lower in {len(better)}, higher in "
              f"{len(worse)} (beyond 10% + 0.002 n). Higher:")  # fmt: skip
        for r in worse:
            print(f"- {r[0]}, n = {r[1]}, eps*n = {r[2]}, m = {r[3]}: "
                  f"{r[4 + b]:.4f} -> {r[4 + shipped]:.4f}")  # fmt: skip
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
