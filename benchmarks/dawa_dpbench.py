"""DAWA vs treedp's data-independent default on the DPBench 1-D vectors (4096 bins each).

For every vector in ``--data`` (default ``../shared/data/dpbench`` next to the repository;
the files are read there, never copied), every epsilon and ``--trials`` seeded releases
(seeds ``0..trials-1``, the same seeds for both mechanisms), it measures on the answers users
get (the consistent CDF, ``postprocess="monotone"``):

* CDF MSE: the mean over the prefixes ``m = 0..B`` of ``(P̂[m] − P[m])²``;
* range MSE: the mean over all ``B(B+1)/2`` ranges ``[a, b)`` of the squared error, computed
  exactly from the prefix errors ``e``: ``((B+1) Σ e² − (Σ e)²) / (B(B+1)/2)``.

The total budget of each release is ``epsilon`` (pure DP, add/remove): for DAWA 25% on the
partition and 75% on the tree over the buckets. Run from the repository root::

    PYTHONPATH=src python benchmarks/dawa_dpbench.py            # the table in docs/data_aware.md
    PYTHONPATH=src python benchmarks/dawa_dpbench.py --trials 2 --epsilons 1
    PYTHONPATH=src python benchmarks/dawa_dpbench.py --scale 1000   # DPBench-style rescaling

``--scale N`` replaces each vector by ``N`` records drawn from its shape (a multinomial with a
fixed seed), as DPBench does to vary the scale independently of the shape.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import treedp
from _common import machine
from treedp.noise import InsecureSeededSource

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dpbench"


def errors(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(CDF MSE over the prefixes, MSE over all ranges) of one release."""
    e = np.asarray(estimate, dtype=np.float64) - truth
    k = e.size  # B + 1 prefixes
    cdf = float(np.mean(e**2))
    pairs = k * (k - 1) / 2
    rng = (k * float(np.sum(e**2)) - float(np.sum(e)) ** 2) / pairs
    return cdf, rng


def rescale(counts: np.ndarray, scale: int | None) -> np.ndarray:
    """The vector itself, or (DPBench's "scale") ``scale`` records drawn from its shape:
    a multinomial with probabilities ``counts / Σ counts`` and the fixed seed 12345."""
    if scale is None:
        return counts
    rng = np.random.default_rng(12345)
    return rng.multinomial(scale, counts / counts.sum()).astype(np.int64)


def run(
    data: Path, epsilons: list[float], trials: int, names: list[str] | None, scale: int | None
) -> list[str]:
    """Measure every vector; returns the markdown rows."""
    files = sorted(data.glob("*.npy"))
    if names:
        files = [f for f in files if f.name.split(".")[0] in names]
    rows = []
    plans = {eps: treedp.plan(4096, epsilon=eps) for eps in epsilons}
    for path in files:
        counts = rescale(np.load(path), scale)
        truth = np.concatenate([[0], np.cumsum(counts)]).astype(np.float64)
        for eps in epsilons:
            res: dict[str, list[tuple[float, float]]] = {"auto": [], "dawa": []}
            buckets = []
            for seed in range(trials):
                default = treedp.release_counts(
                    counts, epsilon=eps, plan=plans[eps], rng=InsecureSeededSource(seed)
                )
                res["auto"].append(errors(default.consistent_counts, truth))
                dawa = treedp.release_counts(
                    counts, epsilon=eps, mechanism="dawa", rng=InsecureSeededSource(seed)
                )
                res["dawa"].append(errors(dawa.consistent_counts, truth))
                buckets.append(dawa.mechanism.partition.n_buckets)
            a = np.array(res["auto"])
            d = np.array(res["dawa"])
            cells = []
            for col in (0, 1):
                ma, md = a[:, col].mean(), d[:, col].mean()
                cells.append(f"{ma:.4g} | {md:.4g} | {ma / md:.2f}")
            name = path.name.split(".")[0]
            rows.append(
                f"| {name} | {int(counts.sum()):,} | {eps:g} | {cells[0]} | {cells[1]} "
                f"| {np.mean(buckets):.0f} |"
            )
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    parser.add_argument("--only", nargs="*", help="vector names (default: all)")
    parser.add_argument(
        "--scale", type=int, default=None, help="draw this many records from each vector's shape"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"# {machine()}; load {os.getloadavg()[0]:.2f}; trials {args.trials} (seeds 0..)")
    print(
        "| vector | n | ε | default CDF MSE | DAWA CDF MSE | default/DAWA "
        "| default range MSE | DAWA range MSE | default/DAWA | DAWA buckets |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    run(args.data, args.epsilons, args.trials, args.only, args.scale)
    print(f"# {time.perf_counter() - start:.0f} s; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
