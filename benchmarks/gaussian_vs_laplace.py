"""Exact CDF error of Gaussian vs Laplace trees, against OpenDP's Gaussian tree; Honaker Fig. 4.

Run: ``PYTHONPATH=src python benchmarks/gaussian_vs_laplace.py`` (writes markdown tables on
stdout; docs/gaussian.md records them). Every MSE is exact: the mean over the ``B`` prefixes
``[0, m)`` of the prefix estimate's variance, from the plan's covariance with the exact
discrete noise variances (no simulation), in records², under ``add_remove``.

Rows, at equal ``(ε, δ)``:

* ``laplace``: ``treedp.plan(B, epsilon=ε)`` — pure ε-DP (it is (ε, δ)-DP for every δ).
* ``gaussian``: ``treedp.plan(B, privacy=ApproxDP(ε, δ))`` — the largest ρ whose tight
  CKS20 conversion gives (ε, δ), Gaussian levels planned.
* ``opendp``: OpenDP's Gaussian tree at the *same ρ*: ``choose_branching_factor(B)``,
  ``make_b_ary_tree`` (its stability map charges ``num_layers`` for the L2 distance, where
  the true L2 sensitivity is ``sqrt(num_layers)``), ``then_gaussian`` with the scale OpenDP's
  ``binary_search_param`` finds for ρ, equal noise on every node including the root, and
  ``make_consistent_b_ary_tree`` (Hay's variance-weighted consistency, which with equal
  variances is the efficient estimate). Its exact MSE is computed with treedp's covariance
  for that shape and variance; when ``opendp`` is installed the scale comes from OpenDP
  itself and, at ``B = 1024``, a Monte Carlo run of OpenDP's own mechanism and
  postprocessor checks the analytic value.
* ``treedp, OpenDP's shape``: OpenDP's fan-out and equal budgets with the correct L2 map
  (separates the sensitivity map from the planning).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import numpy as np

import treedp
from _common import machine
from treedp.estimation.efficient import VariancePlan, efficient_tree
from treedp.estimation.objectives import mean_prefix_variance
from treedp.noise import InsecureSeededSource
from treedp.noise.discrete_gaussian import discrete_gaussian_variance
from treedp.noise.families import DiscreteGaussian
from treedp.tree import TreeShape

SIZES = (1024, 65536, 2**20)
EPSILON = 1.0
DELTAS = (1e-6, 1e-9)

try:  # optional: pip install opendp
    import opendp.prelude as dp

    dp.enable_features("contrib")
except ImportError:  # pragma: no cover - documented fallback
    dp = None


def opendp_tree(n_bins: int, rho: float) -> tuple[int, int, float, str]:
    """OpenDP's branching, number of layers (root included) and Gaussian scale at ``rho``."""
    if dp is not None:
        b = int(dp.t.choose_branching_factor(size_guess=n_bins))
        domain = dp.vector_domain(dp.atom_domain(T=int))
        tree = dp.t.make_b_ary_tree(
            domain, dp.l2_distance(T=int), leaf_count=n_bins, branching_factor=b
        )
        layers = int(tree.map(1))

        def make(scale: float) -> object:
            return tree >> dp.m.then_gaussian(scale)

        scale = float(dp.binary_search_param(make, d_in=1, d_out=rho))
        return b, layers, scale, "from OpenDP"

    # analytic fallback: QYL13 eq. (3) for b, layers = ceil(log_b B) + 1, d_out = layers
    def cost(b: int) -> float:
        h = math.log(n_bins, b)
        return (b - 1) * h**3 - 2 * (b + 1) * h**2 / 3

    b = min(range(2, n_bins + 1), key=cost)
    layers = math.ceil(math.log(n_bins, b) - 1e-12) + 1
    return b, layers, layers / math.sqrt(2 * rho), "analytic (opendp not installed)"


def opendp_mse(n_bins: int, b: int, layers: int, scale: float) -> float:
    shape = TreeShape(n_bins, (b,) * (layers - 1))
    var = discrete_gaussian_variance(Fraction(scale * scale))
    return mean_prefix_variance(shape, (var,) * layers, "efficient")


def opendp_monte_carlo(n_bins: int, rho: float, reps: int = 300) -> tuple[float, float]:
    """Empirical mean prefix MSE of OpenDP's own mechanism + postprocessor (and its se)."""
    b, _, scale, _ = opendp_tree(n_bins, rho)
    domain = dp.vector_domain(dp.atom_domain(T=int))
    meas = dp.t.make_b_ary_tree(
        domain, dp.l2_distance(T=int), leaf_count=n_bins, branching_factor=b
    ) >> dp.m.then_gaussian(scale)
    post = dp.t.make_consistent_b_ary_tree(branching_factor=b)
    counts = np.random.default_rng(1).poisson(20, size=n_bins)
    truth = np.cumsum(counts)
    per_rep = []
    for _ in range(reps):
        leaves = np.asarray(post(meas(counts.tolist())), dtype=np.float64)
        per_rep.append(float(((np.cumsum(leaves) - truth) ** 2).mean()))
    arr = np.asarray(per_rep)
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(reps))


def comparison() -> None:
    print(f"machine: {machine()}")
    print(f"\nMean CDF (prefix) MSE in records², exact, add_remove, epsilon = {EPSILON}:\n")
    print(
        "| B | δ | ρ | Laplace ε-DP | Gaussian (ε, δ) | Gaussian ÷ Laplace | "
        "OpenDP Gaussian tree, same ρ | OpenDP ÷ treedp Gaussian | treedp, OpenDP's shape |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    how = ""
    for n_bins in SIZES:
        laplace = treedp.plan(n_bins, epsilon=EPSILON)
        for delta in DELTAS:
            gauss = treedp.plan(n_bins, privacy=treedp.ApproxDP(EPSILON, delta))
            rho = gauss.rho
            assert rho is not None
            b, layers, scale, how = opendp_tree(n_bins, rho)
            odp = opendp_mse(n_bins, b, layers, scale)
            same_shape = treedp.predict_error(
                n_bins,
                privacy=treedp.ZCDP(rho),
                mechanism=treedp.MechanismOptions("auto", branching=(b,) * (layers - 1)),
            ).mean_cdf_mse
            print(
                f"| {n_bins} | {delta:g} | {rho:.5f} | {laplace.mean_cdf_mse:.4g} "
                f"| {gauss.mean_cdf_mse:.4g} | {gauss.mean_cdf_mse / laplace.mean_cdf_mse:.3f} "
                f"| {odp:.4g} (b={b}, σ={scale:.4g}) | {odp / gauss.mean_cdf_mse:.2f} "
                f"| {same_shape:.4g} |"
            )
    print(f"\nOpenDP's scale: {how}.")
    print("\nAt equal ρ = ε²/2 (pure ε-DP is ε²/2-zCDP):\n")
    print("| B | ρ | Laplace ε-DP | Gaussian ρ-zCDP | Gaussian ÷ Laplace |")
    print("|---|---|---|---|---|")
    for n_bins in SIZES:
        lap = treedp.plan(n_bins, epsilon=EPSILON).mean_cdf_mse
        rho = EPSILON**2 / 2
        gau = treedp.plan(n_bins, privacy=treedp.ZCDP(rho)).mean_cdf_mse
        print(f"| {n_bins} | {rho:g} | {lap:.4g} | {gau:.4g} | {gau / lap:.3f} |")
    if dp is not None:
        rho = treedp.plan(1024, privacy=treedp.ApproxDP(EPSILON, 1e-6)).rho
        assert rho is not None
        b, layers, scale, _ = opendp_tree(1024, rho)
        mean, se = opendp_monte_carlo(1024, rho)
        print(
            f"\nCheck, B = 1024, ρ = {rho:.5f}: OpenDP's own mechanism + consistency, 300 runs: "
            f"{mean:.4g} ± {se:.2g} (se); analytic {opendp_mse(1024, b, layers, scale):.4g}."
        )


def figure4(trees: int = 10_000) -> None:
    """Honaker's simulation: efficient ÷ raw MSE by level below the root (σ = 3, N known)."""
    shape = TreeShape(16, (2, 2, 2, 2))
    plan = VariancePlan(shape, (0.0, 1.0, 1.0, 1.0, 1.0))
    exact = [float(plan.var_efficient[d].values.max()) for d in range(1, 5)]
    leaves = np.random.default_rng(20261122).poisson(10, size=(trees, 16)).astype(np.int64)
    truth = [leaves.reshape(trees, 1 << d, -1).sum(axis=2) for d in range(5)]
    family = DiscreteGaussian(Fraction(9))
    source = InsecureSeededSource(20261122)
    noisy = [truth[0]] + [t + family.sample(t.size, source).reshape(t.shape) for t in truth[1:]]
    var = family.variance()
    fit = efficient_tree(shape, noisy, (0.0,) + (var,) * 4)
    print(f"\nHonaker Figure 4 ({trees} trees, Poisson(10) leaves, σ = 3, N known):\n")
    header = "| level below the root | nodes | paper | exact | Monte Carlo | raw MSE "
    print(header + "| efficient MSE |")
    print("|---|---|---|---|---|---|---|")
    paper = (0.267, 0.352, 0.421, 0.605)
    for d in range(1, 5):
        raw = float(((noisy[d] - truth[d]) ** 2).mean())
        eff = float(((fit.nodes[d] - truth[d]) ** 2).mean())
        print(
            f"| {d} | {1 << d} | {paper[d - 1]} | {exact[d - 1]:.4f} | {eff / raw:.4f} "
            f"| {raw:.3f} | {eff:.3f} |"
        )


if __name__ == "__main__":
    comparison()
    if "--no-figure4" not in sys.argv:
        figure4()
