"""A release's quantiles beside point masses: interpolated, nearer edge, and the shipped rule.

Run: ``PYTHONPATH=src python benchmarks/release_atoms.py [--reps R] [--grouped K]``. Prints
one Markdown table (docs/quantiles.md, "Point masses in a release", holds one run): for each
input, bounds (public, or ``"private"``) and ε, the mean over ``R`` releases (``release_cdf``, 1,024
equal-width bins, seeds ``0..R-1``) of the mean rank gap over ``n`` at the levels 0.1, 0.25,
0.5, 0.6, 0.75, 0.9, and the mean absolute error of the value against the data's own
quantile (``numpy.quantile``, ``inverted_cdf``), for three readings of the *same* release:

* ``interpolated``: linear inside the bin (``Release.quantile`` before this change;
  ``queries.quantile_from``), the baseline;
* ``nearer edge``: an atom's bin answered by its nearer edge in rank (the rule of
  ``treedp.quantiles``' tree before this change: ``round_value`` switched off);
* ``shipped``: ``Release.quantile`` (``release/atoms.py``: the bound in an end bin, 0 in an
  inner bin holding it, else the nearer edge).

Inputs (``n = 10^4`` but Adult's 48,842): 70% zeros with lognormal(3, 1) otherwise; Adult
``capital_gain`` and ``age`` read as floats; 99% at 7.0 and at 7.3 with 1% normal(0, 100);
diffprivlib issue #107's (80% at 65,000, else uniform integers on 0..500,000) as floats;
30% at 9.99 with lognormal(3, 1) otherwise (a price: its bin's round number is 10, on the
block's far side); and three continuous columns, which hold no atom (the three columns agree).

``--grouped K``: instead, the time of ``GroupedRelease.table([0.25, 0.5, 0.75])`` over ``K``
keys of 70% zeros (10^6 rows, bounds ``(-10, 1000)``, 1,024 bins), read twice, with the
shipped reading and with ``snap_to_atoms`` switched off, on two equal releases in the same
process (the first read includes each key's consistent CDF).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any
from unittest import mock

import numpy as np

import treedp
from treedp.datasets import load_adult
from treedp.noise import InsecureSeededSource
from treedp.release import queries

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine

Q = np.array([0.1, 0.25, 0.5, 0.6, 0.75, 0.9])


def inputs() -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
    r = np.random.default_rng(7)
    n = 10**4
    adult = load_adult()
    tail = r.normal(0, 100, n // 100)
    prices = r.lognormal(3, 1, 7 * n // 10)
    issue_107 = np.r_[np.full(8 * n // 10, 65_000.0), r.integers(0, 500_001, n // 5)]
    return {
        "70% zeros": (np.where(r.random(n) < 0.7, 0.0, r.lognormal(3, 1, n)), (0.0, 1000.0)),
        "Adult capital_gain (float)": (adult["capital_gain"].astype(float), (0.0, 100_000.0)),
        "Adult age (float)": (adult["age"].astype(float), (0.0, 100.0)),
        "99% at 7.0": (np.r_[np.full(n - tail.size, 7.0), tail], (-400.0, 400.0)),
        "#107 (float)": (issue_107.astype(float), (0.0, 500_000.0)),
        "30% at 9.99": (np.r_[np.full(3 * n // 10, 9.99), prices], (0.0, 1000.0)),
        "99% at 7.3": (np.r_[np.full(n - tail.size, 7.3), tail], (-400.0, 400.0)),
        "lognormal(10, 1)": (r.lognormal(10, 1, n), (0.0, 1e6)),
        "normal(-50, 20)": (r.normal(-50, 20, n), (-200.0, 100.0)),
        "uniform(0, 100)": (r.uniform(0, 100, n), (0.0, 100.0)),
    }


def gap(xs: np.ndarray, est: np.ndarray) -> float:
    below = np.searchsorted(xs, est, side="left") - Q * xs.size
    above = Q * xs.size - np.searchsorted(xs, est, side="right")
    return float(np.mean(np.maximum(0, np.maximum(below, above))) / xs.size)


def readings(rel: Any) -> dict[str, np.ndarray]:
    """The three readings of one release."""
    interpolated = queries.quantile_from(rel.bins, rel.consistent_counts, Q)
    with mock.patch("treedp.release.atoms.round_value", lambda low, high: None):
        nearer = np.asarray(rel.quantile(Q), dtype=float)
    return {
        "interpolated": interpolated,
        "nearer edge": nearer,
        "shipped": np.asarray(rel.quantile(Q), dtype=float),
    }


def row(xs: np.ndarray, bounds: Any, eps: float, reps: int) -> dict[str, tuple[float, float]]:
    truth = np.quantile(xs, Q, method="inverted_cdf")
    gaps: dict[str, list[float]] = {}
    errors: dict[str, list[float]] = {}
    for s in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rel = treedp.release_cdf(
                xs, bounds=bounds, bins=1024, epsilon=eps, rng=InsecureSeededSource(s)
            )
        for name, v in readings(rel).items():
            gaps.setdefault(name, []).append(gap(xs, v))
            errors.setdefault(name, []).append(float(np.mean(np.abs(v - truth))))
    return {k: (float(np.mean(gaps[k])), float(np.mean(errors[k]))) for k in gaps}


def grouped(keys: int) -> None:
    """The ``--grouped`` timing (above)."""
    import treedp.release.atoms as atoms

    r = np.random.default_rng(0)
    by = r.integers(0, keys, 10**6)
    values = np.where(r.random(10**6) < 0.7, 0.0, r.lognormal(3, 1, 10**6))

    def release() -> Any:
        return treedp.release_grouped(
            values, by=by, keys=list(range(keys)), bounds=(-10.0, 1000.0), bins=1024,
            epsilon=1.0, rng=InsecureSeededSource(1),
        )  # fmt: skip

    def reads(rel: Any) -> list[float]:
        out = []
        for _ in range(2):
            t = time.perf_counter()
            rel.table([0.25, 0.5, 0.75])
            out.append(time.perf_counter() - t)
        return out

    shipped = reads(release())
    with mock.patch.object(atoms, "snap_to_atoms", lambda e, c, q, a, s=None, i=False: a):
        plain = reads(release())
    print(
        f"{keys} keys: table read first / again {shipped[0]:.2f} / {shipped[1]:.2f} s "
        f"(without snap_to_atoms {plain[0]:.2f} / {plain[1]:.2f} s); {machine()}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--grouped", type=int, default=0, help="time a grouped table of K keys")
    args = ap.parse_args()
    if args.grouped:
        grouped(args.grouped)
        return
    start = time.time()
    names = ("interpolated", "nearer edge", "shipped")
    print("| data | bounds | ε | " + " | ".join(f"rank gap / n: {k}" for k in names)
          + " | " + " | ".join(f"value error: {k}" for k in names) + " |")  # fmt: skip
    print("|---|---|---|" + "---|" * 6)
    for label, (x, public) in inputs().items():
        xs = np.sort(x)
        for bounds in (public, "private"):
            for eps in (0.1, 1.0):
                cells = row(xs, bounds, eps, args.reps)
                shown = "private" if bounds == "private" else f"({bounds[0]:g}, {bounds[1]:g})"
                print(
                    f"| {label} | {shown} | {eps:g} | "
                    + " | ".join(f"{cells[k][0]:.4f}" for k in names)
                    + " | "
                    + " | ".join(f"{cells[k][1]:.4g}" for k in names)
                    + " |",
                    flush=True,
                )
    print(
        f"\n{args.reps} releases per row; {time.time() - start:.0f} s; {machine()}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
