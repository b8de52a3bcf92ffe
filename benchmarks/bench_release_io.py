"""Release files: save/load time and bytes, JSON (format 1) against binary (format 2).

A tree release over B = 2^16, 2^20 and 2^24 equal-width bins of 10^6 lognormal values
(16-ary tree, epsilon = 1, add/remove neighbours, direct estimator so that building the
release is cheap; loading a file never estimates). Each timing is the best of a few runs;
JSON at 2^24 is timed once (it takes minutes). "raw" is int64 × the number of noisy nodes.

Run: ``PYTHONPATH=src python benchmarks/bench_release_io.py [--skip-json-above 20]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import treedp
from _common import machine
from treedp import InsecureSeededSource
from treedp.mechanisms.registry import make_mechanism
from treedp.release import Release
from treedp.tree import TreeShape

N = 1_000_000


def _build(n_bins: int) -> Release:
    values = np.random.default_rng(0).lognormal(10, 1, size=N)
    bins = treedp.make_bins(bounds=(0.0, 2e6), bins=n_bins)
    counts, _ = bins.count(values)
    depth = round(np.log2(n_bins) / 4)
    shape = TreeShape(n_bins, (16,) * depth)
    mechanism = make_mechanism(
        "tree",
        n_bins=n_bins,
        epsilon=1.0,
        neighbours="add_remove",
        n=None,
        shape=shape,
        level_budgets=[1.0 / (depth + 1)] * (depth + 1),
    )
    levels = mechanism.measure(counts, InsecureSeededSource(1))
    return Release(
        bins=bins,
        mechanism=mechanism,
        noisy_levels=levels,
        estimator="direct",
        randomness={"source": "numpy.PCG64", "seeded": True, "seed": 1},
        library_version=treedp.__version__,
    )


def _time(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-json-above", type=int, default=24, help="largest log2 B for JSON")
    args = parser.parse_args()
    print(f"# release files, 16-ary tree over B equal-width bins ({machine()})")
    print(
        f"{'bins':>6} {'nodes':>10} {'raw MB':>8} {'layout':>7} {'save s':>8} {'load s':>8} "
        f"{'file MB':>8} {'file/raw':>9}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for log_b in (16, 20, 24):
            rel = _build(2**log_b)
            nodes = sum(level.size for level in rel.noisy_levels)
            raw = nodes * 8
            for layout, suffix in (("json", ".json"), ("binary", ".tdp")):
                if layout == "json" and log_b > args.skip_json_above:
                    continue
                path = Path(folder) / f"r{suffix}"
                repeats = 1 if (layout == "json" and log_b >= 24) else 3
                save = _time(lambda p=path, r=rel: r.save(p), repeats)
                load = _time(lambda p=path: treedp.load_release(p), repeats)
                size = path.stat().st_size
                again = treedp.load_release(path)
                assert all(
                    np.array_equal(a, b)
                    for a, b in zip(again.noisy_levels, rel.noisy_levels, strict=True)
                )
                print(
                    f"2^{log_b:<4} {nodes:>10,} {raw / 1e6:>8.1f} {layout:>7} {save:>8.3f} "
                    f"{load:>8.3f} {size / 1e6:>8.1f} {size / raw:>9.3f}",
                    flush=True,
                )
        # worst case for size: counts that need int64 (noisy levels shifted by 2^40)
        wide = Release(
            bins=rel.bins,
            mechanism=rel.mechanism,
            noisy_levels=[level + 2**40 for level in rel.noisy_levels],
            estimator="direct",
            randomness=rel.randomness,
            library_version=rel.library_version,
        )
        path = Path(folder) / "wide.tdp"
        save = _time(lambda: wide.save(path), 3)
        load = _time(lambda: treedp.load_release(path), 3)
        size = path.stat().st_size
        print(
            f"2^24 {nodes:>10,} {raw / 1e6:>8.1f} {'int64':>7} {save:>8.3f} {load:>8.3f} "
            f"{size / 1e6:>8.1f} {size / raw:>9.3f}"
        )


if __name__ == "__main__":
    main()
