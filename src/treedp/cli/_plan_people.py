"""``treedp plan`` with contribution bounds: the expected error of each key's tree for a
per-person or group-by release, before any data is read (:func:`treedp.predict_error`)."""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._common import UsageError, budget_from, fixed_bound_arg
from treedp.cli._grouped import read_keys

__all__ = ["add_people", "people_lines"]

#: Group sizes at which the quantile-scale error is shown when no --sizes are given.
SIZES = (1_000, 10_000, 100_000)


def add_people(parser: Any) -> None:
    """The contribution-bound options of ``treedp plan`` (as ``treedp release`` spells them)."""
    parser.add_argument(
        "--max-contributions",
        type=fixed_bound_arg,
        metavar="K",
        help="rows kept per person ('auto' is refused: it chooses the bound from the data)",
    )
    parser.add_argument("--max-groups", type=int, help="groups per person (with --keys)")
    parser.add_argument(
        "--max-contributions-per-group",
        type=fixed_bound_arg,
        metavar="K",
        help="rows kept per person and group ('auto' is refused: it chooses the bound from "
        "the data)",
    )
    parser.add_argument(
        "--keys", metavar="FILE", help="the public keys of a group-by release, one per line"
    )
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        metavar="N",
        help="public guesses of a group's size: the quantile-scale error at each",
    )


def person_prediction(args: argparse.Namespace) -> tuple[Any, list[Any] | None] | None:
    """:func:`treedp.predict_error` of each key's tree for the bounds and keys given, and the
    keys (None without keys); None without contribution bounds or keys. Checked before
    anything is printed."""
    bounds = (args.max_contributions, args.max_groups, args.max_contributions_per_group)
    if bounds == (None, None, None) and args.keys is None:
        return None
    keys = None if args.keys is None else read_keys(args.keys, 1)
    unit = None
    if bounds != (None, None, None):
        unit = treedp.PrivacyUnit(
            "person",
            max_contributions=args.max_contributions,
            max_groups=args.max_groups,
            max_contributions_per_group=args.max_contributions_per_group,
        )
    if args.max_groups is not None and keys is None:
        raise UsageError("--max-groups and --max-contributions-per-group need --keys")
    if args.n is not None:
        raise UsageError(
            "--n is not used with contribution bounds or --keys (a per-key plan): under "
            "--neighbours replace each key's tree is an add/remove tree at half the budget and "
            "needs no public number of records; drop --n."
        )
    pred = treedp.predict_error(
        args.bins, **budget_from(args), neighbours=args.neighbours, privacy_unit=unit, keys=keys
    )
    return pred, keys


def tree_budget(args: argparse.Namespace, pred: Any) -> dict[str, Any]:
    """The budget keyword of each key's tree: the person's over the sensitivity (``ε/Δ``, or
    ``ρ/L2²`` for Gaussian noise) with contribution bounds, else the person's own."""
    if pred is None or pred.tree_budget is None:
        return budget_from(args)
    if "epsilon" in budget_from(args):
        return {"epsilon": pred.tree_budget}
    return {"privacy": treedp.ZCDP(pred.tree_budget)}


def people_lines(args: argparse.Namespace, found: tuple[Any, list[Any] | None] | None) -> list[str]:
    """The per-key lines below the plan (none without contribution bounds or keys)."""
    if found is None:
        return []
    pred, keys = found
    lines = ["  per key (every key's tree is the same; the budget is the person's):"]
    if pred.tree_budget is not None:
        lines.append(
            f"    sensitivity {pred.sensitivity} (records one person moves per level), "
            f"each tree at {pred.tree_budget:.6g} per record: the plan above"
        )
    if args.neighbours == "replace":
        lines.append(
            "    neighbours replace (one person's rows replaced by another's): each key's tree "
            "is an add/remove tree at twice the sensitivity"
        )
    lines.append(f"    expected CDF error (RMSE): {pred.rmse:.4g} records")
    for n in args.sizes or SIZES:
        lines.append(
            f"    a quantile of a group of {n:,} records: off by about "
            f"{pred.quantile_error(n):.3g} in level"
        )
    if keys is not None:
        lines.append(f"    keys: {len(keys)} from the keys file")
    lines.append(
        "    rows beyond the contribution limits are dropped first: a bias not counted here"
    )
    return lines


def per_key_rows(
    args: argparse.Namespace, found: tuple[Any, list[Any] | None]
) -> list[dict[str, Any]]:
    """``--format json``'s ``per_key``: one object per key (one with ``key`` None without
    keys): its CDF error in records, and the quantile error at each assumed size."""
    pred, keys = found
    sizes = list(args.sizes or SIZES)
    return [
        {
            "key": key,
            "cdf_rmse": pred.rmse,
            "worst_prefix_rmse": pred.max_cdf_variance**0.5,
            "quantile_error": [
                {"n_assumed": n, "level_error": pred.quantile_error(n)} for n in sizes
            ],
        }
        for key in (keys if keys is not None else [None])
    ]
