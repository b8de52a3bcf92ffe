"""Quantiles with one public side: over every float, against a bounds step first.

Run: ``PYTHONPATH=src:benchmarks python benchmarks/one_sided_quantiles.py [--reps R]``.

``treedp.quantiles(x, q, bounds=(0, "private"))`` with ``method="auto"`` (the exponential
mechanism at one level, the recursion for a few) used to spend 10% of ε on one AboveThreshold
scan for the upper bound and run the method on the found range (with the recursion over every
float as the fallback when the scan said nothing). At ``n·ε`` of a few hundred the scan's
allowance (``k = 2 t_ν``, 60 records at ε_b = 0.1) is a large share of the records, so the
found bound clamps the upper half of the data: a public lower bound made the answers worse than
none. Since session 21 the methods over the float lattice need no bounds step with one public
side either: the whole ε selects among every float and the public side clamps the answers
(post-processing).

``--tree-vs-recursion``: on the integer columns only, ``method="tree"`` (what ``auto`` runs
there from two levels, after the one scan) against ``method="recursive"`` (over every float,
the zone at the public side), same call otherwise.

Both paths run here in the same process on the same data and noise seeds: the default call
(over every float), and the same call with ``n="private"``, which (under add/remove) still plans
a bounds step for these methods and spends no count (the method does not depend on ``n``), i.e.
the path every one-sided call took before. Integer columns use ``bins="integers"``. Mean rank
gap in records over the levels and repetitions, ± one standard error.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import treedp
from _common import machine, rank_gap
from treedp.noise import InsecureSeededSource

LEVELS = {1: [0.5], 3: [0.25, 0.5, 0.75], 5: [0.1, 0.25, 0.5, 0.75, 0.9]}


def columns(n: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, bool]]:
    """Non-negative columns of ``n`` records, and whether each is integer."""
    adult = treedp.datasets.load_adult()
    pick = rng.integers(0, len(adult["age"]), n)
    return {
        "lognormal(10, 1)": (rng.lognormal(10, 1, n), False),
        "exponential(30)": (rng.exponential(30, n), False),
        "zero-inflated (70% 0, else lognormal(5, 1))": (
            np.where(rng.random(n) < 0.7, 0.0, rng.lognormal(5, 1, n)),
            False,
        ),
        "Poisson(30), int": (rng.poisson(30, n), True),
        "geometric(0.05), int": (rng.geometric(0.05, n), True),
        "zero-inflated (60% 0, else Poisson(20)), int": (
            np.where(rng.random(n) < 0.6, 0, rng.poisson(20, n)),
            True,
        ),
        "incomes, round lognormal(10, 1), int": (np.round(rng.lognormal(10, 1, n)), True),
        "Adult age, int": (np.asarray(adult["age"])[pick], True),
        "Adult hours_per_week, int": (np.asarray(adult["hours_per_week"])[pick], True),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--settings", type=str, nargs="+", default=["1000:0.1", "1000:0.5",
                        "10000:0.1", "10000:1"], help="n:epsilon pairs")  # fmt: skip
    parser.add_argument("--ms", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--tree-vs-recursion", action="store_true")
    args = parser.parse_args()
    if args.tree_vs_recursion:
        LEVELS.update({m: list(np.arange(1, m + 1) / (m + 1)) for m in args.ms})
    start = time.time()
    print(f"# {machine()}; {args.reps} repetitions; {time.strftime('%Y-%m-%d %H:%M UTC')}")
    first, second = ("tree", "recursive") if args.tree_vs_recursion else ("before", "now")
    print(f"| column | n | ε | m | {first} | {second} | ratio |")
    print("|---|---|---|---|---|---|---|")
    for setting in args.settings:
        n, eps = int(setting.split(":")[0]), float(setting.split(":")[1])
        for m in args.ms:
            q = LEVELS[m]
            for name in columns(n, np.random.default_rng(0)):
                before, now = [], []
                for rep in range(args.reps):
                    x, integer = columns(n, np.random.default_rng(1000 + rep))[name]
                    if args.tree_vs_recursion and not integer:
                        break
                    x = x.astype(np.int64) if integer else x
                    call = {"epsilon": eps, "bounds": (0, "private")}
                    call |= {"bins": "integers"} if integer else {}
                    pair = ({"method": "tree"}, {"method": "recursive"})
                    if not args.tree_vs_recursion:  # the old path: n="private" plans the scan
                        pair = ({"n": "private"}, {})
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", treedp.BoundsWarning)
                        a = treedp.quantiles(x, q, rng=InsecureSeededSource(rep), **call,
                                             **pair[0])  # fmt: skip
                        b = treedp.quantiles(x, q, rng=InsecureSeededSource(rep), **call,
                                             **pair[1])  # fmt: skip
                    before.append(rank_gap(x, np.atleast_1d(a.value), q))
                    now.append(rank_gap(x, np.atleast_1d(b.value), q))
                if not before:
                    continue
                o, w = np.array(before), np.array(now)
                se = np.sqrt(args.reps)
                ratio = w.mean() / o.mean() if o.mean() > 0 else float("nan")
                print(
                    f"| {name} | {n} | {eps:g} | {m} | {o.mean():.2f} ± {o.std() / se:.2f} "
                    f"| {w.mean():.2f} ± {w.std() / se:.2f} | {ratio:.2f} |",
                    flush=True,
                )
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
