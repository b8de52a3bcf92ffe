"""Continual release (issue 30): the measured goals, from exact variances, and step speed.

1. zCDP counts: the mean over steps of the per-step variance divided by the lower bound
   ``(0.701 + ln T/π)²/(2ρ)`` (goal: at most 1.05 at every T = 2^10 … 2^20), for the streamed
   square root (plain lattice), the column-normalised square root (its exact variances cost
   ``O(T²)``: computed up to 2^14), the optimised lower-triangular factorisation (``opt``,
   T <= 2^10), the planned k-ary tree and the classic binary tree; with the state size in
   numbers (goal: at most 10^6).
2. Pure ε counts: the planned k-ary tree's mean per-step variance over the classic binary tree's
   (``log2 T + 1`` levels, equal budgets, Honaker's online estimate); goal at most 0.35 at
   T = 2^10, 2^16, 2^20.
3. Pure ε counts, the same tree decoded offline (measured, not built): the same released node
   values and budgets, but each running count taken from the full (two-pass, Honaker 2015)
   least-squares estimate of the whole tree instead of the online from-below one. Its mean
   variance is exact (dense inverse) up to 2^10 and a Monte Carlo estimate with its standard
   error above (Gaussian noise of the families' exact variances: the variance of a linear
   decoder depends only on them), next to the classic binary tree in the same run.
4. Speed: the median step of a 2^20-step counter (tree; and the square root at its last steps)
   and of a 4096-bin stream fed 10 000 values, next to a plain numpy baseline on the same data
   in the same run (``np.bincount`` + a running ``cumsum``).

All variances are exact (the families' variances, Honaker's recursion, the lattice decoders);
the Monte Carlo confirmations are tests/continual/test_statistics.py.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/continual.py [--quick] [--pure]``
(``--pure``: only the pure-ε tables 2 and 3).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

import treedp
from _common import machine
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
    print(f"{'T':>8} {'sqrt':>14} {'sqrt_norm':>14} {'opt':>14} {'tree (k)':>18} {'binary':>8}")
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
        print(
            f"{horizon:>8} {sq:7.4f} ({2 * horizon:>7}) {ns:>14} {op:>14} "
            f"{tr:7.4f} k={tree.k:<2} ({tree_state(tree)}) {binary:8.4f}"
        )


def pure_table(exponents: list[int]) -> None:
    print("\npure epsilon = 1 counts: mean per-step variance, planned tree / classic binary tree")
    print(f"{'T':>8} {'binary':>10} {'planned':>10} {'k':>3} {'ratio':>7}  level budgets (eps)")
    for e in exponents:
        horizon = 2**e
        base = classic_tree(horizon, "laplace", 1.0)
        best = planned_tree(horizon, "laplace", 1.0)
        mb, mp = mean_variance(base), mean_variance(best)
        scales = [None if p is None else round(1 / float(p), 3) for p in best.parameters]
        print(f"{horizon:>8} {mb:10.1f} {mp:10.1f} {best.k:>3} {mp / mb:7.4f}  {scales}")


def _sizes(horizon: int, k: int, levels: int) -> list[int]:
    return [-(-horizon // k**level) for level in range(levels)]


def full_errors(horizon: int, k: int, v: list[float], z: list[np.ndarray]) -> np.ndarray:
    """The leaf errors (steps x runs) of the two-pass least-squares estimate of a k-ary tree
    whose level-``l`` nodes (the last one cut at the horizon) carry noise ``z[l]`` of variance
    ``v[l]`` (``inf``: off). Up: Honaker's from-below estimates; down: each parent's final
    estimate is split over its children in proportion to their from-below variances."""
    levels, n = len(v), _sizes(horizon, k, len(v))
    u, w = [z[0].astype(np.float64)], [np.full(n[0], v[0])]
    starts = [np.zeros(0, dtype=np.int64)]
    for level in range(1, levels):
        st = np.arange(0, n[level - 1], k)
        below, wb = np.add.reduceat(u[-1], st, axis=0), np.add.reduceat(w[-1], st)
        if math.isinf(v[level]):
            u.append(below)
            w.append(wb)
        else:
            u.append((z[level] * wb[:, None] + below * v[level]) / (v[level] + wb[:, None]))
            w.append(v[level] * wb / (v[level] + wb))
        starts.append(st)
    est = u[-1]
    for level in range(levels - 1, 0, -1):
        st = starts[level]
        sum_u, sum_w = np.add.reduceat(u[level - 1], st, axis=0), np.add.reduceat(w[level - 1], st)
        parent = np.repeat(np.arange(n[level]), np.diff(np.append(st, n[level - 1])))
        est = u[level - 1] + (w[level - 1] / sum_w[parent])[:, None] * (est - sum_u)[parent]
    return est


def dense_full(horizon: int, k: int, v: list[float]) -> np.ndarray:
    """Per-step variances of the least-squares running counts, by dense algebra."""
    rows, weights = [], []
    for level, var in enumerate(v):
        if math.isinf(var):
            continue
        size = k**level
        for j in range(-(-horizon // size)):
            row = np.zeros(horizon)
            row[j * size : min((j + 1) * size, horizon)] = 1.0
            rows.append(row)
            weights.append(1.0 / var)
    m, wts = np.array(rows), np.array(weights)
    cov = np.linalg.inv(m.T @ (wts[:, None] * m))
    a = np.tril(np.ones((horizon, horizon)))
    return np.asarray(np.einsum("ij,jk,ik->i", a, cov, a))


def check_full_decoder() -> float:
    """The two-pass decoder's exact per-step variances (impulse responses) against the dense
    least-squares ones, on small trees (one with a level off); the largest relative gap."""
    worst = 0.0
    for horizon, k, v in [
        (16, 2, [3.0, 5, 2, 7, 4]),
        (21, 4, [2.0, math.inf, 5]),
        (100, 5, [1.0, 2, 3]),
    ]:
        n, cols = _sizes(horizon, k, len(v)), []
        for level, var in enumerate(v):
            for j in range(n[level] if not math.isinf(var) else 0):
                z = [np.zeros((size, 1)) for size in n]
                z[level][j, 0] = 1.0
                cols.append(np.cumsum(full_errors(horizon, k, v, z)[:, 0]) ** 2 * var)
        mine = np.sum(cols, axis=0)
        exact = dense_full(horizon, k, v)
        worst = max(worst, float(np.max(np.abs(mine - exact) / exact)))
    return worst


def full_mean(horizon: int, k: int, v: list[float], runs: int, seed: int) -> tuple[float, float]:
    """Mean per-step variance of the offline decoder: exact (dense) up to 2^10, else Monte
    Carlo over ``runs`` independent noise draws (mean, standard error)."""
    if horizon <= 2**10:
        return float(dense_full(horizon, k, v).mean()), 0.0
    rng, n, per_run = np.random.default_rng(seed), _sizes(horizon, k, len(v)), []
    for _ in range(runs // 8):
        scale = [0.0 if math.isinf(var) else math.sqrt(var) for var in v]
        z = [rng.standard_normal((size, 8)) * s for size, s in zip(n, scale, strict=True)]
        per_run += list((np.cumsum(full_errors(horizon, k, v, z), axis=0) ** 2).mean(axis=0))
    arr = np.asarray(per_run)
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size))


def full_table(exponents: list[int], runs: int) -> None:
    print("\npure epsilon = 1: the planned tree decoded offline (two-pass least squares) / binary")
    print(f"decoder check against dense algebra: largest relative gap {check_full_decoder():.1e}")
    print(f"{'T':>8} {'binary':>10} {'online':>10} {'offline':>18} {'k':>3} {'ratio':>16}")
    for e in exponents:
        horizon = 2**e
        base = mean_variance(classic_tree(horizon, "laplace", 1.0))
        for k in (11, 15):
            tree = planned_tree(horizon, "laplace", 1.0, k=k)
            mean, se = full_mean(horizon, k, tree.node_variances(), runs, seed=e)
            spread = "exact" if se == 0 else f"± {se / base:.4f}"
            print(
                f"{horizon:>8} {base:10.1f} {mean_variance(tree):10.1f} {mean:10.1f} "
                f"{'' if se == 0 else f'± {se:5.1f}':>7} {k:>3} {mean / base:7.4f} {spread}"
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
    s = treedp.continual(horizon=2**20, epsilon=1.0, rng=seed)
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
    b = treedp.continual(horizon=2**20, epsilon=1.0, bins=4096, bounds=(0, 100), rng=seed)
    binned = median_ms(lambda: b.step(values), repeats)
    hist = np.zeros(4096, dtype=np.int64)

    def base_bins() -> None:
        idx = np.clip(((values - 0) * 40.96).astype(np.int64), 0, 4095)
        hist[:] += np.bincount(idx, minlength=4096)
        np.cumsum(hist)

    base = median_ms(base_bins, repeats)
    print(f"4096 bins, 10^4 values, T = 2^20, tree: {binned:.3f} ms  (numpy {base:.3f} ms)")
    people = treedp.continual(
        horizon=2**20, epsilon=1.0, privacy_unit="pid", max_contributions=3, rng=seed
    )
    ids = iter(range(10**9))
    batch = np.arange(100)
    per = median_ms(lambda: people.step(batch, ids=[next(ids) % 5000 for _ in batch]), repeats)
    print(f"count, T = 2^20, privacy unit (100 records of 5000 persons per step): {per:.3f} ms")


def main() -> None:
    quick = "--quick" in sys.argv
    print(machine())
    if "--pure" in sys.argv:  # only the pure-epsilon tables
        pure_table([10] if quick else [10, 16, 20])
        full_table([10] if quick else [10, 16, 20], 400)
        return
    exps = [10, 12] if quick else [10, 12, 14, 16, 18, 20]
    zcdp_table(exps)
    pure_table([10] if quick else [10, 16, 20])
    full_table([10] if quick else [10, 16, 20], 400)
    speed(20 if quick else 200)


if __name__ == "__main__":
    main()
