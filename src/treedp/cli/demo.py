"""``treedp demo``: release three columns of the UCI Adult census data."""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

import numpy as np

import treedp
from treedp.datasets import load_adult

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand to the parser's subcommands."""
    demo = sub.add_parser("demo", help="release three columns of the UCI Adult census data")
    demo.add_argument("--epsilon", type=float, default=1.0, help="budget per column")
    demo.add_argument("--report", help="where to write the age column's HTML report page")
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp demo`` with the parsed arguments."""
    data = load_adult()
    qs = np.array([0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
    setups: dict[str, dict[str, Any]] = {
        "age": {"bounds": (17, 90), "bins": "integers"},
        "hours_per_week": {"bounds": (1, 99), "bins": "integers"},
        "capital_gain": {"bounds": (0, 99_999), "bins": "integers"},
    }
    print(
        f"UCI Adult census, {data['age'].size} records (Becker & Kohavi 1996, CC BY 4.0).\n"
        f"Each column is released once with epsilon={args.epsilon} (add/remove neighbours, "
        "exact discrete Laplace noise from OS randomness); every number below is read from "
        "that one release.\n"
    )
    header = "  ".join(f"q={q:<5g}" for q in qs)
    released: dict[str, Any] = {}
    for column, setup in setups.items():
        values = data[column]
        release = treedp.release_cdf(values, epsilon=args.epsilon, **setup)
        released[column] = release
        private = np.atleast_1d(release.quantile(qs))
        exact = np.quantile(values, qs, method="inverted_cdf")
        shape = list(release.branching) if release.branching else "flat histogram"
        print(f"{column}: {release.bins.n_bins} bins, {release.mechanism.name}, {shape}")
        print(f"  {'':<22}{header}")
        print(f"  {'private quantiles':<22}" + "  ".join(f"{v:<7.4g}" for v in private))
        print(f"  {'exact (non-private)':<22}" + "  ".join(f"{v:<7.4g}" for v in exact))
        print(
            f"  private count <= median: {release.cdf(np.median(values)):.0f} "
            f"(exact {int((values <= np.median(values)).sum())}), "
            f"estimated n: {release.n:.0f}\n"
        )
    _write_report(released["age"], args.report)


def _write_report(release: treedp.Release, path: str | None) -> None:
    """Write the age column's report page (no further privacy cost) and print where it is."""
    from treedp.report import write_report

    target = path or os.path.join(tempfile.gettempdir(), "treedp-adult-age-report.html")
    try:
        write_report(release, target, title="UCI Adult census: age (treedp demo)")
    except treedp.MissingDependencyError as exc:
        print(f"(no report page: {exc})")
        return
    print(f"Report page for the age column: {os.path.abspath(target)}")
