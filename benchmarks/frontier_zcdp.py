"""The zCDP default against the SVD lower bound, every power of two from 2^10 to 2^24 (issue 33).

Run from the repository root::

    PYTHONPATH=src python benchmarks/frontier_zcdp.py                 # ρ = 0.5, 2^10 .. 2^24
    PYTHONPATH=src python benchmarks/frontier_zcdp.py --colnorm 12    # + column-normalised C
    PYTHONPATH=src python benchmarks/frontier_zcdp.py --release 22 24 # release time and memory

For each ``B`` the script computes, in the same run: the SVD lower bound on the mean prefix MSE
of any factorisation mechanism (``benchmarks/prefix_bound.py``, closed-form singular values);
``treedp.plan(B, privacy=ZCDP(ρ))`` — the default — timed as the first plan of that ``B`` in
the process (wall and CPU seconds; the per-``(B, s)`` caches of the square-root factor are
cold), the mechanism it picks, its *exact* mean prefix MSE (records²) and the best tree among
its alternatives (the baseline: what ``auto`` released above ``2^20`` before issue 33). Up to
``EXACT_PLAN_LIMIT`` the plan's figure is exact; above it the planner scores the factorisation
by a measured rule (``treedp.mechanisms.sqrt_plan``; its figure, an upper bound, is printed as
"plan's figure"), and the exact one is computed afterwards, untimed, from the mechanism
``auto`` builds (its covariance). With ``--colnorm K`` it adds, for ``B <= 2^K``, the *real*
square root with every column scaled to unit norm (dense ``O(B³)`` linear algebra:
``A = C D^{-1}``, ``R = L D C^{-1}``), the reference point the issue quotes. With ``--rows K``
it adds, for ``B <= 2^K``, the real square root with *rows* scaled so that every column has the
same norm (``A = E C``, ``E² = diag(u)``, ``Σ_{i>=j} c_{i−j}² u_i = 1`` for every ``j``: ``u`` is
the reversed cumulative sum of the power-series inverse of ``c²``, ``O(B log B)``); its mean
MSE is ``Σ_i S(B − i)/u_i / (2ρB)``.

``--release 22 24`` instead times ``release_counts`` (the plan included) and the first answer
(``cdf``) of the counts of 10^6 lognormal values over ``2^22`` and ``2^24`` bins, each in a
fresh process, with ``mechanism="auto"`` (the factorisation) and ``mechanism="tree"`` (the
baseline, in the same run), and the peak resident memory of each process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import treedp
from _common import machine
from prefix_bound import svd_bound
from treedp.estimation.toeplitz import series_inverse
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism, sqrt_coefficients
from treedp.mechanisms.sqrt_plan import EXACT_PLAN_LIMIT


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


def exact_mean(plan: treedp.Plan, rho: float) -> float:
    """The default's exact mean prefix MSE: the plan's figure up to ``EXACT_PLAN_LIMIT``, else
    the covariance of the mechanism ``auto`` builds (untimed)."""
    if plan.bins <= EXACT_PLAN_LIMIT or plan.mechanism != "sqrt_factorization":
        return plan.mean_cdf_mse
    cov = SqrtFactorizationMechanism(plan.bins, rho=rho).covariance()
    return float(cov.var(np.arange(1, plan.bins + 1)).mean())


def release_run(n_bins: int, mechanism: str, rho: float) -> dict[str, float]:
    """One fresh process: plan + ``release_counts`` and the first answer, with peak memory."""
    code = (
        "import json, resource, time, numpy as np, treedp\n"
        "from treedp.domain import make_bins\n"
        f"b = make_bins(bounds=(0.0, 2e6), bins={n_bins})\n"
        "c, _ = b.count(np.random.default_rng(0).lognormal(10, 1, size=10**6))\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "w, t = time.perf_counter(), time.process_time()\n"
        f"r = treedp.release_counts(c, bins=b, privacy=treedp.ZCDP({rho}), "
        f"mechanism={mechanism!r}, plan=False)\n"
        "w1, t1 = time.perf_counter(), time.process_time()\n"
        "r.cdf(1e5)\n"
        "print(json.dumps({'mechanism': r.mechanism.name, 'release': w1 - w, "
        "'release_cpu': t1 - t, 'answer': time.perf_counter() - w1, "
        "'answer_cpu': time.process_time() - t1, 'base_mb': base / 1024, "
        "'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    row: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def releases(sizes: list[int], rho: float) -> None:
    print("| B | mechanism | release s (CPU) | first answer s (CPU) | peak MB (before release) |")
    print("|---|---|---|---|---|")
    for log2 in sizes:
        for mechanism in ("auto", "tree"):
            r = release_run(2**log2, mechanism, rho)
            print(
                f"| 2^{log2} | {mechanism} ({r['mechanism']}) | {r['release']:.2f} "
                f"({r['release_cpu']:.2f}) | {r['answer']:.2f} ({r['answer_cpu']:.2f}) "
                f"| {r['peak_mb']:.0f} ({r['base_mb']:.0f}) |  (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--min-log2", type=int, default=10)
    parser.add_argument("--max-log2", type=int, default=24)
    parser.add_argument("--colnorm", type=int, default=0, help="dense reference up to 2^K")
    parser.add_argument("--rows", type=int, default=0, help="row-equalised reference up to 2^K")
    parser.add_argument("--release", type=int, nargs="*", help="time releases at these 2^K")
    args = parser.parse_args()
    print(f"# {machine()}; rho = {args.rho}; load {os.getloadavg()}")
    if args.release:
        releases(args.release, args.rho)
        return
    head = "| B | SVD bound | default | plan's figure | exact mean MSE | / bound | best tree "
    head += "| tree / bound | plan wall s | plan CPU s |"
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
        exact = exact_mean(plan, args.rho)
        row = (
            f"| 2^{log2} | {bound:.4f} | {plan.mechanism} | {plan.mean_cdf_mse:.4f} "
            f"| {exact:.4f} | **{exact / bound:.4f}** | {tree:.4f} | {tree / bound:.4f} "
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
