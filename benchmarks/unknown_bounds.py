"""Quantiles with unknown bounds at small budgets, against the powers-of-ten recipe.

Run: ``PYTHONPATH=src python benchmarks/unknown_bounds.py [--reps R] [--many] [--integers]``.
Prints a Markdown table (docs/private_bounds.md holds one run). Issue #33 item 4:
``treedp.quantiles(x, [.25, .5, .75], bounds="private", epsilon=ε)`` must never fail; its mean
rank gap must be at most 0.5× that of the recipe "a plain exponential mechanism over
powers-of-ten candidates at ε/3 per quartile" at ``ε·n`` from 100 to 10^4 (``n = 10^4``).

* Recipe (the baseline, same process): candidates ``0`` and ``±10^k``, ``k = -3..12`` (33
  points, OpenDP / dp-wizard style), score ``-|#{x < c} - q n|``, rate ``(ε/3)/(2Δ)`` with
  ``Δ = max(q, 1 - q)`` (add/remove), sampled in floating point (a baseline, not a release).
* treedp: the default call (``method="auto"``), and ``method="tree"`` (private bounds by the
  scans, then the tree) and ``method="exponential"``, each with its own seed per repetition.
* Rank gap: the distance from ``q n`` to the ranks ``[#{x < v}, #{x <= v}]`` that the answer
  ``v`` holds (0 inside a block of ties), averaged over the three quartiles and the
  repetitions, over ``n``. "finite": the share of answers within ``±1e300`` and ... inside the
  data's range widened 10× (a garbage answer such as 1.8e275 is not).
* ``--integers``: int64 columns (Poisson(3), zero-inflated counts, Adult's age,
  hours_per_week and capital_gain resampled to ``n``, and two wide ranges: incomes and
  seconds), read in integer mode by their type, where ``method="auto"`` plans the tree after
  the bounds step and, when the scans collapse or the found bounds hold more than 4,096
  integers, releases with the recursion on the rest (:mod:`treedp.quantiles_fallback`); the
  "tree" column is ``method="tree"``, what ``auto`` ran before those rules.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import treedp
from treedp.noise import InsecureSeededSource

Q = np.array([0.25, 0.5, 0.75])
CANDIDATES = np.unique(np.r_[0.0, 10.0 ** np.arange(-3, 13), -(10.0 ** np.arange(-3, 13))])


def datasets(n: int, integers: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    zeros = rng.random(n) < 0.7
    if integers:  # int64 columns: integer mode from the column's type
        adult = treedp.datasets.load_adult()
        pick = rng.integers(0, len(adult["age"]), n)
        columns = {
            "Poisson(3), int": rng.poisson(3, n).astype(np.int64),
            "zero-inflated counts (70% 0, else round lognormal(5, 1))": np.where(
                zeros, 0, np.round(rng.lognormal(5, 1, n))
            ).astype(np.int64),
            **{
                f"Adult {c}, int": np.asarray(adult[c])[pick].astype(np.int64)
                for c in ("age", "hours_per_week", "capital_gain")
            },
        }
        # Wide integer ranges (drawn after the columns above, which stay as they were).
        columns["incomes, int (round lognormal(8, 1))"] = np.round(rng.lognormal(8, 1, n)).astype(
            np.int64
        )
        columns["seconds, int (floor exponential(5000))"] = np.floor(
            rng.exponential(5000, n)
        ).astype(np.int64)
        return columns
    return {
        "lognormal(10, 1)": rng.lognormal(10, 1, n),
        "normal(-50, 20)": rng.normal(-50, 20, n),
        "Poisson(3)": rng.poisson(3, n).astype(float),
        "zero-inflated (70% 0, else lognormal(5, 1))": np.where(zeros, 0.0, rng.lognormal(5, 1, n)),
    }


def rank_gap(xs: np.ndarray, est: np.ndarray) -> np.ndarray:
    below = np.searchsorted(xs, est, side="left") - Q * xs.size
    above = Q * xs.size - np.searchsorted(xs, est, side="right")
    return np.maximum(0.0, np.maximum(below, above)) / xs.size


def recipe(xs: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    ranks = np.searchsorted(xs, CANDIDATES, side="left")
    out = []
    for q in Q:
        rate = (eps / 3) / (2 * max(q, 1 - q))
        logits = -rate * np.abs(ranks - q * xs.size)
        p = np.exp(logits - logits.max())
        out.append(CANDIDATES[rng.choice(CANDIDATES.size, p=p / p.sum())])
    return np.array(out)


def sane(xs: np.ndarray, est: np.ndarray) -> float:
    width = max(xs[-1] - xs[0], 1.0)
    lo, hi = xs[0] - 10 * width, xs[-1] + 10 * width
    return float(np.mean((est >= lo) & (est <= hi)))


def many_levels(reps: int, n: int) -> None:
    """``--many``: many levels with both bounds private, the tree (its scans, then the CDF)
    against the recursion (no bounds step): mean rank error in records."""
    data = datasets(n)
    data.pop("Poisson(3)")
    print("| levels | ε | " + " | ".join(f"{k} tree / recursive" for k in data) + " |")
    print("|---|---|" + "---|" * len(data))
    for m in (13, 29, 99):
        q = np.arange(1, m + 1) / (m + 1)
        for eps in (0.05, 0.3):
            cells = []
            for x in data.values():
                xs = np.sort(x)
                means = []
                for method in ("tree", "recursive"):
                    errs = []
                    for rep in range(reps):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", treedp.BoundsWarning)
                            res = treedp.quantiles(
                                x, q, epsilon=eps, bounds="private", method=method,
                                rng=InsecureSeededSource(rep),
                            )  # fmt: skip
                        est = np.asarray(res.values, dtype=float)
                        below = np.searchsorted(xs, est, side="left") - q * xs.size
                        above = q * xs.size - np.searchsorted(xs, est, side="right")
                        errs.append(float(np.maximum(0.0, np.maximum(below, above)).mean()))
                    means.append(float(np.mean(errs)))
                cells.append(f"{means[0]:.1f} / {means[1]:.1f}")
            print(f"| {m} | {eps} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--n", type=int, default=10**4)
    ap.add_argument("--many", action="store_true", help="the many-levels table only")
    ap.add_argument("--integers", action="store_true", help="int64 columns (integer mode)")
    args = ap.parse_args()
    start = time.time()
    if args.many:
        many_levels(args.reps, args.n)
        return
    print(
        "| data | ε·n | recipe gap | treedp auto gap (ratio) | exponential gap | "
        "tree gap | auto / tree answers in range | goal ≤ 0.5 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, x in datasets(args.n, args.integers).items():
        xs = np.sort(x)
        for en in (100, 500, 1000, 10_000):
            eps = en / args.n
            gaps: dict[str, list[np.ndarray]] = {k: [] for k in ("recipe", "auto", "exp", "tree")}
            ok: dict[str, list[float]] = {"auto": [], "tree": []}
            base = np.random.default_rng(1)
            for rep in range(args.reps):
                gaps["recipe"].append(rank_gap(xs, recipe(xs, eps, base)))
                for key, method in (("auto", "auto"), ("exp", "exponential"), ("tree", "tree")):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", treedp.BoundsWarning)
                        res = treedp.quantiles(
                            x,
                            Q,
                            bounds="private",
                            epsilon=eps,
                            method=method,
                            rng=InsecureSeededSource(1000 * rep + len(key)),
                        )
                    est = np.asarray(res.values, dtype=float)
                    gaps[key].append(rank_gap(xs, est))
                    if key in ok:
                        ok[key].append(sane(xs, est))
            g = {k: float(np.mean(v)) for k, v in gaps.items()}
            ratio = g["auto"] / g["recipe"] if g["recipe"] > 0 else float("inf")
            print(
                f"| {name} | {en} | {g['recipe']:.4f} | {g['auto']:.4f} ({ratio:.2f}) | "
                f"{g['exp']:.4f} | {g['tree']:.4f} | {np.mean(ok['auto']):.2f} / "
                f"{np.mean(ok['tree']):.2f} | {'met' if ratio <= 0.5 else 'not met'} |",
                flush=True,
            )
    print(
        f"\nn = {args.n}, {args.reps} repetitions per cell, gaps over n; "
        f"{time.time() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
