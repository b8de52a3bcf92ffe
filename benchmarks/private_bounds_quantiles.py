"""Quantiles with ``bounds="private"`` against the tight bounds given free (issue #33 item 4).

Run: ``PYTHONPATH=src python benchmarks/private_bounds_quantiles.py [--draws D] [--reps R]``
(also ``benchmarks/private_bounds.py --quantiles``). Prints a Markdown table
(docs/private_bounds.md holds one run). Goal: the mean rank error of 5 quantiles (levels
``j/6``, ε = 1) with private bounds at most 1.2× the same call with the data's ``(min, max)``
given free (a non-private oracle), run in the same process.

Rows:

* ``default``: ``treedp.quantiles(x, q, epsilon=1, bounds=...)`` with its default method (the
  recursion; with private bounds it runs over the float lattice with no bounds step, so the
  whole ε goes to the quantiles);
* ``tree 4096``: ``method="tree", bins=4096``, the issue's reference. The private call spends
  10% of ε on the two scans; the row splits the cost in two with a third call: the tight
  bounds at the ε left after the scans (the share alone), and the found bounds' width over the
  data's range (the bins' loss of resolution);
* Adult ``age`` and ``capital_gain`` with ``bins="integers"`` (the tree on integer bins).

The mean is over ``D`` draws of the data (seeds ``0..D-1``; the Adult columns are one fixed
dataset) and ``R`` releases per draw, each with its own seed; "±" is one standard error of the
ratio (delta method over the ``D·R`` paired errors). Rank error: the distance from ``q n`` to
the ranks ``[#{x < v}, #{x <= v}]`` of the answer ``v`` (0 inside a block of ties).
A rank error below one record for both calls counts as met whatever the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

import treedp
import treedp.datasets
from treedp.noise import InsecureSeededSource
from treedp.value_methods.bounds_split import remaining_epsilon

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine

Q = np.arange(1, 6) / 6
EPSILON = 1.0
SHARE = 0.1

Law = Callable[[np.random.Generator], np.ndarray]


def laws() -> dict[str, tuple[Law | np.ndarray, str | None]]:
    """Synthetic laws (drawn ``D`` times) and the two Adult columns (fixed)."""
    adult = treedp.datasets.load_adult()
    return {
        "lognormal(10, 1), n=10^4": (lambda r: r.lognormal(10, 1, 10**4), None),
        "normal(-50, 20), n=10^4": (lambda r: r.normal(-50, 20, 10**4), None),
        "t(3)·1000, n=10^4": (lambda r: r.standard_t(3, 10**4) * 1000, None),
        "adult age": (np.asarray(adult["age"]), "integers"),
        "adult capital_gain": (np.asarray(adult["capital_gain"]), "integers"),
    }


def rank_error(xs: np.ndarray, est: np.ndarray) -> float:
    below = np.searchsorted(xs, est, side="left") - Q * xs.size
    above = Q * xs.size - np.searchsorted(xs, est, side="right")
    return float(np.maximum(0.0, np.maximum(below, above)).mean())


def ratio_se(p: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """The ratio of the means and its standard error (delta method, paired samples)."""
    mp, mt = float(p.mean()), float(t.mean())
    if mt == 0:
        return (1.0 if mp == 0 else float("inf")), 0.0
    r = mp / mt
    d = (p - r * t) / mt  # influence of each pair on the ratio
    return r, float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0


def run_case(
    xs: np.ndarray, calls: dict[str, dict[str, object]], seed: int
) -> tuple[dict[str, float], tuple[float, float]]:
    """One release per call (own seed); the rank errors and the private call's bounds."""
    out: dict[str, float] = {}
    found = (float("nan"), float("nan"))
    for j, (key, kwargs) in enumerate(calls.items()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = treedp.quantiles(xs, Q, rng=InsecureSeededSource(seed * 10 + j), **kwargs)  # type: ignore[arg-type]
        out[key] = rank_error(xs, np.asarray(res.values, dtype=float))
        if key == "private":
            found = (float(res.bounds[0]), float(res.bounds[1]))
    return out, found


def table(draws: int, reps: int, only: list[str] | None) -> None:
    print(
        "| data | call | rank err tight / private (ratio ± se) | tight at 0.9ε (share alone) "
        "| found width / range | goal ≤ 1.2 |"
    )
    print("|---|---|---|---|---|---|")
    rest = remaining_epsilon(EPSILON, SHARE)
    for name, (law, bins) in laws().items():
        if only and not any(name.startswith(p) for p in only):
            continue
        variants: dict[str, dict[str, dict[str, object]]] = {}
        if bins == "integers":
            variants["tree, integers"] = {
                "tight": {"epsilon": EPSILON, "bins": bins},
                "private": {"epsilon": EPSILON, "bins": bins, "bounds": "private"},
                "share": {"epsilon": rest, "bins": bins},
            }
        else:
            variants["default"] = {
                "tight": {"epsilon": EPSILON},
                "private": {"epsilon": EPSILON, "bounds": "private"},
            }
            variants["tree 4096"] = {
                "tight": {"epsilon": EPSILON, "bins": 4096, "method": "tree"},
                "private": {
                    "epsilon": EPSILON,
                    "bins": 4096,
                    "method": "tree",
                    "bounds": "private",
                },
                "share": {"epsilon": rest, "bins": 4096, "method": "tree"},
            }
        for label, calls in variants.items():
            errs: dict[str, list[float]] = {key: [] for key in calls}
            widths: list[float] = []
            for d in range(draws if callable(law) else 1):
                x = np.sort(law(np.random.default_rng(d)) if callable(law) else law)
                tight = (x[0], x[-1]) if bins is None else (int(x[0]), int(x[-1]))
                given = {
                    key: ({**kw, "bounds": tight} if "bounds" not in kw else kw)
                    for key, kw in calls.items()
                }
                n_reps = reps if callable(law) else reps * 2
                for r in range(n_reps):
                    e, found = run_case(x, given, 1000 * d + r)
                    for key, v in e.items():
                        errs[key].append(v)
                    widths.append((found[1] - found[0]) / float(x[-1] - x[0]))
            t, p = np.array(errs["tight"]), np.array(errs["private"])
            ratio, se = ratio_se(p, t)
            share = "— (no bounds step)"
            if "share" in errs:
                alone = float(np.mean(errs["share"]))
                share = f"{alone:.2f} ({alone / t.mean():.2f})" if t.mean() > 0 else f"{alone:.2f}"
            width = f"{np.median(widths):.2f}" if "share" in calls else "— (float lattice)"
            met = ratio <= 1.2 or max(t.mean(), p.mean()) < 1.0
            print(
                f"| {name} | {label} | {t.mean():.2f} / {p.mean():.2f} ({ratio:.2f} ± {se:.2f}) | "
                f"{share} | {width} | {'met' if met else 'not met'} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=10, help="draws of each synthetic law")
    ap.add_argument("--reps", type=int, default=20, help="releases per draw")
    ap.add_argument("--only", nargs="*", default=None, help="dataset names to run (prefixes)")
    args = ap.parse_args()
    start = time.time()
    table(args.draws, args.reps, args.only)
    print(
        f"\nε = {EPSILON}, bounds_share = {SHARE}, {args.draws} draws × {args.reps} releases "
        f"per synthetic cell (Adult: {2 * args.reps} releases); {time.time() - start:.0f} s; "
        f"{machine()}; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
