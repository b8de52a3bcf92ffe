"""``treedp demo``: release three columns of the UCI Adult census data under one total budget."""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import treedp
from treedp.cli._common import fmt
from treedp.cli._ledger import fmt_measure

__all__ = ["register", "run"]

#: The columns released, with their public bounds and bins.
SETUPS: dict[str, dict[str, Any]] = {
    "age": {"bounds": (17, 90), "bins": "integers"},
    "hours_per_week": {"bounds": (1, 99), "bins": "integers"},
    "capital_gain": {"bounds": (0, 99_999), "bins": "integers"},
}


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand to the parser's subcommands."""
    demo = sub.add_parser(
        "demo", help="release three columns of the UCI Adult census data under one total budget"
    )
    demo.add_argument(
        "--epsilon",
        type=float,
        default=3.0,
        help="the total budget of the dataset, split equally over its three columns (default 3)",
    )
    demo.add_argument(
        "--ledger",
        metavar="PATH",
        help="keep the budget in this ledger file (dataset 'adult'); default: a temporary file. "
        "A second run on the same ledger finds the budget spent and is refused.",
    )
    demo.add_argument("--report", help="where to write the age column's HTML report page")
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp demo`` with the parsed arguments."""
    if args.ledger is not None:
        released = _demo(args.epsilon, Path(args.ledger))
    else:
        with tempfile.TemporaryDirectory(prefix="treedp-demo-") as tmp:
            released = _demo(args.epsilon, Path(tmp) / "adult-budget.db")
    if "age" in released:
        _write_report(released["age"], args.report)


def _demo(total_epsilon: float, path: Path) -> dict[str, Any]:
    data = treedp.datasets.load_adult()
    qs = np.array([0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
    total = treedp.PureDP(total_epsilon)
    per_column = total_epsilon / len(SETUPS)
    while len(SETUPS) * Fraction(per_column) > Fraction(total_epsilon):  # never past the total
        per_column = math.nextafter(per_column, 0.0)
    with treedp.open_ledger(path, "adult", total=total) as ledger:
        print(
            f"UCI Adult census, {data['age'].size} records (Becker & Kohavi 1996, CC BY 4.0).\n"
            f"Total privacy budget of the dataset: {fmt_measure(total)}, add/remove neighbours, "
            f"kept in the ledger {str(path)!r}.\n"
            f"Each of its {len(SETUPS)} columns is released once with epsilon={per_column:.6g} "
            "(exact discrete Laplace noise from OS randomness), charged to the ledger before "
            "any noise is drawn; every number below is read from those releases.\n"
        )
        header = "  ".join(f"q={q:<6g}" for q in qs)
        released: dict[str, Any] = {}
        for column, setup in SETUPS.items():
            values = data[column]
            release = treedp.release_cdf(values, epsilon=per_column, accountant=ledger, **setup)
            released[column] = release
            private = np.atleast_1d(release.quantile(qs))
            exact = np.quantile(values, qs, method="inverted_cdf")
            shape = (
                f"a tree of {len(release.branching)} levels below its root, fan-out "
                + ", ".join(map(str, release.branching))
                + " from the root down"
                if release.branching
                else release.mechanism.summary or f"mechanism {release.mechanism.name}"
            )
            print(
                f"{column}: {release.bins.n_bins} bins, mechanism {release.mechanism.name} "
                f"({shape})"
            )
            print(f"  {'':<22}{header}")
            print(f"  {'private quantiles':<22}" + "  ".join(f"{fmt(v):<8}" for v in private))
            print(f"  {'exact (non-private)':<22}" + "  ".join(f"{fmt(v):<8}" for v in exact))
            print(
                f"  private count <= median: {release.cdf(np.median(values)):.0f} "
                f"(exact {int((values <= np.median(values)).sum())}), "
                f"estimated n: {release.n:.0f}\n"
            )
        print(
            f"Total spent on the dataset: {fmt_measure(ledger.spent)} of "
            f"{fmt_measure(ledger.total)}; remaining: {fmt_measure(ledger.remaining)}."
        )
        try:
            treedp.release_cdf(data["age"], epsilon=per_column, accountant=ledger, **SETUPS["age"])
        except treedp.BudgetExceededError:
            print(
                f"A fourth release (age again, epsilon={per_column:.6g}) is refused by the "
                "ledger: nothing is drawn or released."
            )
    return released


def _write_report(release: treedp.Release, path: str | None) -> None:
    """Write the age column's report page (no further privacy cost) and print where it is."""
    # A fresh private directory (mode 0700) each run: a fixed name in the shared temporary
    # directory could be a symbolic link planted by another user.
    target = path or os.path.join(
        tempfile.mkdtemp(prefix="treedp-demo-report-"), "treedp-adult-age-report.html"
    )
    try:
        treedp.write_report(release, target, title="UCI Adult census: age (treedp demo)")
    except treedp.MissingDependencyError as exc:
        print(f"(no report page: {exc})")
        return
    print(f"Report page for the age column: {os.path.abspath(target)}")
