"""Repeated release_cdf calls with the default plan cache against the same call with plan=.

Issue 28 item 6: a repeated ``release_cdf`` with the same public parameters should cost at most
1.2x the same call with ``plan=`` given. Baselines in the same run: ``plan=`` (no planning) and
``plan=False`` (planning every call, the behaviour before the default cache).

Run: ``.venv/bin/python benchmarks/plan_cache.py``.
"""

from __future__ import annotations

import numpy as np

import treedp
from _common import best_of, machine


def main() -> None:
    rng = np.random.default_rng(0)
    values = rng.lognormal(3, 1, 100_000)
    print(machine())
    print(f"{'bins':>8} {'plan=':>10} {'default cache':>14} {'ratio':>6} {'plan=False':>17}")
    for bins in (1024, 2**14, 2**16):
        common = {"bounds": (0, 2000), "bins": bins, "epsilon": 1.0}
        plan = treedp.plan(bins, epsilon=1.0)
        treedp.release_cdf(values, **common)  # warm the default cache
        with_plan = best_of(lambda: treedp.release_cdf(values, plan=plan, **common))  # noqa: B023
        cached = best_of(lambda: treedp.release_cdf(values, **common))  # noqa: B023
        fresh = best_of(lambda: treedp.release_cdf(values, plan=False, **common), 3)  # noqa: B023
        print(
            f"{bins:>8} {with_plan * 1e3:>8.1f}ms {cached * 1e3:>12.1f}ms "
            f"{cached / with_plan:>6.2f} {fresh * 1e3:>15.1f}ms"
        )


if __name__ == "__main__":
    main()
