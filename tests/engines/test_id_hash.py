"""The keyed id hash of the Dask engine (routing only): equal ids hash equal in every
representation (a person is never split across buckets), distinct ids of the hard kinds do not
collide, the key matters."""

from __future__ import annotations

import datetime
import decimal
import fractions
from typing import Any

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.engines.id_hash import IdHashKey, hash_ids

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

KEY = IdHashKey.draw(InsecureSeededSource(TEST_SEED))

#: Text ids of the hard kinds: empty, unicode, long, 8- and 16-byte boundaries, a NUL inside,
#: prefixes of each other, ids that differ only in their last byte.
TEXT = [
    "",
    "a",
    "ab",
    "a\x00b",
    "ünïcødé",
    "🙂" * 9,
    "N00001",
    "N00010",
    "12345678",
    "123456781",
    "1234567812345678",
    "x" * 200,
    "x" * 199 + "y",
    "x" * 201,
    "\u00e9",
    "e\u0301",  # the same letter, not the same text: two ids
]


def _text_forms(ids: list[str]) -> dict[str, Any]:
    return {
        "object": np.array(ids, dtype=object),
        "string[python]": pd.Series(ids, dtype="string[python]"),
        "string[pyarrow]": pd.Series(ids, dtype="string[pyarrow]"),
        "str": pd.Series(ids),
        "category": pd.Series(ids, dtype="category"),
        "arrow large_string": pd.Series(ids, dtype=pd.ArrowDtype(pa.large_string())),
        "pyarrow Array": pa.array(ids),
        "pyarrow chunked": pa.chunked_array([ids[:5], ids[5:]]),
        "pyarrow dictionary": pa.array(ids).dictionary_encode(),
        "index": pd.Index(ids),
    }


def test_text_ids_hash_alike_in_every_representation_and_do_not_collide() -> None:
    expected = hash_ids(np.array(TEXT, dtype=object), KEY)
    assert expected.dtype == np.uint64
    assert len(set(expected.tolist())) == len(TEXT)
    for name, form in _text_forms(TEXT).items():
        assert np.array_equal(hash_ids(form, KEY), expected), name
    # numpy "U" text (no NUL inside: numpy itself strips NULs at the end)
    plain = [t for t in TEXT if "\x00" not in t]
    assert np.array_equal(hash_ids(np.array(plain), KEY), hash_ids(pd.Series(plain), KEY))


def test_numbers_equal_in_python_hash_alike() -> None:
    """5, 5.0, Decimal(5), Fraction(10, 2) are one person for pandas (Python equality): they
    must be one hash in any column type; so are True and 1, 2**70 and 2.0**70."""
    ints = [0, 1, -1, 5, 2**63 - 1, -(2**63)]
    expected = hash_ids(np.array(ints, dtype=np.int64), KEY)
    for form in [
        np.array(ints, dtype=object),
        pd.Series(ints, dtype="Int64"),
        pd.Series(ints, dtype=pd.ArrowDtype(pa.int64())),
        pa.array(ints),
        np.array(ints[:4], dtype=np.int8),
    ]:
        got = hash_ids(form, KEY)
        assert np.array_equal(got, expected[: got.size])
    same = np.array(
        [True, decimal.Decimal(5), fractions.Fraction(10, 2), -0.0, 2**64 - 1, 5.0], dtype=object
    )
    assert np.array_equal(
        hash_ids(same, KEY), hash_ids(np.array([1, 5, 5, 0, 2**64 - 1, 5], dtype=np.uint64), KEY)
    )
    assert np.array_equal(hash_ids(np.array([1.0, 5.0, -1.0]), KEY), expected[[1, 3, 2]])
    big = hash_ids(np.array([2**70, decimal.Decimal("0.1"), 0.5], dtype=object), KEY)
    other = hash_ids(np.array([2.0**70, fractions.Fraction(1, 10), 0.5], dtype=object), KEY)
    assert np.array_equal(big, other)
    assert hash_ids(np.array([0.5]), KEY)[0] == big[2]


def test_datetimes_hash_by_their_instant() -> None:
    naive = np.array(["2020-01-01T10:00", "1969-12-31"], dtype="datetime64[ns]")
    expected = hash_ids(naive, KEY)
    objects = np.array([pd.Timestamp("2020-01-01 10:00"), datetime.datetime(1969, 12, 31)])
    assert np.array_equal(hash_ids(objects.astype(object), KEY), expected)
    assert np.array_equal(hash_ids(naive.astype("datetime64[s]"), KEY), expected)
    zoned = pd.Series(pd.to_datetime(["2020-01-01 11:00"]).tz_localize("Europe/Paris"))
    assert hash_ids(zoned, KEY)[0] == expected[0]  # the same instant
    delta = np.array([5], dtype="timedelta64[s]")
    assert hash_ids(delta, KEY)[0] == hash_ids(np.array([pd.Timedelta(seconds=5)]), KEY)[0]
    # numpy's timedelta64 is an integer type: still a duration, not the integer 5
    as_object = np.array([np.timedelta64(5, "s")], dtype=object)
    assert hash_ids(as_object, KEY)[0] == hash_ids(delta, KEY)[0] != hash_ids([5], KEY)[0]
    far = np.array(["3000-01-01"], dtype="datetime64[s]")  # beyond nanoseconds: routed alike
    assert hash_ids(far, KEY)[0] == hash_ids(np.array([far[0]], dtype=object), KEY)[0]


def test_types_that_differ_in_python_hash_apart() -> None:
    ids = np.array([5, "5", b"5", 5.5, "5.5", datetime.date(2020, 1, 1)], dtype=object)
    got = hash_ids(ids, KEY)
    assert len(set(got.tolist())) == ids.size
    # values of unknown types are routed alike (never split; told apart in their bucket)
    tuples = hash_ids(np.array([(1, 2), (3,), object()], dtype=object), KEY)
    assert len(set(tuples.tolist())) == 1


def test_mixed_objects_agree_with_pandas_equality() -> None:
    """On a random mixed column: equal pandas codes give equal hashes, and (a small sample,
    64-bit hashes) distinct codes give distinct ones."""
    rng = np.random.default_rng(TEST_SEED)
    pool: list[Any] = [*TEXT, *range(-3, 40), *(float(i) for i in range(5)), 2.5, True, False]
    pool += [decimal.Decimal(7), b"bytes", "🙂"]
    column = np.empty(3000, dtype=object)
    column[:] = [pool[i] for i in rng.integers(0, len(pool), 3000)]
    codes, _ = pd.factorize(column)
    hashed = hash_ids(column, KEY)
    _, first = np.unique(codes, return_index=True)
    assert np.array_equal(hashed, hashed[first][codes])
    assert np.unique(hashed).size == first.size


def test_surrogates_and_large_columns() -> None:
    """Text Arrow cannot encode (a lone surrogate) goes value by value, with the same hash for
    the ordinary ids beside it; a large Arrow column is hashed without Python objects."""
    got = hash_ids(np.array(["a\ud800", "a"], dtype=object), KEY)
    assert got[1] == hash_ids(pd.Series(["a"], dtype="string[pyarrow]"), KEY)[0]
    assert got[0] != got[1]
    ids = pd.Series([f"id-{i}-é" for i in range(100_000)], dtype="string[pyarrow]")
    assert np.unique(hash_ids(ids, KEY)).size == ids.size


def test_the_key_changes_every_hash() -> None:
    other = IdHashKey.draw(InsecureSeededSource(TEST_SEED + 1))
    text = np.array(TEXT, dtype=object)
    a, b = hash_ids(text, KEY), hash_ids(text, other)
    assert not np.any(a == b)
    again = IdHashKey.draw(InsecureSeededSource(TEST_SEED))
    assert np.array_equal(hash_ids(text, again), a)
    assert len(IdHashKey.draw(InsecureSeededSource(3)).words) == 8
