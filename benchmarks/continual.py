"""Continual release (issue 30): the measured goals, from exact variances, and step speed.

1. zCDP counts: the mean over steps of the per-step variance divided by the lower bound
   ``(0.701 + ln T/π)²/(2ρ)`` (goal: at most 1.05 at every T = 2^10 … 2^20), for the streamed
   square root (plain lattice), the column-normalised square root (its exact variances cost
   ``O(T²)``: computed up to 2^14), the optimised lower-triangular factorisation (``opt``,
   T <= 2^10), the planned k-ary tree and the classic binary tree; with the state size in
   numbers (goal: at most 10^6), and the row-scaled buffered Toeplitz counter (``blt``, a sum
   of exponentials with exact fixed-point buffers: ``3d + 1`` numbers per bin) with the time
   its planning takes.
2. Pure ε counts: the mean per-step variance of the planned k-ary tree (``tree``, online
   estimate) and of ``tree_full`` (the same kind of tree decoded by full least squares, all noise
   drawn up front) over the classic binary tree's (``log2 T + 1`` levels, equal budgets,
   Honaker's online estimate); goal at most 0.35 at T = 2^10, 2^16, 2^20. Exact variances.
3. Speed: the median step of a 2^20-step counter (tree; and the square root at its last steps)
   and of a 4096-bin stream fed 10 000 values, next to a plain numpy baseline on the same data
   in the same run (``np.bincount`` + a running ``cumsum``).

All variances are exact (the families' variances, Honaker's recursion, the lattice decoders);
the Monte Carlo confirmations are tests/continual/test_statistics.py and test_full_tree.py.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/continual.py [--quick]
[--pure | --speed | --zcdp | --blt]`` (``--pure``: only the pure-ε table 2; ``--speed``: only
the speed figures 3; ``--zcdp``: only table 1; ``--blt``: only ``blt``'s speed, with its
baselines).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

import treedp
from _common import machine
from treedp.continual.blt import BltCounter
from treedp.continual.full_tree import full_tree
from treedp.continual.optimal import OPT_LIMIT, OptCounter
from treedp.continual.planner import classic_tree, mean_variance, planned_tree
from treedp.continual.sqrt import SqrtCounter
from treedp.continual.sqrt_norm import NormSqrtCounter, unit_variances
from treedp.noise.families import DiscreteGaussian

RHO = 0.5


def bound(horizon: int, rho: float = RHO) -> float:
    """Henzinger–Kalinin–Upadhyay's lower bound on the mean per-step variance."""
    return (0.701 + math.log(horizon) / math.pi) ** 2 / (2 * rho)


def tree_state(counter: object, n_bins: int = 1) -> int:
    levels = len(counter.parameters)  # type: ignore[attr-defined]
    return (2 * levels + 2) * n_bins


def zcdp_table(exponents: list[int]) -> None:
    print("\nzCDP counts, rho = 0.5: mean per-step variance / lower bound (state in numbers)")
    print(
        f"{'T':>8} {'sqrt':>14} {'sqrt_norm':>14} {'opt':>14} {'tree (k)':>18} {'binary':>8}"
        f"  {'blt (state) [planned]':>26}"
    )
    for e in exponents:
        horizon = 2**e
        lb = bound(horizon)
        sq = mean_variance(SqrtCounter.for_budget(horizon, RHO, 1)) / lb
        if e <= 14:
            norm = NormSqrtCounter.for_budget(horizon, RHO, 1)
            var_z = DiscreteGaussian(norm.sigma2).variance()
            ns = f"{var_z * unit_variances(horizon, norm.target).mean() / lb:8.4f} ({2 * horizon})"
        else:
            ns = "not computed"
        if horizon <= OPT_LIMIT:
            start = time.perf_counter()
            opt = OptCounter.for_budget(horizon, RHO, 1)
            secs = time.perf_counter() - start
            op = f"{mean_variance(opt) / lb:8.4f} ({2 * horizon}) [planned in {secs:.1f} s]"
        else:
            op = "T > 2^10"
        tree = planned_tree(horizon, "gaussian", RHO)
        tr = mean_variance(tree) / lb
        binary = mean_variance(classic_tree(horizon, "gaussian", RHO)) / lb
        start = time.perf_counter()
        blt = BltCounter.for_budget(horizon, RHO, 1)
        bl = mean_variance(blt) / lb
        secs = time.perf_counter() - start
        state = sum(math.prod(v) for v in blt.state_shapes(1).values())
        print(
            f"{horizon:>8} {sq:7.4f} ({2 * horizon:>7}) {ns:>14} {op:>14} "
            f"{tr:7.4f} k={tree.k:<2} ({tree_state(tree)}) {binary:8.4f}"
            f"  {bl:8.4f} ({state}) [{secs:.1f} s]"
        )


def pure_table(exponents: list[int]) -> None:
    print("\npure epsilon = 1 counts: mean per-step variance over the classic binary tree's")
    print(
        f"{'T':>8} {'binary':>10} {'tree':>10} {'k':>3} {'ratio':>7} {'tree_full':>10} {'k':>3} "
        f"{'ratio':>7} {'state':>8} {'plan s':>7}  tree_full level budgets (eps)"
    )
    for e in exponents:
        horizon = 2**e
        base = classic_tree(horizon, "laplace", 1.0)
        best = planned_tree(horizon, "laplace", 1.0)
        start = time.perf_counter()
        full = full_tree(horizon, 1.0)
        secs = time.perf_counter() - start
        assert full is not None
        mb, mp, mf = mean_variance(base), mean_variance(best), mean_variance(full)
        eps = [None if s is None else round(1 / float(s), 3) for s in full.scales]
        print(
            f"{horizon:>8} {mb:10.1f} {mp:10.1f} {best.k:>3} {mp / mb:7.4f} {mf:10.1f} {full.k:>3} "
            f"{mf / mb:7.4f} {full.padded + 3:>8} {secs:7.1f}  {eps}"
        )


def median_ms(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def speed(repeats: int) -> None:
    print("\nspeed: median step (ms), baseline numpy in the same run")
    seed = treedp.InsecureSeededSource(1)
    s = treedp.continual(horizon=2**20, epsilon=1.0, rng=seed, mechanism="tree")
    counts = iter(range(10**9))
    step = median_ms(lambda: s.step(next(counts) % 7), repeats)
    running = np.zeros(1, dtype=np.int64)

    def base_count() -> None:
        running[:] = np.cumsum([running[0], 3])[-1:]

    base = median_ms(base_count, repeats)
    print(f"count, T = 2^20, tree k={s._counter.k}: {step:.3f} ms  (numpy {base:.4f} ms)")
    sq = SqrtCounter.for_budget(2**20, RHO, 1)
    state = sq.initial_state(1, seed)
    t_last = iter(range(2**20 - repeats, 2**20 + 1))
    last = median_ms(lambda: sq.step(state, next(t_last), np.array([3]), seed), repeats)
    print(f"count, T = 2^20, sqrt at its last steps (state 2^21 numbers): {last:.3f} ms")
    rng = np.random.default_rng(0)
    values = rng.normal(50, 15, 10_000)
    b = treedp.continual(
        horizon=2**20, epsilon=1.0, bins=4096, bounds=(0, 100), rng=seed, mechanism="tree"
    )
    binned = median_ms(lambda: b.step(values), repeats)
    hist = np.zeros(4096, dtype=np.int64)

    def base_bins() -> None:
        idx = np.clip(((values - 0) * 40.96).astype(np.int64), 0, 4095)
        hist[:] += np.bincount(idx, minlength=4096)
        np.cumsum(hist)

    base = median_ms(base_bins, repeats)
    print(f"4096 bins, 10^4 values, T = 2^20, tree: {binned:.3f} ms  (numpy {base:.3f} ms)")
    people = treedp.continual(
        horizon=2**20,
        epsilon=1.0,
        privacy_unit="pid",
        max_contributions=3,
        rng=seed,
        mechanism="tree",
    )
    ids = iter(range(10**9))
    batch = np.arange(100)
    per = median_ms(lambda: people.step(batch, ids=[next(ids) % 5000 for _ in batch]), repeats)
    print(f"count, T = 2^20, privacy unit (100 records of 5000 persons per step): {per:.3f} ms")
    start = time.perf_counter()
    full = treedp.continual(horizon=2**20, epsilon=1.0, rng=seed, mechanism="tree_full")
    made = time.perf_counter() - start
    fed = iter(range(10**9))
    step_full = median_ms(lambda: full.step(next(fed) % 7), repeats)
    print(
        f"count, T = 2^20, tree_full: created (planned, noise drawn) in {made:.1f} s, "
        f"step {step_full:.3f} ms"
    )


def blt_speed(repeats: int) -> None:
    """``blt`` at 2^20 steps: a count, and 4096 bins fed 10^4 values, against numpy."""
    print("\nspeed, blt: median step (ms), baseline numpy in the same run")
    seed = treedp.InsecureSeededSource(1)
    start = time.perf_counter()
    s = treedp.continual(horizon=2**20, privacy=treedp.ZCDP(RHO), rng=seed, mechanism="blt")
    made = time.perf_counter() - start
    counts = iter(range(10**9))
    step = median_ms(lambda: s.step(next(counts) % 7), repeats)
    running = np.zeros(1, dtype=np.int64)

    def base_count() -> None:
        running[:] = np.cumsum([running[0], 3])[-1:]

    base = median_ms(base_count, repeats)
    print(f"count, T = 2^20, blt (created in {made:.1f} s): {step:.3f} ms  (numpy {base:.4f} ms)")
    values = np.random.default_rng(0).normal(50, 15, 10_000)
    b = treedp.continual(
        horizon=2**20,
        privacy=treedp.ZCDP(RHO),
        bins=4096,
        bounds=(0, 100),
        rng=seed,
        mechanism="blt",
    )
    binned = median_ms(lambda: b.step(values), repeats)
    hist = np.zeros(4096, dtype=np.int64)

    def base_bins() -> None:
        idx = np.clip(((values - 0) * 40.96).astype(np.int64), 0, 4095)
        hist[:] += np.bincount(idx, minlength=4096)
        np.cumsum(hist)

    base = median_ms(base_bins, repeats)
    print(f"4096 bins, 10^4 values, T = 2^20, blt: {binned:.3f} ms  (numpy {base:.3f} ms)")


def main() -> None:
    quick = "--quick" in sys.argv
    print(machine())
    if "--speed" in sys.argv:  # only the speed figures
        speed(20 if quick else 200)
        return
    if "--blt" in sys.argv:  # only blt's speed
        blt_speed(20 if quick else 200)
        return
    if "--zcdp" in sys.argv:  # only the zCDP table
        zcdp_table([10, 12] if quick else [10, 12, 14, 16, 18, 20])
        return
    if "--pure" in sys.argv:  # only the pure-epsilon tables
        pure_table([10] if quick else [10, 16, 20])
        return
    exps = [10, 12] if quick else [10, 12, 14, 16, 18, 20]
    zcdp_table(exps)
    pure_table([10] if quick else [10, 16, 20])
    speed(20 if quick else 200)
    blt_speed(20 if quick else 200)


if __name__ == "__main__":
    main()
