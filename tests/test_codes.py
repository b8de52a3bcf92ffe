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


@pytest.mark.parametrize(
    "dtype", ["string[pyarrow]", "str", "large_string[pyarrow]", "string[python]", object]
)
def test_text_keys_looked_up_in_public_values_match_the_encoding(dtype: object) -> None:
    """Arrow-backed text is looked up in the public values (pyarrow's ``index_in``); any
    other Series is encoded by pandas: the key positions are the same, unlisted values and
    missing ones (``-1``) kept apart, non-text values never matching text."""
    from treedp._codes import encoded_column
    from treedp.engines.grouped import encode_keys

    rng = np.random.default_rng(2)
    pool = np.array(["C01", "C02", "", "é", "1", "zz", "C01 "], dtype=object)
    raw = pool[rng.integers(0, pool.size, 5000)]
    raw[rng.random(5000) < 0.05] = None
    series = pd.Series(list(raw), dtype=dtype)  # type: ignore[call-overload]
    series = pd.concat([series[:2500], series[2500:]], ignore_index=True)  # Arrow: 2 chunks
    values = ["zz", 1, "C01", "é", "", "absent"]
    looked = encoded_column(series, lambda c: c.to_numpy(), values)
    arrow = dtype in ("string[pyarrow]", "str", "large_string[pyarrow]")
    assert (repr(looked.uniques[-1]) == "<any other value>") is arrow  # the lookup ran
    plain = encoded_column(series, lambda c: c.to_numpy())
    got = encode_keys([looked], tuple(values), "drop")
    assert np.array_equal(got, encode_keys([plain], tuple(values), "drop"))
    want = [values.index(v) if isinstance(v, str) and v in values else -1 for v in raw]
    assert got.tolist() == want
    assert (looked.codes == -1).tolist() == [v is None for v in raw]
