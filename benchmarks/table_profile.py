"""Quartiles of a 20-column table at ε = 1 in total: ``treedp.profile`` vs powers-of-ten EM.

Run: ``PYTHONPATH=src python benchmarks/table_profile.py [--reps R] [--epsilon E]``. Prints a
Markdown table (docs/profile.md holds one run).

The table: the 4 columns of the vendored Adult extract (``treedp.datasets.load_adult``:
48,842 rows; capital_gain is 92% zeros) and 16 synthetic columns of the same length with
ranges nobody gave: lognormal incomes, normal values with negatives, Poisson counts,
zero-inflated amounts, integers with heavy ties, exponential waiting times, a wide uniform.
Integer columns are int64 (one bin per integer), the others float64 (1024 bins): the types
come from the dtypes, as ``treedp.profile`` reads them.

Both methods get ε = E (default 1) in total, split equally over the 20 columns:

* **treedp**: ``treedp.profile(table, epsilon=E)``: per column, private bounds with 10% of
  its share, then one CDF release with the rest; the quartiles are read from it.
* **baseline** (the recipe of OpenDP issue #2644): per column and per quartile (a third of the
  column's share each), the exponential mechanism over the candidates
  ``{0} ∪ {±10^k : k = -3..9}`` with OpenDP's quantile score
  ``|(1 - q)·#{x < c} - q·#{x > c}|`` (sensitivity ``max(q, 1 - q)`` under add/remove),
  ``P(c) ∝ exp(-ε_q · score / (2Δ))``; sampled exactly (a uniform proposal accepted with an
  exact ``Bernoulli(exp(-γ))`` on rational ``γ``, :func:`treedp.noise.exp_thresholds`).

Metric: the rank error of an answer ``v`` for level ``q``: the distance from ``q·n`` to the
ranks ``[#{x < v}, #{x ≤ v}]`` that ``v`` holds (0 inside), in records; averaged over the
three quartiles, the 20 columns and ``R`` repetitions (default 5). Goal (issue #32): treedp's
mean at most 0.5× the baseline's.
"""

from __future__ import annotations

import argparse
import time
import warnings
from fractions import Fraction

import numpy as np

import treedp
from _common import machine
from treedp.datasets import load_adult
from treedp.noise.discrete_laplace import uniform_below
from treedp.noise.exp_thresholds import bernoulli_scaled_exp
from treedp.profiling.front import split_epsilon

QS = (0.25, 0.5, 0.75)
CANDIDATES = np.array(sorted({0.0} | {s * 10.0**k for k in range(-3, 10) for s in (1, -1)}))


def make_table(seed: int = 2026) -> dict[str, np.ndarray]:
    """The 20 columns (4 real, 16 synthetic), all of Adult's length."""
    adult = load_adult()
    n = adult["age"].size
    rng = np.random.default_rng(seed)
    zeros = rng.random(n) < 0.6
    table = dict(adult)
    table.update(
        {
            "income_lognormal": rng.lognormal(10.5, 0.8, n),
            "rent_lognormal": rng.lognormal(7, 0.4, n),
            "balance_normal": rng.normal(-200, 1500, n),
            "temperature_normal": rng.normal(12, 9, n),
            "score_normal_small": rng.normal(0, 0.3, n),
            "visits_poisson": rng.poisson(3, n).astype(np.int64),
            "calls_poisson": rng.poisson(40, n).astype(np.int64),
            "claims_zero_inflated": np.where(zeros, 0.0, rng.lognormal(8, 1.2, n)),
            "children_zero_inflated": np.where(zeros, 0, rng.poisson(2, n)).astype(np.int64),
            "rating_ties": rng.integers(1, 6, n).astype(np.int64),
            "floor_ties": np.round(rng.normal(5, 3, n)).astype(np.int64),
            "year_ties": rng.integers(1950, 2024, n).astype(np.int64),
            "wait_exponential": rng.exponential(300, n),
            "latency_exponential": rng.exponential(0.05, n),
            "id_uniform_wide": rng.integers(0, 10**9, n).astype(np.int64),
            "delay_minutes": np.round(rng.normal(5, 30, n) + rng.exponential(20, n)).astype(
                np.int64
            ),
        }
    )
    return table


def rank_error(sorted_x: np.ndarray, v: float, q: float) -> float:
    """Distance from ``q·n`` to the ranks ``[#{x < v}, #{x <= v}]`` that ``v`` holds."""
    lo = np.searchsorted(sorted_x, v, side="left")
    hi = np.searchsorted(sorted_x, v, side="right")
    target = q * sorted_x.size
    return float(max(lo - target, target - hi, 0.0))


def em_quantile(sorted_x: np.ndarray, q: float, epsilon: Fraction, source: object) -> float:
    """The exponential mechanism on the powers-of-ten candidates, sampled exactly."""
    below = np.searchsorted(sorted_x, CANDIDATES, side="left")
    above = sorted_x.size - np.searchsorted(sorted_x, CANDIDATES, side="right")
    qf = Fraction(q)
    scores = [abs((1 - qf) * int(b) - qf * int(a)) for b, a in zip(below, above, strict=True)]
    best = min(scores)
    rate = epsilon / (2 * max(qf, 1 - qf))
    while True:  # uniform proposal, accepted with probability exp(-rate (s_i - best))
        i = int(uniform_below(len(scores), 1, source)[0])  # type: ignore[arg-type]
        if bernoulli_scaled_exp(1, rate * (scores[i] - best), 1, source)[0]:  # type: ignore[arg-type]
            return float(CANDIDATES[i])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    table = make_table()
    names = list(table)
    sorted_cols = {c: np.sort(table[c]) for c in names}
    n = table["age"].size
    shares = split_epsilon(args.epsilon, len(names))
    ours = {c: [] for c in names}  # type: dict[str, list[float]]
    base = {c: [] for c in names}  # type: dict[str, list[float]]
    t_ours = t_base = 0.0
    for rep in range(args.reps):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", treedp.BoundsWarning)
            prof = treedp.profile(
                table, epsilon=args.epsilon, rng=treedp.InsecureSeededSource(100 + rep)
            )
        for c in names:
            est = np.atleast_1d(prof[c].quantile(np.array(QS)))
            ours[c] += [
                rank_error(sorted_cols[c], float(v), q) for v, q in zip(est, QS, strict=True)
            ]
        t_ours += time.perf_counter() - start
        start = time.perf_counter()
        source = treedp.InsecureSeededSource(900 + rep)
        for c, share in zip(names, shares, strict=True):
            eps_q = Fraction(repr(share)) / 3
            for q in QS:
                v = em_quantile(sorted_cols[c], q, eps_q, source)
                base[c].append(rank_error(sorted_cols[c], v, q))
        t_base += time.perf_counter() - start
    print(
        f"Machine: {machine()}; n = {n} rows x {len(names)} columns; epsilon = "
        f"{args.epsilon:g} in total ({shares[0]:.6g} per column); {args.reps} repetitions; "
        f"time per profile {t_ours / args.reps:.2f} s (treedp), {t_base / args.reps:.2f} s "
        "(baseline, sorted columns given)\n"
    )
    print("| column | treedp rank error (records) | baseline rank error (records) | ratio |")
    print("|---|---:|---:|---:|")
    for c in names:
        a, b = float(np.mean(ours[c])), float(np.mean(base[c]))
        ratio = f"{a / b:.3f}" if b > 0 else "—"
        print(f"| {c} | {a:.1f} ({a / n:.2%} of n) | {b:.1f} ({b / n:.2%} of n) | {ratio} |")
    a = float(np.mean([v for c in names for v in ours[c]]))
    b = float(np.mean([v for c in names for v in base[c]]))
    print(
        f"| **mean over columns** | **{a:.1f}** ({a / n:.2%}) | **{b:.1f}** ({b / n:.2%}) | "
        f"**{a / b:.3f}** |"
    )
    print(f"\nGoal: ratio <= 0.5: {'met' if a / b <= 0.5 else 'missed'}")


if __name__ == "__main__":
    main()
