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
same sensitivity ``max(q, 1 - q)``), permute-and-flip with that score (Monte Carlo), and
``treedp.quantiles(x, [q], bins="integers", ...)`` itself (since session 20 ``auto`` runs
permute-and-flip with its shrunk score there). ``--integers --scales 0 1 2 4 inf`` instead
compares permute-and-flip's score shrinks by Monte Carlo (``shrink_study``).
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


def pf_mean(
    score: np.ndarray, rate: float, draws: int, rng: Any, metric: np.ndarray | None = None
) -> float:
    """Permute-and-flip as report-noisy-max with exponential noise (its law), Monte Carlo:
    the mean ``metric`` (default: the score) of the selected candidate."""
    noisy = -rate * score + rng.exponential(size=(draws, score.size))
    return float((score if metric is None else metric)[np.argmax(noisy, axis=1)].mean())


INTEGER_DATA: dict[str, tuple[Any, tuple[int, int]]] = {
    "geometric": (lambda r, n: r.geometric(0.05, n), (0, 200)),
    "rounded-normal": (lambda r, n: np.clip(np.round(r.normal(50, 10, n)), 0, 100), (0, 100)),
    "poisson3": (lambda r, n: r.poisson(3, n), (0, 20)),
    "poisson30": (lambda r, n: r.poisson(30, n), (0, 100)),
    # session 20: ages on loose bounds, sparse ids, a 60% block at 0, a narrow column on wide bounds
    "ages": (lambda r, n: np.clip(np.round(r.gamma(4, 10, n)) + 17, 17, 90), (0, 120)),
    "uniform-ids": (lambda r, n: r.integers(0, 5000, n), (0, 5000)),
    "zero-inflated": (lambda r, n: np.where(r.random(n) < 0.6, 0, r.poisson(20, n)), (0, 100)),
    "poisson30-loose": (lambda r, n: r.poisson(30, n), (0, 2000)),
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


def shrunk_score(xs: np.ndarray, cells: np.ndarray, t: float, rate: float, scales: float):  # type: ignore[no-untyped-def]
    """treedp's permute-and-flip score with ``scales`` noise scales of shrink (0: the rank gap;
    ``inf``: the unbounded half-width shrink, the blocks' midpoints)."""
    a = np.searchsorted(xs, cells, side="left")
    b = np.searchsorted(xs, cells, side="right")
    e = np.minimum((b - a) / 2, scales / rate)
    return np.maximum(0.0, np.maximum(a + e - t, t - (b - e)))


def shrink_study(args: argparse.Namespace) -> None:
    """Permute-and-flip with the shrunk score at each of ``--scales`` (Monte Carlo of its law,
    the rank gap as the metric): how the shipped cap of two noise scales was chosen."""
    heads = " | ".join(f"{k:g}" for k in args.scales)
    print(f"\n| data | n | ε | q | shrink {heads} (noise scales) |")
    print("|---|---|---|---|" + "---|" * len(args.scales))
    rng = np.random.default_rng(2 * NOISE_SEED)
    for name in args.int_data:
        draw, bounds = INTEGER_DATA[name]
        cells = np.arange(bounds[0], bounds[1] + 1, dtype=float)
        for n in args.ns:
            for eps in args.eps:
                for q in (0.1, 0.25, 0.5, 0.75):
                    rate = eps / (2 * max(q, 1 - q))
                    cols: list[list[float]] = [[] for _ in args.scales]
                    for d in range(args.data):
                        xs = np.sort(draw(np.random.default_rng(d), n).astype(float))
                        gap = rank_gaps(xs, cells, q * n)
                        for j, k in enumerate(args.scales):
                            score = shrunk_score(xs, cells, q * n, rate, k)
                            cols[j].append(pf_mean(score, rate, args.pf_draws, rng, gap))
                    row = " | ".join(f"{np.mean(v):.2f}" for v in cols)
                    print(f"| {name} | {n:.0e} | {eps:g} | {q:g} | {row} |", flush=True)


def integer_study(args: argparse.Namespace) -> None:
    """The integer table: exact laws of the spread selection (treedp's exponential method)
    and of the exponential mechanism on the integers, permute-and-flip's law by Monte Carlo,
    and ``treedp.quantiles(..., bins="integers")`` itself (``--runs`` per data set; ``auto``
    takes permute-and-flip there since session 20)."""
    head = "spread EM | EM, rank-gap score | P&F, rank-gap score | treedp run"
    print(f"\n| data | n | ε | q | {head} |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(2 * NOISE_SEED)
    for name in args.int_data:
        draw, bounds = INTEGER_DATA[name]
        cells = np.arange(bounds[0], bounds[1] + 1, dtype=float)
        for eps in args.eps:
            for q in (0.5, 0.25):
                rate = eps / (2 * max(q, 1 - q))
                cols: dict[str, list[float]] = {"spread": [], "em": [], "pf": [], "run": []}
                for d in range(args.data):
                    xs = np.sort(draw(np.random.default_rng(d), args.ns[0]).astype(float))
                    gap = rank_gaps(xs, cells, q * xs.size)
                    cols["spread"].append(spread_expectation(xs, bounds, q, rate))
                    cols["em"].append(em_expectation(gap, rate))
                    cols["pf"].append(pf_mean(gap, rate, args.pf_draws, rng))
                    for j in range(args.runs):
                        res = treedp.quantiles(
                            xs, [q], epsilon=eps, bounds=bounds, bins="integers",
                            rng=InsecureSeededSource(NOISE_SEED + d * args.runs + j),
                        )  # fmt: skip
                        cols["run"].append(rank_error(xs, np.atleast_1d(res.values), np.array([q])))
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
    ap.add_argument("--int-data", nargs="+", default=list(INTEGER_DATA), help="--integers data")
    ap.add_argument(
        "--scales", type=float, nargs="+", default=[], help="--integers: the shrink study instead"
    )
    args = ap.parse_args()
    if args.integers:
        print(f"machine: {machine()}")
        start = time.perf_counter()
        (shrink_study if args.scales else integer_study)(args)
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
