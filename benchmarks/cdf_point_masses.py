"""A release's CDF beside point masses: interpolated inside the bin, or the mass at its value.

Run: ``PYTHONPATH=src:benchmarks python benchmarks/cdf_point_masses.py [--reps R]``. Prints one
Markdown table (docs/quantiles.md, "Point masses in a release", holds one run). For each
input of ``benchmarks/release_atoms.py`` (1,024 equal-width bins, public or private bounds)
and two whole-integer cases (Adult ``capital_gain`` and 70% zero counts with
``bins="integers"`` on found bounds capped at 4,096 bins, the profile's cap), ε = 1 and 0.1:
the mean over ``R`` releases (seeds ``0..R-1``) of the root mean squared error, in records,
of ``cdf(x)`` at the data's own quantiles ``x`` at levels ``0.001 .. 0.999`` (the body of the
data, where a block of ties sits), for two readings of the same release:

* ``interpolated``: every bin linear inside (``Release.cdf`` before this change: the
  release's point masses switched off);
* ``shipped``: ``Release.cdf``, where a bin that :func:`treedp.release.atoms.point_masses`
  reads as a point mass (an end bin at its bound, an inner bin holding 0 at 0, by the test
  the quantiles use) has its whole count at that value.

Also the share of those points where each reading's 95% ``confidence_interval`` covers the
truth (the same for both: intervals keep the bracketing edges).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any
from unittest import mock

import numpy as np

import treedp
from treedp.datasets import load_adult
from treedp.noise import InsecureSeededSource

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine
from release_atoms import inputs

LEVELS = np.arange(1, 1000) / 1000


def cases() -> dict[str, tuple[np.ndarray, Any, Any]]:
    """``name: (values, bounds, bins)``."""
    out: dict[str, tuple[np.ndarray, Any, Any]] = {}
    for name, (x, bounds) in inputs().items():
        out[f"{name}, public bounds"] = (x, bounds, 1024)
        out[f"{name}, private bounds"] = (x, "private", 1024)
    r = np.random.default_rng(3)
    counts = np.where(r.random(10**4) < 0.7, 0, r.geometric(1e-4, 10**4))
    whole = treedp.PrivateBounds(max_bins=4096)
    out["Adult capital_gain, integers, 4,096 bins"] = (
        load_adult()["capital_gain"],
        whole,
        "integers",
    )
    out["70% zero counts, integers, 4,096 bins"] = (counts, whole, "integers")
    return out


def errors(rel: Any, x: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """RMSE of ``cdf`` at ``x`` and the share of ``x`` where the interval covers."""
    est = np.asarray(rel.cdf(x), dtype=float)
    low, high = rel.confidence_interval("cdf", x)
    return float(np.sqrt(np.mean((est - truth) ** 2))), float(
        np.mean((low <= truth) & (truth <= high))
    )


def row(
    x: np.ndarray, bounds: Any, bins: Any, eps: float, reps: int
) -> dict[str, tuple[float, float]]:
    xs = np.sort(x)
    points = np.quantile(xs, LEVELS)
    truth = np.searchsorted(xs, points, side="right").astype(float)
    out: dict[str, list[tuple[float, float]]] = {"interpolated": [], "shipped": []}
    for s in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rel = treedp.release_cdf(
                x, bounds=bounds, bins=bins, epsilon=eps, rng=InsecureSeededSource(s)
            )
        out["shipped"].append(errors(rel, points, truth))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = treedp.release_cdf(
                x, bounds=bounds, bins=bins, epsilon=eps, rng=InsecureSeededSource(s)
            )
        with mock.patch.object(type(plain), "_masses", ()):
            out["interpolated"].append(errors(plain, points, truth))
    return {
        k: (float(np.mean([e for e, _ in v])), float(np.mean([c for _, c in v])))
        for k, v in out.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 0.1])
    args = ap.parse_args()
    print(
        f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at start; "
        f"{args.reps} releases per cell.\n"
    )
    print(
        "| input | ε | CDF RMSE, records: interpolated / shipped "
        "| interval coverage: interpolated / shipped |"
    )
    print("|---|---:|---:|---:|")
    for name, (x, bounds, bins) in cases().items():
        for eps in args.eps:
            got = row(np.asarray(x), bounds, bins, eps, args.reps)
            (e0, c0), (e1, c1) = got["interpolated"], got["shipped"]
            print(f"| {name} | {eps:g} | {e0:,.1f} / {e1:,.1f} | {c0:.3f} / {c1:.3f} |")


if __name__ == "__main__":
    main()
