"""``treedp.quantiles`` (no ``n`` given) against OpenDP, python-dp and diffprivlib (issue #33).

Run: ``PYTHONPATH=src:/tmp/peers python benchmarks/quantiles_peers.py [--reps R]`` with the
peers installed outside the project (``python -m pip install --target /tmp/peers
opendp==0.16.0 diffprivlib python-dp``; diffprivlib 0.6.6 needs ``scikit-learn<1.8``). Every
peer is optional: a peer that does not import is left out (``-`` in its column). Prints a
Markdown table, one row per cell of ``--ns`` × ``--dists`` × ``--ms`` × ``--eps`` (default:
n in {10^3, 10^4, 10^6}, lognormal / uniform / normal / integers with ties, m in {1, 5, 29,
99}, ε in {0.1, 1}; ``--dists other`` runs the data the rules were not tuned on,
:data:`OTHER_DISTS`): treedp, each peer, the best peer, the ratio treedp / best peer and
whether treedp is at least as accurate (``met``; ``not met (noise)`` when the gap is below
twice its standard error).

Metric: the rank error of an answer ``v`` for level ``q`` is the distance from ``q n`` to the
ranks ``[#{x < v}, #{x <= v}]`` that ``v`` holds, averaged over the levels ``q = j / (m + 1)``,
``j = 1..m``, and over the repetitions (``--reps``, ``--reps-large`` from 10^6 records, times
``--m1-factor`` for one level, whose error is heavy-tailed; fresh data per repetition: seed
``rep``; the mechanisms' seeds are ``rep`` where a library takes one, except treedp's, which
is :data:`NOISE_SEED` ``+ rep``: its seeded source is numpy's PCG64 seeded as
``default_rng(rep)`` is, so with seed ``rep`` its noise would be made of the very words that
drew the data, a correlation that moved treedp's rank error by up to 20% either way before
session 13; diffprivlib's ``random_state`` is a Mersenne Twister). ``--base`` reuses the
peer columns of saved runs and runs treedp only (same data, same seeds: a changed rule is
re-measured against the same peer figures). Every library gets the same public
bounds (:data:`DISTS`), the same total ε per call and add/remove neighbours (OpenDP's
symmetric distance 1, python-dp one contribution per record, diffprivlib's own):

* ``treedp``: ``treedp.quantiles(x, q, epsilon=ε, bounds=...)`` with ``method="auto"`` and no
  ``n``; on the integer data ``bins="integers"`` (how a user declares integer data).
* ``opendp-exp``: ``make_private_quantile`` (Smith's exponential mechanism) per level with
  ε/m each, its scale calibrated by its own privacy map; candidates: 2049 equal-spaced points
  of the bounds (the integers on integer data). At n = 10^6 and m >= 29 it is skipped by
  default (``--slow-from-n``, ``--slow-max-m``: it takes minutes per repetition there).
* ``opendp-tree``: OpenDP's partition route, ``make_find_bin`` → ``make_count_by_categories``
  → ``make_b_ary_tree`` → Laplace (scale found by ``binary_search_param`` for ε) →
  ``make_consistent_b_ary_tree`` → ``make_quantiles_from_counts`` (linear interpolation), on
  2048 equal-width bins (one per integer on integer data), branching factor from
  ``choose_branching_factor``.
* ``diffprivlib``: ``diffprivlib.tools.quantile`` with the array of levels (it splits ε
  evenly over them); skipped as ``opendp-exp`` is.
* ``pydp``: python-dp's ``QuantileTree`` (height 4, branching 16, Laplace, δ = 0).

On the integer data every peer's answers are rounded down to integers (clipped to the
bounds): post-processing that a user who knows the data are integers would do, and what
makes OpenDP's interpolated answer inside bin ``[k, k + 1)`` the integer ``k``. The best peer
of a cell is the lowest mean over every peer column present.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import treedp
from _common import machine
from treedp.noise import InsecureSeededSource

#: Data, public bounds and treedp's ``bins`` per distribution.
DISTS: dict[str, tuple[Callable[[Any, int], np.ndarray], tuple[float, float], Any]] = {
    "lognormal": (lambda r, n: r.lognormal(0, 1, n), (0.0, 100.0), None),
    "uniform": (lambda r, n: r.uniform(0, 1, n), (0.0, 1.0), None),
    "normal": (lambda r, n: r.normal(0, 5, n), (-50.0, 50.0), None),
    "integers": (lambda r, n: r.poisson(3, n).astype(float), (0.0, 20.0), "integers"),
}
#: Data the rules were not tuned on (``--dists`` takes them by name, ``--dists other`` all of
#: them; the default is :data:`DISTS`, the issue's grid), each with public bounds a user would
#: plausibly give: a heavy tail, two modes, an exponential, a zero-inflated column (70% zeros),
#: data in 0.1% of wide bounds, at a large offset, negative only, integers with five values and
#: on a range of 10^5, and a constant column; then other parameters of the grid's families (the
#: "hidden data sets"): a wider lognormal on wider bounds, a normal off the bounds' centre,
#: uniform data in 20% of the bounds, Poisson(30) integers, and an income-like column (a
#: lognormal rounded to hundreds, so ties, on bounds of a million); then (session 14) a
#: standard normal in 1% of wide bounds, a two-sided heavy tail (10·t(3)), a narrow lognormal,
#: a U-shaped beta(1/2, 1/2) with its mass at both bounds, geometric and rounded-normal integers.
OTHER_DISTS: dict[str, tuple[Callable[[Any, int], np.ndarray], tuple[float, float], Any]] = {
    "pareto": (lambda r, n: r.pareto(1.5, n), (0.0, 1000.0), None),
    "bimodal": (
        lambda r, n: np.where(r.random(n) < 0.3, r.normal(-10, 2, n), r.normal(15, 4, n)),
        (-50.0, 50.0),
        None,
    ),
    "exponential": (lambda r, n: r.exponential(3, n), (0.0, 50.0), None),
    "zero-inflated": (
        lambda r, n: np.where(r.random(n) < 0.7, 0.0, r.lognormal(0, 1, n)),
        (0.0, 100.0),
        None,
    ),
    "narrow": (lambda r, n: r.uniform(0, 1, n), (0.0, 1000.0), None),
    "offset": (lambda r, n: 1e9 + r.normal(500, 100, n), (1e9, 1e9 + 1000.0), None),
    "negative": (lambda r, n: -r.lognormal(0, 1, n), (-100.0, 0.0), None),
    "five-values": (
        lambda r, n: r.choice(5, n, p=[0.1, 0.4, 0.3, 0.15, 0.05]).astype(float),
        (0.0, 10.0),
        "integers",
    ),
    "wide-integers": (
        lambda r, n: np.minimum(np.floor(r.exponential(5000, n)), 100_000.0),
        (0.0, 100_000.0),
        "integers",
    ),
    "constant": (lambda r, n: np.full(n, 7.0), (0.0, 10.0), None),
    "lognormal-wide": (lambda r, n: r.lognormal(0, 2, n), (0.0, 1000.0), None),
    "normal-offset": (lambda r, n: r.normal(50, 10, n), (0.0, 100.0), None),
    "uniform-part": (lambda r, n: r.uniform(0.2, 0.4, n), (0.0, 1.0), None),
    "poisson30": (lambda r, n: r.poisson(30, n).astype(float), (0.0, 100.0), "integers"),
    "income": (
        lambda r, n: np.round(r.lognormal(10.5, 0.8, n), -2),
        (0.0, 1_000_000.0),
        None,
    ),
    "normal-wide": (lambda r, n: r.normal(0, 1, n), (-100.0, 100.0), None),
    "student-t": (lambda r, n: 10 * r.standard_t(3, n), (-100.0, 100.0), None),
    "lognormal-narrow": (lambda r, n: r.lognormal(2, 0.5, n), (0.0, 100.0), None),
    "u-shaped": (lambda r, n: r.beta(0.5, 0.5, n), (0.0, 1.0), None),
    "geometric": (lambda r, n: r.geometric(0.05, n).astype(float), (0.0, 200.0), "integers"),
    "rounded-normal": (
        lambda r, n: np.clip(np.round(r.normal(50, 10, n)), 0, 100),
        (0.0, 100.0),
        "integers",
    ),
}
ALL_DISTS = {**DISTS, **OTHER_DISTS}
NS = (1_000, 10_000, 1_000_000)
MS = (1, 5, 29, 99)
EPS = (0.1, 1.0)
PEERS = ("opendp-exp", "opendp-tree", "diffprivlib", "pydp")
#: One exponential selection per level over all n records: from ``--slow-from-n`` records
#: they run up to ``--slow-max-m`` levels only (at n = 10^6, m = 29 diffprivlib took 35 s and
#: OpenDP about 40 s per repetition, both with several times treedp's error).
SLOW = ("opendp-exp", "diffprivlib")
#: treedp's noise seed is this plus the repetition's data seed (independent streams).
NOISE_SEED = 1_000_000
#: OpenDP's candidate points and bins on continuous data.
OPENDP_CANDIDATES = 2049
OPENDP_BINS = 2048


def rank_error(xs: np.ndarray, est: np.ndarray, q: np.ndarray) -> float:
    """Mean rank gap of the answers: the distance from ``q n`` to ``[#{x < v}, #{x <= v}]``."""
    srt = np.sort(xs)
    target = q * srt.size
    est = np.sort(np.asarray(est, dtype=np.float64))
    below = np.searchsorted(srt, est, side="left") - target
    above = target - np.searchsorted(srt, est, side="right")
    return float(np.maximum(0.0, np.maximum(below, above)).mean())


def run_treedp(xs, q, eps, bounds, bins, seed) -> np.ndarray:  # type: ignore[no-untyped-def]
    res = treedp.quantiles(
        xs, q, epsilon=eps, bounds=bounds, bins=bins, rng=InsecureSeededSource(NOISE_SEED + seed)
    )
    return np.atleast_1d(np.asarray(res.values, dtype=np.float64))


def _grid(bounds: tuple[float, float], integers: bool, points: int) -> list[float]:
    if integers:
        return [float(v) for v in range(int(bounds[0]), int(bounds[1]) + 1)]
    return np.linspace(bounds[0], bounds[1], points).tolist()


def run_opendp_exp(xs, q, eps, bounds, integers, seed) -> np.ndarray:  # type: ignore[no-untyped-def]
    import opendp.prelude as dp

    dp.enable_features("contrib")
    cand = _grid(bounds, integers, OPENDP_CANDIDATES)
    dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    met = dp.symmetric_distance()
    data = np.clip(xs, *bounds).astype(float).tolist()
    out = []
    for level in q:
        one = dp.m.make_private_quantile(dom, met, dp.max_divergence(), cand, float(level), 1.0)
        scale = one.map(1) / (eps / q.size)  # the loss is proportional to 1/scale
        meas = dp.m.make_private_quantile(dom, met, dp.max_divergence(), cand, float(level), scale)
        assert meas.map(1) <= eps / q.size * (1 + 1e-9)
        out.append(meas(data))
    return np.array(out, dtype=np.float64)


def run_opendp_tree(xs, q, eps, bounds, integers, seed) -> np.ndarray:  # type: ignore[no-untyped-def]
    import opendp.prelude as dp

    dp.enable_features("contrib")
    lo, hi = bounds
    if integers:  # one bin [k, k + 1) per integer k: the answer rounded down is the integer
        edges = [*_grid(bounds, True, 0), hi + 1.0]
    else:
        edges = np.linspace(lo, hi, OPENDP_BINS + 1).tolist()
    # find_bin: index 0 below the first edge, len(edges) from the last; inner bins 1..len-1
    categories = list(range(len(edges) + 1))
    b = dp.t.choose_branching_factor(size_guess=len(categories))
    dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    pre = (
        (dom, dp.symmetric_distance())
        >> dp.t.then_find_bin(edges=edges)
        >> dp.t.then_count_by_categories(categories=categories, null_category=False)
        >> dp.t.then_b_ary_tree(leaf_count=len(categories), branching_factor=b)
    )
    scale = dp.binary_search_param(
        lambda s: pre >> dp.m.then_laplace(scale=s), d_in=1, d_out=float(eps)
    )
    meas = pre >> dp.m.then_laplace(scale=scale)
    assert meas.map(1) <= eps * (1 + 1e-9)
    consistent = dp.t.make_consistent_b_ary_tree(branching_factor=b)
    # the clipped data land in the inner bins; the two outer bins hold nothing (edges widened)
    outer = [lo - (hi - lo), *edges, hi + (hi - lo)]
    quant = dp.t.make_quantiles_from_counts(
        outer, alphas=[float(v) for v in q], interpolation="linear"
    )
    leaves = consistent(meas(np.clip(xs, lo, hi).astype(float).tolist()))
    return np.clip(np.array(quant(leaves), dtype=np.float64), lo, edges[-1])


def run_diffprivlib(xs, q, eps, bounds, integers, seed) -> np.ndarray:  # type: ignore[no-untyped-def]
    from diffprivlib.tools import quantile

    return np.atleast_1d(quantile(xs, q, epsilon=eps, bounds=bounds, random_state=seed))


def run_pydp(xs, q, eps, bounds, integers, seed) -> np.ndarray:  # type: ignore[no-untyped-def]
    from pydp.algorithms.quantile_tree import QuantileTree

    qt = QuantileTree(float(bounds[0]), float(bounds[1]), 4, 16)
    for v in xs.tolist():
        qt.add_entry(v)
    return np.array(qt.compute_quantiles(eps, 0.0, 1, 1, [float(v) for v in q]))


RUNS: dict[str, Callable[..., np.ndarray]] = {
    "opendp-exp": run_opendp_exp,
    "opendp-tree": run_opendp_tree,
    "diffprivlib": run_diffprivlib,
    "pydp": run_pydp,
}


def available() -> list[str]:
    """The peers that import here (each is optional)."""
    mods = {
        "opendp-exp": "opendp.prelude",
        "opendp-tree": "opendp.prelude",
        "diffprivlib": "diffprivlib.tools",
        "pydp": "pydp.algorithms.quantile_tree",
    }
    out = []
    for name, mod in mods.items():
        try:
            __import__(mod)
        except Exception as exc:
            print(f"peer {name} left out: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        out.append(name)
    return out


def cell(dist: str, n: int, m: int, eps: float, reps: int, peers: list[str], args) -> dict:  # type: ignore[no-untyped-def]
    """Mean rank errors (and standard errors) of every column in one cell."""
    draw, bounds, bins = ALL_DISTS[dist]
    q = np.arange(1, m + 1) / (m + 1)
    errs: dict[str, list[float]] = {"treedp": []}
    if args.private_n:
        errs["treedp (n private)"] = []
    methods: set[str] = set()  # the private count may pick different methods per repetition
    for rep in range(reps):
        xs = draw(np.random.default_rng(rep), n)
        res = treedp.quantiles(
            xs, q, epsilon=eps, bounds=bounds, bins=bins, rng=InsecureSeededSource(NOISE_SEED + rep)
        )
        methods.add(res.method)
        errs["treedp"].append(rank_error(xs, np.atleast_1d(res.values), q))
        if args.private_n:  # for reference: a DP count chooses the method and bins
            res = treedp.quantiles(
                xs, q, epsilon=eps, bounds=bounds, bins=bins, n="private",
                rng=InsecureSeededSource(NOISE_SEED + rep),
            )  # fmt: skip
            errs["treedp (n private)"].append(rank_error(xs, np.atleast_1d(res.values), q))
        for peer in peers:
            if peer in SLOW and n >= args.slow_from_n and m > args.slow_max_m:
                continue
            try:
                est = RUNS[peer](xs, q, eps, bounds, bins == "integers", rep)
                if bins == "integers":  # post-processing a user of integer data would do
                    est = np.clip(np.floor(est), *bounds)
            except Exception as exc:
                print(f"{peer} failed on {dist} {n} {m} {eps}: {exc}", file=sys.stderr)
                continue
            errs.setdefault(peer, []).append(rank_error(xs, est, q))
    out: dict[str, Any] = {"method": "/".join(sorted(methods))}
    for key, vals in errs.items():
        a = np.asarray(vals)
        out[key] = (float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else 0)
    return out


def parse_base(paths: list[str]) -> dict[tuple[str, int, float, int], dict[str, Any]]:
    """The peer columns of saved runs (this script's Markdown output), by cell."""
    out: dict[tuple[str, int, float, int], dict[str, Any]] = {}
    for path in paths:
        with open(path) as handle:
            for line in handle:
                parts = [p.strip() for p in line.strip().strip("|").split("|")]
                if len(parts) != 8 + len(PEERS) or parts[0] not in ALL_DISTS:
                    continue
                key = (parts[0], int(float(parts[1])), float(parts[2]), int(parts[3]))
                c: dict[str, Any] = {}
                for peer, text in zip(PEERS, parts[5 : 5 + len(PEERS)], strict=True):
                    if text != "-":
                        mean, se = text.split(" ± ")
                        c[peer] = (float(mean), float(se))
                out[key] = c
    return out


def verdict(ours: tuple[float, float], best: tuple[float, float]) -> str:
    if ours[0] <= best[0] * (1 + 1e-9):
        return "met"
    gap_se = math.hypot(ours[1], best[1])
    return "not met (noise)" if ours[0] - best[0] < 2 * gap_se else "not met"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--reps-large", type=int, default=4, help="repetitions at n >= 10^6")
    ap.add_argument("--m1-factor", type=int, default=4, help="repetitions times this for one level")
    ap.add_argument("--ns", type=int, nargs="+", default=list(NS))
    ap.add_argument(
        "--dists",
        nargs="+",
        default=list(DISTS),
        choices=[*ALL_DISTS, "other"],
        help="data sets (default: the issue's grid); 'other': every one of OTHER_DISTS",
    )
    ap.add_argument("--ms", type=int, nargs="+", default=list(MS))
    ap.add_argument("--eps", type=float, nargs="+", default=list(EPS))
    ap.add_argument("--peers", nargs="+", default=list(PEERS))
    ap.add_argument("--slow-from-n", type=int, default=1_000_000)
    ap.add_argument("--slow-max-m", type=int, default=5)
    ap.add_argument(
        "--base",
        nargs="+",
        default=[],
        help="saved runs (this script's output): their peer columns are reused, only treedp runs",
    )
    ap.add_argument(
        "--private-n", action="store_true", help='also treedp with n="private" (a reference)'
    )
    args = ap.parse_args()
    if "other" in args.dists:
        args.dists = [d for d in args.dists if d != "other"] + list(OTHER_DISTS)
    base = parse_base(args.base)
    peers = [] if base else [p for p in available() if p in args.peers]
    print(f"machine: {machine()}; peers: {', '.join(peers) or 'none'}")
    cols = " | ".join(PEERS)
    extra = " treedp (n private) |" if args.private_n else ""
    print(f"\n| data | n | ε | m | treedp (method) | {cols} | best peer | ratio | goal |{extra}")
    print("|---|---|---|---|---|" + "---|" * len(PEERS) + "---|---|---|" + "---|" * bool(extra))
    counts = {"met": 0, "not met (noise)": 0, "not met": 0}
    start = time.perf_counter()
    for n in args.ns:
        reps = args.reps_large if n >= 1_000_000 else args.reps
        for dist in args.dists:
            for eps in args.eps:
                for m in args.ms:
                    if base and (dist, n, eps, m) not in base:
                        continue  # a cell the saved runs do not have
                    r = reps * args.m1_factor if m == 1 else reps
                    c = cell(dist, n, m, eps, r, peers, args)
                    c.update(base.get((dist, n, eps, m), {}))
                    present = [p for p in PEERS if p in c]
                    fmt = {p: f"{c[p][0]:.1f} ± {c[p][1]:.1f}" if p in c else "-" for p in PEERS}
                    ours = c["treedp"]
                    if present:
                        best = min(present, key=lambda p: c[p][0])
                        v = verdict(ours, c[best])
                        counts[v] += 1
                        ratio = f"{ours[0] / c[best][0]:.2f}" if c[best][0] > 0 else "-"
                        tail = f"{best} {c[best][0]:.1f} | {ratio} | {v}"
                    else:
                        tail = "- | - | -"
                    row = f"| {dist} | {n:.0e} | {eps:g} | {m} | {ours[0]:.1f} ± {ours[1]:.1f} "
                    row += f"({c['method']}) | " + " | ".join(fmt[p] for p in PEERS)
                    if args.private_n:
                        pn = c["treedp (n private)"]
                        tail += f" | {pn[0]:.1f} ± {pn[1]:.1f}"
                    print(row + f" | {tail} |", flush=True)
    took = time.perf_counter() - start
    print(f"\ncells: {counts}; {took:.0f} s")


if __name__ == "__main__":
    main()
