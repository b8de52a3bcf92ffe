"""The SVD lower bound on Gaussian prefix MSE, and how close the square-root factorisation gets.

Run from the repository root::

    PYTHONPATH=src python benchmarks/prefix_bound.py            # table B = 2^10 .. 2^24
    PYTHONPATH=src python benchmarks/prefix_bound.py --time     # also time a 2^20-bin release

The bound. For any factorisation ``L = R A`` of the ``B × B`` prefix matrix released as
``A x + N(0, σ²I)`` with ``σ² = Δ₂(A)²/(2ρ)`` (``Δ₂(A)`` the largest column norm of ``A``) and
estimated as ``R y``, the total squared error is ``‖R‖_F² Δ₂(A)²/(2ρ) >= ‖L‖_*²/(2ρB)``
(Li, Miklau, Hay, McGregor & Rastogi, "The matrix mechanism", VLDB J. 2015, the SVD bound;
``‖L‖_*`` the sum of the singular values), so the mean over the ``B`` prefixes is at least
``‖L‖_*²/(2ρB²)``. The singular values of ``L`` are known in closed form,
``1/(2 sin((2k − 1)π/(4B + 2)))``, ``k = 1..B`` (``L^{-1}`` is the bidiagonal difference
matrix; checked against a dense SVD below ``B = 2^11``), so the bound is computed exactly (to
float rounding) for every ``B`` in ``O(B)``.

The real square-root factorisation ``L = C·C`` has mean MSE
``(Σ_{k<B} c_k²)·mean_m Σ_{k<m} c_k² / (2ρ)``; the lattice version actually released
(:class:`treedp.mechanisms.SqrtFactorizationMechanism`, integer ``ĉ = round(s c)`` at the
largest scale ``s`` the exact sampler allows for ``ρ``) has the exact mean of its
:class:`~treedp.estimation.toeplitz.ToeplitzPrefixCovariance` (the exact discrete Gaussian
variance included): "plain lattice" is that factor alone, "as released" the mechanism's
default (equalised, normalised or scaled columns and rows, by ``B``), whose scale ``s`` the
last column gives. Ratios are to the bound at the same ``ρ``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism, sqrt_coefficients


def svd_bound(n_bins: int, rho: float) -> float:
    """``‖L‖_*² / (2ρ B²)``, the least mean prefix MSE of any factorisation mechanism."""
    k = np.arange(1, n_bins + 1, dtype=np.float64)
    nuclear = float(np.sum(1.0 / (2.0 * np.sin((2 * k - 1) * np.pi / (4 * n_bins + 2)))))
    return nuclear**2 / (2 * rho * n_bins**2)


def real_sqrt_mse(n_bins: int, rho: float) -> float:
    c2 = sqrt_coefficients(n_bins) ** 2
    return float(c2.sum() * np.cumsum(c2).mean() / (2 * rho))


def lattice_mse(n_bins: int, rho: float, plain: bool = False) -> tuple[float, int]:
    """The exact mean prefix MSE and lattice scale of the mechanism's default (``plain``: the
    rounded factor alone, no equalised, normalised or scaled columns or rows)."""
    flags = {"equalise": False, "normalise": False, "rows": False, "both": False}
    mech = SqrtFactorizationMechanism(n_bins, rho=rho, **(flags if plain else {}))
    var = mech.covariance().var(np.arange(1, n_bins + 1))
    return float(var.mean()), mech.scale


def check_closed_form() -> None:
    for n_bins in (2, 17, 1024):
        dense = np.linalg.svd(np.tril(np.ones((n_bins, n_bins))), compute_uv=False).sum()
        assert abs(dense**2 / (n_bins**2) - 2 * svd_bound(n_bins, 1.0)) < 1e-9 * dense**2


def time_release(n_bins: int, rho: float) -> tuple[float, float]:
    import treedp
    from treedp.noise import InsecureSeededSource

    counts = np.random.default_rng(1).poisson(20, n_bins)
    start = time.perf_counter()
    rel = treedp.release_counts(
        counts,
        privacy=treedp.ZCDP(rho),
        mechanism="sqrt_factorization",
        rng=InsecureSeededSource(1),
    )
    released = time.perf_counter() - start
    start = time.perf_counter()
    _ = rel.prefix_counts
    return released, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--max-log2", type=int, default=24)
    parser.add_argument("--time", action="store_true", help="time a 2^20-bin release")
    args = parser.parse_args()
    check_closed_form()
    print(f"load: {os.getloadavg()}  rho = {args.rho}")
    print("| B | SVD bound | real sqrt / bound | plain lattice / bound | as released / bound | s |")
    print("|---|---|---|---|---|---|")
    for log2 in [10, 11, 12, 13, *range(14, args.max_log2 + 1, 2)]:
        n_bins = 2**log2
        bound = svd_bound(n_bins, args.rho)
        lat = lattice_mse(n_bins, args.rho, plain=True)[0]
        released, scale = lattice_mse(n_bins, args.rho)
        print(
            f"| 2^{log2} | {bound:.4f} | {real_sqrt_mse(n_bins, args.rho) / bound:.4f} "
            f"| {lat / bound:.4f} | {released / bound:.4f} | {scale} |",
            flush=True,
        )
    if args.time:
        for _ in range(3):
            released, estimated = time_release(2**20, args.rho)
            print(
                f"2^20 bins: release {released:.3f} s, prefix estimates {estimated:.3f} s "
                f"(load {os.getloadavg()[0]:.1f})"
            )


if __name__ == "__main__":
    main()
