"""The measurement behind the planner's rule for the square-root factorisation above 2^20 bins.

Run from the repository root::

    PYTHONPATH=src python benchmarks/zcdp_rule.py            # the sizes below, rho = 0.5 and 0.02
    PYTHONPATH=src python benchmarks/zcdp_rule.py --low-scale --rho 0.5 --sizes 524289 2097152

Above ``EXACT_PLAN_LIMIT = 2^20`` bins the exact error of the default factorisation (scaled rows,
lattice scale ``2^16``) costs 1.3–30 s of CPU, so ``mechanism="auto"`` scores it by a rule
(``treedp.mechanisms.sqrt_plan``): its exact mean prefix MSE, worst prefix
variance and mean range MSE are at most ``RULE_RATIOS`` times the SVD lower bound on the mean
prefix MSE. This script computes, at sizes spread over ``(2^20, 2^24]`` (every power of two,
sizes between, odd sizes) and two budgets, the mechanism's *exact* figures (its covariance, as
a release reports them) and divides them by the bound (``prefix_bound.svd_bound``, the exact
sum); they must stay below ``RULE_RATIOS`` everywhere. ``--low-scale`` forces the smallest
lattice scale the rule covers, ``8 sqrt(B)`` (``rule_applies``), instead of the default's.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from _common import machine
from prefix_bound import svd_bound
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism

SIZES = [
    2**20 + 1,
    1234567,
    3 * 2**19,
    2**21,
    2621447,
    3 * 2**20,
    2**22 - 1,
    2**22,
    5 * 2**20 + 3,
    6 * 2**20,
    7 * 2**20 - 5,
    2**23,
    10 * 2**20 + 1,
    12 * 2**20 + 11,
    14 * 2**20,
    2**24 - 1,
    2**24,
]


def exact_figures(n_bins: int, rho: float, low: bool) -> tuple[float, float, float, int]:
    """Exact mean prefix MSE, worst prefix variance, mean range MSE, and the scale."""
    if low:
        mech = SqrtFactorizationMechanism(n_bins, rho=rho, rows=True, scale=8 * math.isqrt(n_bins))
    else:
        mech = SqrtFactorizationMechanism(n_bins, rho=rho)
    cov = mech.covariance()
    var = cov.var(np.arange(1, n_bins + 1))
    total = (n_bins + 1) * float(var.sum()) - cov.prefix_sum_covariance()
    return float(var.mean()), float(var.max()), total / (n_bins * (n_bins + 1) / 2), mech.scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rho", type=float, nargs="*", default=[0.5, 0.02])
    parser.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    parser.add_argument("--low-scale", action="store_true", help="scale 8 sqrt(B)")
    args = parser.parse_args()
    print(f"# {machine()}; load {os.getloadavg()}")
    print("| B | rho | scale | mean / bound | worst / bound | range / bound | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for n_bins in args.sizes:
        for rho in args.rho:
            cpu = time.process_time()
            mean, worst, rng, scale = exact_figures(n_bins, rho, args.low_scale)
            bound = svd_bound(n_bins, rho)
            cpu = time.process_time() - cpu
            print(
                f"| {n_bins} | {rho} | {scale} | {mean / bound:.5f} | {worst / bound:.5f} "
                f"| {rng / bound:.5f} | {cpu:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
