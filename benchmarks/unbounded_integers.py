"""Integer columns without bounds: the float lattice's integer mode against its plain cells.

Run: ``PYTHONPATH=src:benchmarks python benchmarks/unbounded_integers.py [--reps R]``.

With ``bounds="private"`` on both sides, ``treedp.quantiles`` runs the exponential mechanism
(one level) or the recursion (several) over the lattice of every float
(:mod:`treedp.value_methods.unbounded_quantiles`), with no bounds step. On integer data
(``bins="integers"`` or an integer column type) it used to spread each record inside its
lattice cell (1/2048 wide at 52) and round the answer down; the gap between two blocks of
ties (2,047 cells) then scored the lower block's top rank, and outweighed the block holding
the target, whose one cell answered it. Since session 21 each integer's records are spread over
the whole unit interval ``[v, v + 1)`` of the lattice, every unit of which answers ``v``.

Both are run here in the same process, on the same data and noise seeds, through
``quantiles_unbounded(..., integers=False)`` then ``floor`` (the old integer mode, exactly) and
``quantiles_unbounded(..., integers=True)`` (the new): the mean rank gap over the levels and
repetitions, in records, ± one standard error. Rank gap: the distance from ``q n`` to the
ranks ``[#{x < v}, #{x <= v}]`` that the answer ``v`` holds (0 inside its block of ties).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import treedp
from _common import machine, rank_gap
from treedp.noise import InsecureSeededSource
from treedp.value_methods.unbounded_quantiles import quantiles_unbounded

LEVELS = {1: [0.5], 3: [0.25, 0.5, 0.75], 5: [0.1, 0.25, 0.5, 0.75, 0.9]}


def columns(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Integer columns of ``n`` records."""
    adult = treedp.datasets.load_adult()
    pick = rng.integers(0, len(adult["age"]), n)
    return {
        "round normal(40, 10)": np.round(rng.normal(40, 10, n)),
        "Poisson(30)": rng.poisson(30, n),
        "Poisson(3)": rng.poisson(3, n),
        "geometric(0.05)": rng.geometric(0.05, n),
        "zero-inflated (60% 0, else Poisson(20))": np.where(
            rng.random(n) < 0.6, 0, rng.poisson(20, n)
        ),
        "signed, round normal(0, 300)": np.round(rng.normal(0, 300, n)),
        "incomes, round lognormal(10, 1)": np.round(rng.lognormal(10, 1, n)),
        **{f"Adult {c}": np.asarray(adult[c])[pick] for c in ("age", "hours_per_week")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--ns", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--ms", type=int, nargs="+", default=[1, 3, 5])
    args = parser.parse_args()
    start = time.time()
    print(f"# {machine()}; {args.reps} repetitions; {time.strftime('%Y-%m-%d %H:%M UTC')}")
    print("| column | n | ε | m | plain cells, floored | integer mode | ratio |")
    print("|---|---|---|---|---|---|---|")
    wins = losses = 0
    for n in args.ns:
        names = list(columns(n, np.random.default_rng(0)))
        for eps in args.epsilons:
            for m in args.ms:
                q = LEVELS[m]
                for name in names:
                    old, new = [], []
                    for rep in range(args.reps):
                        x = columns(n, np.random.default_rng(1000 + rep))[name].astype(np.int64)
                        call = {"epsilon": eps, "independent": m == 1}
                        a = quantiles_unbounded(x, q, rng=InsecureSeededSource(rep), **call)
                        b = quantiles_unbounded(
                            x, q, rng=InsecureSeededSource(rep), integers=True, **call
                        )
                        old.append(rank_gap(x, np.floor(np.atleast_1d(a)), q))
                        new.append(rank_gap(x, np.atleast_1d(b), q))
                    o, w = np.array(old), np.array(new)
                    se = np.sqrt(args.reps)
                    ratio = w.mean() / o.mean() if o.mean() > 0 else float("nan")
                    wins += bool(w.mean() + 2 * w.std() / se < o.mean())
                    losses += bool(o.mean() + 2 * o.std() / se < w.mean())
                    print(
                        f"| {name} | {n} | {eps:g} | {m} | {o.mean():.2f} ± {o.std() / se:.2f} "
                        f"| {w.mean():.2f} ± {w.std() / se:.2f} | {ratio:.2f} |",
                        flush=True,
                    )
    took = time.time() - start
    print(f"\nLower by two standard errors: {wins} rows; higher: {losses}; {took:.0f} s")


if __name__ == "__main__":
    main()
