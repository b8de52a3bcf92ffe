"""The zCDP default against the SVD lower bound, every power of two from 2^10 to 2^24 (issue 33).

Run from the repository root::

    PYTHONPATH=src python benchmarks/frontier_zcdp.py                 # ρ = 0.5, 2^10 .. 2^24
    PYTHONPATH=src python benchmarks/frontier_zcdp.py --colnorm 12    # + column-normalised C

For each ``B`` the script computes, in the same run: the SVD lower bound on the mean prefix MSE
of any factorisation mechanism (``benchmarks/prefix_bound.py``, closed-form singular values);
``treedp.plan(B, privacy=ZCDP(ρ))`` — the default — timed as the first plan of that ``B`` in
the process (wall and CPU seconds; the per-``(B, s)`` caches of the square-root factor are
cold), the mechanism it picks, its exact mean prefix MSE (records²) and the best tree among its
alternatives (the baseline: what ``auto`` released above ``2^20`` before issue 33). With
``--colnorm K`` it adds, for ``B <= 2^K``, the *real* square root with every column scaled to
unit norm (dense ``O(B³)`` linear algebra: ``A = C D^{-1}``, ``R = L D C^{-1}``), the reference
point the issue quotes. With ``--rows K`` it adds, for ``B <= 2^K``, the real square root with
*rows* scaled so that every column has the same norm (``A = E C``, ``E² = diag(u)``,
``Σ_{i>=j} c_{i−j}² u_i = 1`` for every ``j``: ``u`` is the reversed cumulative sum of the
power-series inverse of ``c²``, ``O(B log B)``); its mean MSE is
``Σ_i S(B − i)/u_i / (2ρB)`` — a Toeplitz-fast structure (equivalently: noise of variance
``σ²/u_i`` on row ``i``), not shipped; the reference for what a structured scaling reaches.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import treedp
from _common import machine
from prefix_bound import svd_bound
from treedp.estimation.toeplitz import series_inverse
from treedp.mechanisms.sqrt_factorization import sqrt_coefficients


def column_normalised(n_bins: int, rho: float) -> float:
    """Mean prefix MSE of the real square root with unit-norm columns (dense)."""
    c = sqrt_coefficients(n_bins)
    i, j = np.indices((n_bins, n_bins))
    dense = np.where(i >= j, c[np.clip(i - j, 0, None)], 0.0)
    norms = np.sqrt(np.cumsum(c**2)[::-1])  # column j holds c_0 .. c_{B-1-j}
    estimator = np.tril(np.ones((n_bins, n_bins))) * norms[None, :] @ np.linalg.inv(dense)
    return float((estimator**2).sum() / n_bins / (2 * rho))  # every column has norm 1


def row_equalised(n_bins: int, rho: float) -> float:
    """Mean prefix MSE of the real square root with rows scaled to equal column norms."""
    c2 = sqrt_coefficients(n_bins) ** 2
    u = np.cumsum(series_inverse(c2))[::-1]  # u[i] for row i (positive: c² is log-convex)
    tails = np.cumsum(c2)[::-1]  # S(B − i) = Σ_{k < B − i} c_k²
    return float(np.sum(tails / u) / n_bins / (2 * rho))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--min-log2", type=int, default=10)
    parser.add_argument("--max-log2", type=int, default=24)
    parser.add_argument("--colnorm", type=int, default=0, help="dense reference up to 2^K")
    parser.add_argument("--rows", type=int, default=0, help="row-equalised reference up to 2^K")
    args = parser.parse_args()
    print(f"# {machine()}; rho = {args.rho}; load {os.getloadavg()}")
    head = "| B | SVD bound | default | mean MSE | / bound | best tree | tree / bound "
    head += "| plan wall s | plan CPU s |"
    if args.colnorm:
        head += " column-normalised C / bound |"
    if args.rows:
        head += " row-equalised C / bound |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    treedp.plan(64, privacy=treedp.ZCDP(args.rho))  # imports and warm-up, not timed
    for log2 in range(args.min_log2, args.max_log2 + 1):
        n_bins = 2**log2
        bound = svd_bound(n_bins, args.rho)
        wall, cpu = time.perf_counter(), time.process_time()
        plan = treedp.plan(n_bins, privacy=treedp.ZCDP(args.rho))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        tree = min(c.value for c in plan.alternatives if not c.offered)  # cdf_mse
        row = (
            f"| 2^{log2} | {bound:.4f} | {plan.mechanism} | {plan.mean_cdf_mse:.4f} "
            f"| **{plan.mean_cdf_mse / bound:.4f}** | {tree:.4f} | {tree / bound:.4f} "
            f"| {wall:.2f} | {cpu:.2f} |"
        )
        if args.colnorm:
            ref = column_normalised(n_bins, args.rho) / bound if log2 <= args.colnorm else None
            row += f" {ref:.4f} |" if ref is not None else " |"
        if args.rows:
            ref = row_equalised(n_bins, args.rho) / bound if log2 <= args.rows else None
            row += f" {ref:.4f} |" if ref is not None else " |"
        print(row + f"  (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
