"""Dictionary-encoding of id and key columns (treedp._codes): codes, the null rule, mixed types."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from treedp._codes import factorize, factorize_column, null_mask


def test_codes_follow_the_values_order_as_np_unique_does() -> None:
    ids = np.array(["b", "a", "c", "a", "b"], dtype=object)
    codes, uniques = factorize(ids)
    ref_uniq, ref_inv = np.unique(ids, return_inverse=True)
    assert codes.tolist() == ref_inv.tolist() and uniques.tolist() == ref_uniq.tolist()
    ints = np.array([7, -3, 7, 10**12], dtype=np.int64)
    assert factorize(ints)[0].tolist() == np.unique(ints, return_inverse=True)[1].tolist()


@pytest.mark.parametrize("missing", [None, float("nan"), pd.NA, pd.NaT])
def test_missing_ids_get_minus_one_and_the_mask_says_so(missing: object) -> None:
    ids = np.array(["p1", missing, "p2", ""], dtype=object)
    codes, _ = factorize(ids)
    assert codes[1] == -1 and (codes[[0, 2, 3]] >= 0).all()  # "" is an id, not missing
    assert null_mask(ids).tolist() == [False, True, False, False]


def test_mixed_types_are_encoded_without_error() -> None:
    ids = np.array([5, "p1", 5, "p1", 2.5], dtype=object)
    codes, uniques = factorize(ids)
    assert codes[0] == codes[2] and codes[1] == codes[3] and len(set(codes.tolist())) == 3
    assert len(uniques) == 3


def test_a_pandas_string_column_is_encoded_like_its_numpy_form() -> None:
    s = pd.Series(["b", None, "a", "b"], dtype="string[pyarrow]")
    codes, _ = factorize_column(s, lambda c: c.to_numpy())
    assert codes.tolist() == [1, -1, 0, 1]
    assert factorize_column(["x", "y"], np.asarray)[0].tolist() == [0, 1]


def test_null_mask_of_numeric_and_datetime_columns() -> None:
    assert null_mask(np.array([1.0, np.nan])).tolist() == [False, True]
    assert null_mask(np.array(["2020-01-01", "NaT"], dtype="M8[D]")).tolist() == [False, True]
    assert null_mask(np.array([1, 2])).tolist() == [False, False]
