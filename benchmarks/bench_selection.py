"""Private key selection against public keys: a grouped release of 10^6 rows (in memory and
from one Parquet file), 5·10^5 persons, 10 keys, max_groups=2, one row per group and person.

    PYTHONPATH=src python benchmarks/bench_selection.py
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from treedp.api_grouped import release_grouped

N = 10**6


def _best_of(repeats: int, run: Any) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    cols = {
        "v": rng.integers(0, 101, N).astype(float),
        "g": rng.integers(0, 10, N),
        "p": rng.integers(0, N // 2, N),
    }
    opts: dict[str, Any] = dict(
        column="v",
        by="g",
        privacy_unit="p",
        max_groups=2,
        max_contributions_per_group=1,
        epsilon=1.0,
        bounds=(0, 100),
        bins="integers",
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.parquet")
        pq.write_table(pa.table(cols), path)
        for name, data in (("numpy", cols), ("files", path)):
            for how, extra in (
                ("public keys", {"keys": list(range(10))}),
                ("selection", {"delta": 1e-6}),
            ):
                best = _best_of(3, lambda d=data, e=extra: release_grouped(d, **opts, **e))
                load = os.getloadavg()[0]
                print(f"{name:6s} {how:12s} {best:.2f} s  load {load:.1f}", flush=True)


if __name__ == "__main__":
    main()
