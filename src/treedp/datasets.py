"""Real data shipped with treedp: four numeric columns of the UCI Adult census extract.

The subset is vendored in ``treedp/data/adult_subset.csv.gz`` with its attribution
(``ADULT_README.md``): Becker and Kohavi (1996), UCI Machine Learning Repository,
doi:10.24432/C5XW20, CC BY 4.0.
"""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

from treedp.exceptions import InvalidParameterError

__all__ = ["ADULT_COLUMNS", "load_adult"]

#: The columns of the vendored subset.
ADULT_COLUMNS = ("age", "hours_per_week", "capital_gain", "education_num")


def load_adult() -> dict[str, np.ndarray]:
    """Return the vendored Adult columns as int64 arrays of 48,842 records each.

    Returns
    -------
    dict of str to ndarray
        ``{"age": ..., "hours_per_week": ..., "capital_gain": ..., "education_num": ...}``.
    """
    ref = resources.files("treedp") / "data" / "adult_subset.csv.gz"
    with ref.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as handle:
        header = handle.readline().strip().split(",")
        table = np.loadtxt(handle, delimiter=",", dtype=np.int64, ndmin=2)
    if tuple(header) != ADULT_COLUMNS:  # pragma: no cover - guards the vendored file
        raise InvalidParameterError(f"unexpected columns in the vendored data: {header}")
    return {name: table[:, i].copy() for i, name in enumerate(header)}
