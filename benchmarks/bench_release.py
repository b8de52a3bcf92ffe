"""A full release (count, noise, estimate) and its queries, for B = 2^16 and 2^20."""

from __future__ import annotations

import os
import time

import numpy as np

import treedp
from _common import best_of, machine

N = 1_000_000


def main() -> None:
    x = np.random.default_rng(0).lognormal(10, 1, size=N)
    print(f"# full release of {N:,} values, epsilon=1, OS randomness ({machine()})")
    print(
        f"{'bins':>9} {'neighbours':>11} {'branching':>22} {'nodes':>9} {'release s':>10} "
        f"{'planned s':>10} {'1e5 cdf s':>10} {'99 quantiles s':>15}"
    )
    for n_bins in (2**16, 2**20):
        for neighbours, n in (("add_remove", None), ("replace", N)):

            def run(b=n_bins, nb=neighbours, nn=n) -> treedp.Release:
                return treedp.release_cdf(
                    x, bounds=(0.0, 2e6), bins=b, epsilon=1.0, neighbours=nb, n=nn
                )

            seconds = best_of(run, 3)  # planning included (no plan is cached behind the call)
            the_plan = treedp.plan(n_bins, epsilon=1.0, neighbours=neighbours, n=n)

            def run_planned(b=n_bins, nb=neighbours, nn=n, p=the_plan) -> treedp.Release:
                return treedp.release_cdf(
                    x, bounds=(0.0, 2e6), bins=b, epsilon=1.0, neighbours=nb, n=nn, plan=p
                )

            planned = best_of(run_planned, 3)  # the plan given: count, noise, estimate
            rel = run_planned()
            qx = np.random.default_rng(1).uniform(0, 2e6, 100_000)
            t0 = time.perf_counter()
            rel.cdf(qx)
            t_cdf = time.perf_counter() - t0
            t0 = time.perf_counter()
            rel.quantile(np.linspace(0.01, 0.99, 99))
            t_q = time.perf_counter() - t0
            nodes = sum(lv.size for lv in rel.noisy_levels)
            print(
                f"{n_bins:>9} {neighbours:>11} {list(rel.branching)!s:>22} {nodes:>9} "
                f"{seconds:>10.3f} {planned:>10.3f} {t_cdf:>10.4f} {t_q:>15.4f} "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
