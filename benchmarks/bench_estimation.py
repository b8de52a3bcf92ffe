"""Efficient (BLUE) estimation time for B = 2^16, 2^20, 2^24 (16-ary trees), and direct."""

from __future__ import annotations

import numpy as np

from _common import best_of, machine
from treedp.estimation import efficient_tree, tree_prefix
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


if __name__ == "__main__":
    main()
