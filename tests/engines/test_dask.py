"""The Dask engine on a real local two-process cluster: partitions, tree sum, large B."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from treedp import make_bins
from treedp.engines import count_chunk
from treedp.exceptions import InvalidParameterError, InvalidTypeError

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.slow


def test_many_partitions_tree_sum_and_large_b(dask_client: Any) -> None:
    """20 blocks (a two-level tree of fan-in 8) over 2**22 bins, computed on the workers."""
    import dask.array as da

    from treedp.engines.dask import count_dask

    bins = make_bins(bounds=(0.0, 1.0), bins=1 << 22)
    values = np.random.default_rng(5).random(100_000)
    arr = da.from_array(values, chunks=5_000)
    assert arr.numblocks[0] == 20
    assert count_dask(arr, None, bins) == count_chunk(values, bins)


def test_dataframe_forms_and_engine(dask_client: Any) -> None:
    import dask.dataframe as dd

    from treedp.engines.dask import count_dask

    bins = make_bins(bounds=(-3, 4), bins="integers")
    ints = pd.array([-5, 0, None, 2, 9, 4], dtype="Int64")  # nullable: None is missing
    frame = dd.from_pandas(pd.DataFrame({"n": ints}), npartitions=2)
    expected = count_chunk(np.array([-5.0, 0, np.nan, 2, 9, 4]), bins, "drop")
    assert count_dask(frame, None, bins, "drop") == expected
    assert count_dask(frame, "n", bins, "drop") == expected


def test_bad_forms(dask_client: Any) -> None:
    import dask.array as da
    import dask.dataframe as dd

    from treedp.engines.dask import count_dask

    bins = make_bins(bounds=(0, 1), bins=2)
    frame = dd.from_pandas(pd.DataFrame({"a": [0.5], "b": [True]}), npartitions=1)
    with pytest.raises(InvalidParameterError):
        count_dask(frame, None, bins)
    with pytest.raises(InvalidTypeError):
        count_dask(frame, "b", bins)
    with pytest.raises(InvalidParameterError):
        count_dask(frame["a"], "a", bins)
    with pytest.raises(InvalidTypeError):
        count_dask(da.zeros((2, 2), chunks=1), None, bins)
