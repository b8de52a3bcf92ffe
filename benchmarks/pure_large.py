"""Pure ε from 2^13 to 2^20 bins: the planner's best tree vs ``strategy_tree``, side by side.

Run from the repository root::

    PYTHONPATH=src python benchmarks/pure_large.py              # errors and release times
    PYTHONPATH=src python benchmarks/pure_large.py --optimise   # also re-derive the shares
    PYTHONPATH=src python benchmarks/pure_large.py --write-top  # rewrite the p = 256 top
    PYTHONPATH=src python benchmarks/pure_large.py --write-inner  # rewrite the inner ones

Errors are exact (public parameters only, no simulation): the mean of ``Var(P[m])`` over the
prefixes ``m = 1..B`` at ε = 1, ``add_remove``, with the exact discrete Laplace variances of
the released noise. The tree is the planner's best tree (exact, efficient estimator); the
new mechanism is the structure the planner scores (:data:`CONFIGS`). Release time: a whole
``release_counts`` of fixed counts plus one ``cdf`` query (which runs the estimation), the
median of three after one warm-up, both mechanisms in the same process (at 2^16 and 2^20).
``--optimise`` re-optimises each configured structure's budget shares on the exact error
(Nelder-Mead over the log-shares, from the stored shares) and prints them. ``--write-top``
re-optimises the ``p = 256`` strategy for 4096 bins that the structures at 2^19 and 2^20 use
(:func:`write_top`, deterministic, lattice 255; about 10 minutes with one BLAS thread) and
writes ``src/treedp/strategy/data/pidentity_top_4096.npz``. ``--write-inner`` re-optimises
the strategies inside the blocks of 2^15 to 2^20 for their role under their tops
(:func:`write_inner`, deterministic, lattice 255; about two minutes) and writes
``src/treedp/strategy/data/pidentity_inner<log2 B>_<b>.npz``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from treedp import InsecureSeededSource, plan, release_counts
from treedp.mechanisms.strategy_tree import CONFIGS, default_structure, structure_covariance
from treedp.strategy import Strategy
from treedp.strategy.blocked import BlockedStrategy


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _release_time(counts: np.ndarray, mechanism: str) -> float:
    def once() -> None:
        rel = release_counts(
            counts,
            bins=counts.size,
            bounds=(0.0, 1.0),
            epsilon=1.0,
            mechanism=mechanism,
            rng=InsecureSeededSource(1),
        )
        rel.cdf(0.5)

    once()
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        once()
        runs.append(time.perf_counter() - start)
    return float(np.median(runs))


#: The structures of session 6 (tree levels inside every block, no inner strategy), the
#: baseline of the inner strategies: ``B -> (K, levels, shares, top)``.
PREVIOUS = {
    2**15: (2048, (1,), (0.732, 0.268), "prefix"),
    2**16: (4096, (1,), (0.7463, 0.2537), "top"),
    2**17: (1024, (1, 16), (0.5896, 0.2411, 0.1693), "prefix"),
    2**18: (1024, (1, 16), (0.5612, 0.227, 0.2118), "prefix"),
    2**19: (4096, (1, 16), (0.6307, 0.2175, 0.1518), "top"),
    2**20: (4096, (1, 16), (0.6029, 0.2057, 0.1914), "top"),
}


def _previous(n_bins: int) -> BlockedStrategy:
    from treedp.strategy import get_strategy
    from treedp.strategy.store import shipped_strategy

    k, levels, shares, name = PREVIOUS[n_bins]
    top = get_strategy(k) if name == "prefix" else shipped_strategy(k, name)
    assert top is not None
    return BlockedStrategy(top, n_bins // k, levels, shares)


def _scoring_time(make: Callable[[], BlockedStrategy], n_bins: int) -> float:
    """Best of three: build the structure (reading its shipped files) and score it exactly,
    as the planner does."""
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        structure_covariance(make(), 1.0, n_bins).prefix_variances()
        runs.append(time.perf_counter() - start)
    return min(runs)


def table() -> None:
    print(f"exact mean prefix MSE at eps = 1, add_remove ({_load()})\n")
    print(
        "| B | planner's best tree | levels only (session 6) | **strategy_tree** | ratio "
        "| structure | scoring: levels only / now | release + query: tree / strategy_tree |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for b in sorted(CONFIGS):
        chosen = plan(b, epsilon=1.0)
        tree = min(c.value for c in chosen.alternatives if c.mechanism == "tree")
        structure = default_structure(b)
        new = float(structure_covariance(structure, 1.0, b).prefix_variances()[1:].mean())
        old, score = "", ""
        if b in PREVIOUS:
            prev = _previous(b)
            old = f"{structure_covariance(prev, 1.0, b).prefix_variances()[1:].mean():.1f}"
            t_old = _scoring_time(lambda b=b: _previous(b), b)
            t_now = _scoring_time(lambda b=b: default_structure(b), b)
            score = f"{t_old:.2f} / {t_now:.2f} s"
        times = ""
        if b in (2**16, 2**20):
            counts = np.random.default_rng(0).integers(0, 100, b)
            t_tree, t_new = _release_time(counts, "tree"), _release_time(counts, "strategy_tree")
            times = f"{t_tree:.2f} / {t_new:.2f} s"
        inner = (
            ""
            if structure.inner is None
            else f"inner strategy (p = {structure.inner.aggregates.shape[0]})"
        )
        levels = f"levels {list(structure.levels)}" if structure.levels else ""
        what = (
            f"{structure.n_blocks} (p = {structure.top.aggregates.shape[0]}) of "
            f"{structure.block}; {levels}{inner}; shares {list(structure.fractions)}"
        )
        print(
            f"| 2^{b.bit_length() - 1} | {tree:.1f} | {old} | **{new:.1f}** | {new / tree:.3f} | "
            f"{what} | {score} | {times} |"
        )
    print(f"\n({_load()})")


def optimise() -> None:
    from scipy.optimize import minimize

    for b in sorted(CONFIGS):
        base = default_structure(b)

        def error(z: np.ndarray, base: BlockedStrategy = base, b: int = b) -> float:
            w = np.exp(z) / np.exp(z).sum()
            s = BlockedStrategy(base.top, base.block, base.levels, tuple(w.tolist()), base.inner)
            return float(structure_covariance(s, 1.0, b).prefix_variances()[1:].mean())

        res = minimize(error, np.log(base.fractions), method="Nelder-Mead")
        w = np.exp(res.x) / np.exp(res.x).sum()
        print(f"B = {b}: shares {np.round(w, 4).tolist()} -> {res.fun:.2f} ({_load()})")


def _refine(theta: np.ndarray, steps: int) -> np.ndarray:
    """``steps`` more L-BFGS-B steps of the p-Identity objective (all prefixes) from
    ``theta`` (the optimiser's own objective and gradient, one BLAS thread)."""
    from scipy.optimize import minimize

    from treedp.strategy.optimize import Workload, _value_grad, one_blas_thread

    p, b = theta.shape
    work = Workload("prefix", b)
    diag = work.diag()

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = _value_grad(x.reshape(p, b), work, diag)
        return value, grad.ravel()

    with one_blas_thread():
        res = minimize(
            fun,
            theta.ravel(),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None)] * theta.size,
            options={"maxiter": steps},
        )
    out: np.ndarray = np.maximum(res.x, 0.0).reshape(p, b)
    return out


def write_top() -> None:
    """The top strategy of 2^16 and 2^20, deterministically: p = 128 optimised from the
    fixed start (500 steps), then 128 more rows (PCG64 seed 0, uniform in [0, 0.01)) and
    300 + 300 more steps with p = 256, on the lattice 255."""
    from pathlib import Path

    from treedp.strategy import optimise_pidentity, quantise, save_strategy_file
    from treedp.strategy.candidate import strategy_errors

    start = time.perf_counter()
    theta = optimise_pidentity(4096, 128, "prefix", max_iter=500)
    extra = np.random.Generator(np.random.PCG64(0)).random((128, 4096)) * 0.01
    theta = _refine(_refine(np.vstack([theta, extra]), 300), 300)
    top = quantise(theta)
    path = Path(__file__).parents[1] / "src/treedp/strategy/data/pidentity_top_4096.npz"
    save_strategy_file(top, path)
    mse = strategy_errors(top, 1.0, "add_remove")["mean_cdf_mse"]
    print(f"wrote {path} in {time.perf_counter() - start:.0f} s: alone at 4096 bins {mse:.1f}")


#: The inner strategy's lattice (treedp's default, 255). A finer one gains little and costs
#: noise time: at 2^20, 614.2 with 255, 612.8 with 1023, 612.5 with 4095, but exact discrete
#: Laplace noise at the inner part's scale (about 2700 with 1023) takes 0.46 s for its 1.1 M
#: entries against 0.18 s at 255 (scale about 670; measured 2026-11-27 about 07:46 UTC, load 12).
INNER_LATTICE = 255

#: ``B -> (top, block, model share)``: the sizes with an inner strategy, and the top's share
#: of ε the optimiser's model assumes (the exact optimum's share, rounded to 0.01).
INNER_SIZES = {
    2**15: ("prefix", 128, 0.56),
    2**16: ("prefix", 256, 0.53),
    2**17: ("prefix", 128, 0.60),
    2**18: ("prefix", 256, 0.58),
    2**19: ("top", 128, 0.64),
    2**20: ("top", 256, 0.62),
}


def write_inner() -> None:
    """The strategies inside the blocks of 2^15 to 2^20, deterministically: each optimised
    for its role (:func:`treedp.strategy.inner.optimise_inner`, from nodes of ``b/16`` bins,
    1000 L-BFGS-B steps) under its shipped top at the model share (continuous Laplace), on
    the lattice 255, written as ``pidentity_inner<log2 B>_<b>.npz``; then the exact share of
    the top for the integer strategies (for :data:`CONFIGS`)."""
    from pathlib import Path

    from scipy.optimize import minimize_scalar

    from treedp.strategy import get_strategy, quantise, save_strategy_file
    from treedp.strategy.inner import optimise_inner
    from treedp.strategy.store import shipped_strategy

    for n_bins, (top_name, b, share) in INNER_SIZES.items():
        start = time.perf_counter()
        k = n_bins // b
        top = get_strategy(k) if top_name == "prefix" else shipped_strategy(k, top_name)
        assert top is not None
        sens = top.sensitivity("add_remove")[0]
        theta, model = optimise_inner(top, 2 * sens**2 / share**2, 1 - share, b, b // 16)
        inner = quantise(theta, INNER_LATTICE, "inner")
        name = f"pidentity_inner{n_bins.bit_length() - 1}_{b}.npz"
        path = Path(__file__).parents[1] / "src/treedp/strategy/data" / name
        save_strategy_file(inner, path)

        def error(
            f: float, top: Strategy = top, b: int = b, n: int = n_bins, inner: Strategy = inner
        ) -> float:
            s = BlockedStrategy(top, b, (), (f, 1 - f), inner)
            return float(structure_covariance(s, 1.0, n).prefix_variances()[1:].mean())

        best = minimize_scalar(
            error, bounds=(share - 0.1, share + 0.1), method="bounded", options={"xatol": 1e-4}
        )
        print(
            f"wrote {name} in {time.perf_counter() - start:.0f} s: model {model:.2f}; exact "
            f"{best.fun:.2f} at the top share {best.x:.4f} ({_load()})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimise", action="store_true", help="re-optimise the shares")
    parser.add_argument("--write-top", action="store_true", help="rewrite the p = 256 top")
    parser.add_argument("--write-inner", action="store_true", help="rewrite the inner strategies")
    args = parser.parse_args()
    if args.write_top:
        write_top()
    if args.write_inner:
        write_inner()
    table()
    if args.optimise:
        optimise()


if __name__ == "__main__":
    main()
