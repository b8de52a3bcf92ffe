"""Write the strategies shipped with treedp: ``python -m treedp.strategy.generate [B ...]``.

Each is the deterministic optimisation of :func:`treedp.strategy.store.make_strategy` (fixed
start), quantised, saved as ``treedp/strategy/data/pidentity_<workload>_<B>.npz`` (a few
tens of kB). Its exact mean prefix variance is printed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from treedp.strategy.store import _file_name, make_strategy, save_strategy_file

__all__ = ["SHIPPED_BINS", "main"]

#: The ``B`` shipped by default (prefix workload).
SHIPPED_BINS = (256, 512, 1024, 2048, 4096)


def main(argv: list[str] | None = None) -> int:
    """Optimise and write the strategies for the given ``B`` (default :data:`SHIPPED_BINS`)."""
    args = sys.argv[1:] if argv is None else argv
    sizes = [int(a) for a in args] or list(SHIPPED_BINS)
    out = Path(__file__).parent / "data"
    out.mkdir(exist_ok=True)
    for b in sizes:
        start = time.perf_counter()
        strategy = make_strategy(b, "prefix")
        elapsed = time.perf_counter() - start
        path = out / _file_name(b, "prefix")
        save_strategy_file(strategy, path)
        mse = (
            2
            * strategy.sensitivity("add_remove")[0] ** 2
            * float(strategy.unit_prefix_variances()[1:].mean())
        )
        print(f"B={b}: optimised in {elapsed:.1f} s, mean prefix MSE (eps=1, 2Δ²) {mse:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
