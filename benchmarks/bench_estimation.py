"""Efficient (BLUE) estimation time for B = 2^16, 2^20, 2^24 (16-ary trees), and direct."""

from __future__ import annotations

import numpy as np

from _common import best_of, machine
from treedp.estimation import consistent_prefix, efficient_tree, tree_prefix
from treedp.estimation.efficient import VariancePlan
from treedp.tree import shape_for


def main() -> None:
    print(f"# estimation from noisy levels, 16-ary trees ({machine()})")
    print(f"{'bins':>10} {'nodes':>10} {'plan ms':>8} {'efficient ms':>13} {'direct ms':>10}")
    rng = np.random.default_rng(0)
    for n_bins in (2**16, 2**20, 2**24, 10**6 + 3):
        shape = shape_for(n_bins, 16)
        levels = [rng.integers(-50, 500, size=s) for s in shape.level_sizes()]
        variances = (8.0,) * (shape.height + 1)
        t_plan = best_of(lambda s=shape, v=variances: VariancePlan(s, v), 3)
        t_eff = best_of(lambda s=shape, lv=levels, v=variances: efficient_tree(s, lv, v), 3)
        t_dir = best_of(lambda s=shape, lv=levels, v=variances: tree_prefix(s, lv, v), 3)
        print(
            f"{n_bins:>10} {shape.n_nodes:>10} {t_plan * 1e3:>8.2f} {t_eff * 1e3:>13.1f} "
            f"{t_dir * 1e3:>10.1f}"
        )


def consistency() -> None:
    print(f"\n# consistency of a noisy CDF (efficient estimate, eps=1) ({machine()})")
    print(
        f"{'bins':>10} {'L2 real ms':>11} {'L1 real ms':>11} {'L2 integer ms':>14} "
        f"{'L1 integer ms':>14}"
    )
    rng = np.random.default_rng(1)
    for n_bins in (2**16, 2**20):
        shape = shape_for(n_bins, 16)
        counts = rng.poisson(3, size=n_bins)
        noisy = [lv + rng.laplace(0, 6, lv.size) for lv in shape.aggregate(counts)]
        prefix = efficient_tree(shape, noisy, (72.0,) * (shape.height + 1)).prefix(n_bins)
        times = [
            best_of(
                lambda loss=loss, integer=integer, p=prefix: consistent_prefix(
                    p, loss=loss, integer=integer
                ),
                3,
            )
            for integer in (False, True)
            for loss in ("l2", "l1")
        ]
        print(
            f"{n_bins:>10} {times[0] * 1e3:>11.1f} {times[1] * 1e3:>11.1f} "
            f"{times[2] * 1e3:>14.1f} {times[3] * 1e3:>14.1f}"
        )


if __name__ == "__main__":
    main()
    consistency()
