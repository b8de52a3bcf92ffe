"""Write the strategies shipped with treedp.

``python -m treedp.strategy.generate [--workload prefix|range] [B ...]``.

Each is the deterministic optimisation of :func:`treedp.strategy.store.make_strategy` (fixed
start), quantised, saved as ``treedp/strategy/data/pidentity_<workload>_<B>.npz`` (a few
tens of kB). Its exact mean prefix variance is printed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from treedp.strategy.candidate import strategy_errors
from treedp.strategy.store import SHIPPED_SIZES, _file_name, make_strategy, save_strategy_file

__all__ = ["SHIPPED_BINS", "main"]

#: The ``B`` shipped by default (:data:`treedp.strategy.store.SHIPPED_SIZES`).
SHIPPED_BINS = SHIPPED_SIZES


def main(argv: list[str] | None = None) -> int:
    """Optimise and write the strategies for the given ``B`` (default :data:`SHIPPED_BINS`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    workload = "prefix"
    if args[:1] == ["--workload"]:
        workload, args = args[1], args[2:]
    sizes = [int(a) for a in args] or list(SHIPPED_BINS)
    out = Path(__file__).parent / "data"
    out.mkdir(exist_ok=True)
    for b in sizes:
        start = time.perf_counter()
        strategy = make_strategy(b, workload)
        elapsed = time.perf_counter() - start
        save_strategy_file(strategy, out / _file_name(b, workload))
        errors = strategy_errors(strategy, 1.0, "add_remove")
        print(
            f"B={b} ({workload}): optimised in {elapsed:.1f} s; at eps=1, exact: mean prefix "
            f"MSE {errors['mean_cdf_mse']:.2f}, mean range MSE {errors['range_mse']:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
