"""The public parameters of a group-by or per-person release, checked before any value is read.

:func:`treedp.release_grouped` (and :func:`treedp.release_cdf` with ``by`` or
``privacy_unit``) calls these first; none reads the data.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import numpy as np

from treedp._validation import check_real, must
from treedp.budget import check_epsilon
from treedp.engines.key_types import key_kind
from treedp.engines.keys import check_keys, key_instant, refuse_equal_instants
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.grouped_columns import Lazy
from treedp.mechanisms.registry import REGISTRY
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP
from treedp.spec import rho_for_approx_dp
from treedp.value_methods._column import check_delta

__all__ = ["check_key_types", "grouped_budget", "key_plan", "refuse_unless_per_group"]


def refuse_unless_per_group(name: Any) -> None:
    """Refuse a registered mechanism that cannot serve every group (``per_group`` False)."""
    if isinstance(name, str) and name in REGISTRY and not REGISTRY[name].per_group:
        raise InvalidParameterError(
            f"mechanism={name!r} is not available for a group-by release; use 'auto'."
        )


def grouped_budget(
    epsilon: float | None, privacy: Measure | None
) -> tuple[float | None, float | None]:
    """``(epsilon, rho)``: the pure budget, or the zCDP one of a Gaussian target (validated)."""
    rho_total: float | None = None
    if privacy is not None:
        if epsilon is not None:
            raise InvalidParameterError(
                "Give the budget once: either 'epsilon' (pure DP) or 'privacy' (a target "
                "guarantee such as treedp.ZCDP(rho))."
            )
        if isinstance(privacy, PureDP):
            epsilon = privacy.epsilon
        elif isinstance(privacy, ZCDP):
            rho_total = check_real(privacy.rho, "rho", 1e-12, 1e6)
        elif isinstance(privacy, ApproxDP):
            rho_total = rho_for_approx_dp(privacy.epsilon, privacy.delta)
        else:
            raise InvalidTypeError(
                must(
                    "privacy",
                    f"be a PureDP, ZCDP or ApproxDP. Got {type(privacy).__name__} instead.",
                )
            )
    if rho_total is None:
        if epsilon is None:
            raise InvalidParameterError("Give 'epsilon' or 'privacy' (the budget).")
        epsilon = check_epsilon(epsilon)
    return epsilon, rho_total


def key_plan(
    keys: Sequence[Any] | None,
    n_by: int,
    delta: float | None,
    selection_epsilon: float | None,
    epsilon: float | None,
) -> tuple[tuple[Any, ...] | None, float, float | None]:
    """The public keys (None: selected privately), the selection's ε and its δ."""
    if keys is not None:
        if delta is not None or selection_epsilon is not None:
            raise InvalidParameterError(
                "'delta' and 'selection_epsilon' are for private key selection (keys=None); "
                "with public keys the release is pure epsilon-DP."
            )
        if not n_by:
            raise InvalidParameterError("The 'keys' parameter lists keys of 'by': give 'by'.")
        the_keys: tuple[Any, ...] | None = check_keys(keys, n_by)
        eps_sel = 0.0
    elif not n_by:
        the_keys, eps_sel = ((),), 0.0
    else:
        if delta is None:
            raise InvalidParameterError(
                "Give the public 'keys' of the group-by, or a 'delta' to select keys privately "
                "(a thresholded noisy count per key; the release is then (epsilon, delta)-DP)."
            )
        delta = check_delta(delta)
        assert epsilon is not None  # Gaussian noise needs public keys (checked above)
        eps_sel = (
            epsilon / 2
            if selection_epsilon is None
            else check_real(selection_epsilon, "selection_epsilon", 1e-6, epsilon)
        )
        if eps_sel >= epsilon:
            raise InvalidParameterError(
                must("selection_epsilon", "be less than 'epsilon' (the rest pays for the trees).")
            )
        the_keys = None
    return the_keys, eps_sel, delta


def check_key_types(
    data: Any, by: Sequence[str], by_columns: Sequence[Any], keys: tuple[Any, ...] | None
) -> None:
    """Refuse public keys that no value of their ``by`` column's schema type can equal.

    Text keys for a column of a number type, number keys (int, float, bool) or dates for a
    column of a text type, and anything but an instant for a column of a date or datetime
    type (:func:`treedp.engines.keys.key_instant`: a date, a datetime, a ``datetime64`` or ISO
    8601 text) match no record: every such key would be released as noise, and its budget
    spent. Two keys naming the same instant (``"2024-01-31"`` and ``date(2024, 1, 31)``) are
    refused too: the records would fall in one of them. The column's type is public (the
    schema: :func:`treedp.engines.key_types.key_kind`, the same rule on every engine); a
    column whose schema says neither (CSV, SQLite, pandas ``object``) is not checked. No
    value is read.

    Raises
    ------
    InvalidTypeError
        Naming ``keys``, the column and its type (the keys are public parameters).
    InvalidParameterError
        Two keys of a datetime column name the same instant.
    """
    if keys is None or not by:
        return
    for j, (name, col) in enumerate(zip(by, by_columns, strict=True)):
        kind = key_kind(data, name) if isinstance(col, Lazy) else key_kind(col)
        if kind is None:
            continue
        parts = [k[j] if isinstance(k, tuple) else k for k in keys]
        wrong = [k for k in parts if not _fits(k, kind)]
        if wrong:
            shown = ", ".join(repr(k) for k in wrong[:5]) + (", ..." if len(wrong) > 5 else "")
            article = "an" if kind == "integer" else "a"
            raise InvalidTypeError(
                f"The 'keys' parameter holds {shown}, but the 'by' column '{name}' has "
                f"{article} {kind} type in the data's schema: no record could match such a "
                f"key, and nothing was spent. Give {_WANT[kind]}."
            )
        if kind == "datetime":
            refuse_equal_instants(name, parts)


#: What each kind of ``by`` column takes, for :func:`check_key_types`' message.
_WANT = {
    "text": "str keys",
    "integer": "number keys (int or float)",
    "float": "number keys (int or float)",
    "datetime": (
        "dates or datetimes (datetime.date, naive datetime.datetime, numpy.datetime64, "
        "pandas.Timestamp) or ISO 8601 text such as '2024-01-31' or '2024-01-31T06:30'"
    ),
}


def _fits(key: Any, kind: str) -> bool:
    """Whether a key of a ``by`` column of this kind can equal one of its values."""
    if kind == "datetime":
        return key_instant(key) is not None
    dated = isinstance(key, datetime.date | np.datetime64)
    if kind == "text":
        return isinstance(key, str)
    return not isinstance(key, str) and not dated
