"""One quantile level (the median): treedp's exponential mechanism against OpenDP's, by law.

Run: ``PYTHONPATH=src:benchmarks[:/tmp/peers] python benchmarks/one_level_laws.py [--data 200]``
(OpenDP 0.16 optional, installed as for ``quantiles_peers.py``; without it its column is left
out). At one level ``treedp.quantiles`` runs Smith's exponential mechanism on a fine public
grid: the gap ``r`` between sorted records (rank ``r``) is drawn with probability proportional
to its width times ``exp(-λ |r - n/2|)``, ``λ = ε / (2Δ)``, ``Δ = 1/2`` at the median under
add/remove. OpenDP's ``make_private_quantile`` scores 2049 equally spaced candidates with the
same rate per rank and selects by permute-and-flip (report-noisy-max with exponential noise,
McKenna & Sheldon 2020), whose expected score is never worse than the exponential mechanism's
on the same candidates and better when few candidates lie near the top.

Per data set (fresh data per seed, the grid's bounds) the script prints, as means over the data
sets of the expected rank gap given the data (the metric of ``quantiles_peers.py``):

* ``treedp law``: the exact expectation of Smith's mechanism over the gaps (closed form);
* ``treedp run``: ``treedp.quantiles(x, [0.5], epsilon=ε, bounds=...)``, ``--runs`` draws per data
  set (noise seeds independent of the data): a Monte Carlo check that treedp samples that law;
* ``EM on 2049``: the exact expectation of the exponential mechanism on OpenDP's candidates;
* ``P&F on 2049``: permute-and-flip on the same candidates, Monte Carlo (``--pf-draws`` per data
  set, numpy's generator, report-noisy-max with exponential noise);
* ``opendp run``: OpenDP itself, ``--runs`` draws per data set (if installed).

So the columns separate the candidate grid's effect (``EM on 2049`` against ``treedp law``)
from the selection rule's (``P&F on 2049`` against ``EM on 2049``).

``--integers`` studies integer mode instead (tied integers, ``bins="integers"``; levels 1/2 and
1/4): the exact expected rank gap of treedp's selection (each tie block spread over its unit
cell, ``quantile_exponential._spread``, then the exponential mechanism on the positions; the
answer is the integer whose cell holds the draw), of the exponential mechanism over the
integers of the bounds with the rank gap ``dist(qn, [#{x < k}, #{x <= k}])`` as score (the
same sensitivity ``max(q, 1 - q)``), and permute-and-flip with that score (Monte Carlo).
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

import treedp
from _common import machine
from quantiles_peers import (
    DISTS,
    NOISE_SEED,
    OPENDP_CANDIDATES,
    available,
    rank_error,
    run_opendp_exp,
)
from treedp.noise import InsecureSeededSource
from treedp.value_methods.quantile_exponential import _spread

LEVEL = np.array([0.5])


def smith_expectation(xs: np.ndarray, bounds: tuple[float, float], rate: float) -> float:
    """Exact expected rank gap of Smith's mechanism at the median (continuous data)."""
    n = xs.size
    edges = np.concatenate([[bounds[0]], np.clip(np.sort(xs), *bounds), [bounds[1]]])
    width = np.diff(edges)
    gap = np.abs(np.arange(n + 1) - n / 2)
    with np.errstate(divide="ignore"):
        logw = np.log(width) - rate * gap
    p = np.exp(logw - logw.max())
    return float((p * gap).sum() / p.sum())


def rank_gaps(srt: np.ndarray, answers: np.ndarray, t: float) -> np.ndarray:
    """Rank gap of each answer: the distance from ``t`` to its ranks ``[#{x < v}, #{x <= v}]``
    (``srt`` sorted; the per-answer form of ``quantiles_peers.rank_error``)."""
    below = np.searchsorted(srt, answers, side="left")
    above = np.searchsorted(srt, answers, side="right")
    return np.maximum(0.0, np.maximum(below - t, t - above))


def em_expectation(score: np.ndarray, rate: float) -> float:
    p = np.exp(-rate * (score - score.min()))
    return float((p * score).sum() / p.sum())


def pf_mean(score: np.ndarray, rate: float, draws: int, rng: Any) -> float:
    """Permute-and-flip as report-noisy-max with exponential noise (its law), Monte Carlo."""
    noisy = -rate * score + rng.exponential(size=(draws, score.size))
    return float(score[np.argmax(noisy, axis=1)].mean())


INTEGER_DATA: dict[str, tuple[Any, tuple[int, int]]] = {
    "geometric": (lambda r, n: r.geometric(0.05, n), (0, 200)),
    "rounded-normal": (lambda r, n: np.clip(np.round(r.normal(50, 10, n)), 0, 100), (0, 100)),
    "poisson3": (lambda r, n: r.poisson(3, n), (0, 20)),
    "poisson30": (lambda r, n: r.poisson(30, n), (0, 100)),
}


def spread_expectation(xs: np.ndarray, bounds: tuple[int, int], q: float, rate: float) -> float:
    """Exact expected rank gap of the spread selection (sorted integer data)."""
    n, t = xs.size, q * xs.size
    edges = np.concatenate([[bounds[0]], _spread(xs), [bounds[1] + 1.0]])  # treedp's own spread
    cells = np.arange(bounds[0], bounds[1] + 1)
    gap_of_cell = rank_gaps(xs, cells.astype(float), t)
    total = weight = 0.0
    for r in range(n + 1):  # gap r between positions, cut at the integer cells it crosses
        a, b = edges[r], edges[r + 1]
        for k in range(int(np.floor(a)), int(np.ceil(b))):
            width = min(b, k + 1) - max(a, k)
            if width > 0 and bounds[0] <= k <= bounds[1]:
                p = width * math.exp(-rate * abs(r - t))
                total += p * gap_of_cell[k - bounds[0]]
                weight += p
    return total / weight


def integer_study(args: argparse.Namespace) -> None:
    print("\n| data | n | ε | q | spread EM (treedp) | EM, rank-gap score | P&F, rank-gap score |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(2 * NOISE_SEED)
    for name, (draw, bounds) in INTEGER_DATA.items():
        cells = np.arange(bounds[0], bounds[1] + 1, dtype=float)
        for eps in args.eps:
            for q in (0.5, 0.25):
                rate = eps / (2 * max(q, 1 - q))
                cols: dict[str, list[float]] = {"spread": [], "em": [], "pf": []}
                for d in range(args.data):
                    xs = np.sort(draw(np.random.default_rng(d), args.ns[0]).astype(float))
                    gap = rank_gaps(xs, cells, q * xs.size)
                    cols["spread"].append(spread_expectation(xs, bounds, q, rate))
                    cols["em"].append(em_expectation(gap, rate))
                    cols["pf"].append(pf_mean(gap, rate, args.pf_draws, rng))
                row = " | ".join(
                    f"{np.mean(v):.2f} ± {np.std(v, ddof=1) / math.sqrt(len(v)):.2f}"
                    for v in cols.values()
                )
                print(f"| {name} | {args.ns[0]:.0e} | {eps:g} | {q:g} | {row} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=int, default=200, help="data sets per cell")
    ap.add_argument("--runs", type=int, default=5, help="treedp / OpenDP draws per data set")
    ap.add_argument("--pf-draws", type=int, default=400)
    ap.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--dists", nargs="+", default=["lognormal", "uniform", "normal"])
    ap.add_argument("--integers", action="store_true", help="the integer-mode study instead")
    args = ap.parse_args()
    if args.integers:
        print(f"machine: {machine()}")
        start = time.perf_counter()
        integer_study(args)
        print(f"\n{time.perf_counter() - start:.0f} s")
        return
    have_opendp = "opendp-exp" in available()
    print(f"machine: {machine()}; OpenDP {'present' if have_opendp else 'absent'}")
    print("\n| data | n | ε | treedp law | treedp run | EM on 2049 | P&F on 2049 | opendp run |")
    print("|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for n in args.ns:
        for dist in args.dists:
            draw, bounds, _ = DISTS[dist]
            cand = np.linspace(bounds[0], bounds[1], OPENDP_CANDIDATES)
            for eps in args.eps:
                rate = eps  # ε / (2Δ), Δ = 1/2 at the median
                cols: dict[str, list[float]] = {k: [] for k in ("law", "run", "em", "pf", "od")}
                pf_rng = np.random.default_rng(2 * NOISE_SEED)
                for d in range(args.data):
                    xs = draw(np.random.default_rng(d), n)
                    cols["law"].append(smith_expectation(xs, bounds, rate))
                    score = rank_gaps(np.sort(xs), cand, n / 2)
                    cols["em"].append(em_expectation(score, rate))
                    cols["pf"].append(pf_mean(score, rate, args.pf_draws, pf_rng))
                    for j in range(args.runs):
                        seed = d * args.runs + j
                        res = treedp.quantiles(
                            xs, LEVEL, epsilon=eps, bounds=bounds,
                            rng=InsecureSeededSource(NOISE_SEED + seed),
                        )  # fmt: skip
                        cols["run"].append(rank_error(xs, np.atleast_1d(res.values), LEVEL))
                        if have_opendp:
                            est = run_opendp_exp(xs, LEVEL, eps, bounds, False, seed)
                            cols["od"].append(rank_error(xs, est, LEVEL))
                cells = []
                for key in ("law", "run", "em", "pf", "od"):
                    a = np.asarray(cols[key])
                    if a.size == 0:
                        cells.append("-")
                        continue
                    se = a.std(ddof=1) / math.sqrt(a.size)
                    cells.append(f"{a.mean():.3f} ± {se:.3f}")
                print(f"| {dist} | {n:.0e} | {eps:g} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
