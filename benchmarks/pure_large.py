"""Pure ε from 2^13 to 2^20 bins: the planner's best tree vs ``strategy_tree``, side by side.

Run from the repository root::

    PYTHONPATH=src python benchmarks/pure_large.py              # errors and release times
    PYTHONPATH=src python benchmarks/pure_large.py --optimise   # also re-derive the shares
    PYTHONPATH=src python benchmarks/pure_large.py --write-top  # rewrite the p = 256 top

Errors are exact (public parameters only, no simulation): the mean of ``Var(P[m])`` over the
prefixes ``m = 1..B`` at ε = 1, ``add_remove``, with the exact discrete Laplace variances of
the released noise. The tree is the planner's best tree (exact, efficient estimator); the
new mechanism is the structure the planner scores (:data:`CONFIGS`). Release time: a whole
``release_counts`` of fixed counts plus one ``cdf`` query (which runs the estimation), the
median of three after one warm-up, both mechanisms in the same process (at 2^16 and 2^20).
``--optimise`` re-optimises each configured structure's budget shares on the exact error
(Nelder-Mead over the log-shares, from the stored shares) and prints them. ``--write-top``
re-optimises the ``p = 256`` strategy for 4096 bins that the structures at 2^16 and 2^20 use
(:func:`write_top`, deterministic, lattice 255; about 10 minutes with one BLAS thread) and
writes ``src/treedp/strategy/data/pidentity_top_4096.npz``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from treedp import InsecureSeededSource, plan, release_counts
from treedp.mechanisms.strategy_tree import CONFIGS, default_structure, structure_covariance
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


def table() -> None:
    print(f"exact mean prefix MSE at eps = 1, add_remove ({_load()})\n")
    print(
        "| B | planner's best tree | strategy_tree | ratio | structure "
        "| release + query: tree | strategy_tree |"
    )
    print("|---|---|---|---|---|---|---|")
    for b in sorted(CONFIGS):
        chosen = plan(b, epsilon=1.0)
        tree = min(c.value for c in chosen.alternatives if c.mechanism == "tree")
        structure = default_structure(b)
        new = float(structure_covariance(structure, 1.0, b).prefix_variances()[1:].mean())
        times = "| | |"
        if b in (2**16, 2**20):
            counts = np.random.default_rng(0).integers(0, 100, b)
            t_tree, t_new = _release_time(counts, "tree"), _release_time(counts, "strategy_tree")
            times = f"| {t_tree:.2f} s | {t_new:.2f} s |"
        what = (
            f"K = {structure.n_blocks} blocks of {structure.block}, levels "
            f"{list(structure.levels)}, shares {list(structure.fractions)}"
        )
        print(
            f"| 2^{b.bit_length() - 1} | {tree:.1f} | **{new:.1f}** | {new / tree:.3f} | "
            f"{what} {times}"
        )


def optimise() -> None:
    from scipy.optimize import minimize

    for b in sorted(CONFIGS):
        base = default_structure(b)

        def error(z: np.ndarray, base: BlockedStrategy = base, b: int = b) -> float:
            w = np.exp(z) / np.exp(z).sum()
            s = BlockedStrategy(base.top, base.block, base.levels, tuple(w.tolist()))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimise", action="store_true", help="re-optimise the shares")
    parser.add_argument("--write-top", action="store_true", help="rewrite the p = 256 top")
    args = parser.parse_args()
    if args.write_top:
        write_top()
    table()
    if args.optimise:
        optimise()


if __name__ == "__main__":
    main()
