"""treedp.profile end to end: pandas, Parquet, a mapping; the split, the one charge, refusals."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.sources import DrawCountingSource
from tests.stats import TEST_SEED
from treedp.profiling.front import PROFILE_RECORD, split_epsilon

N = 4000
pytestmark = pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # small n, small epsilon


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(TEST_SEED)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, N),
            "income": rng.lognormal(10, 1, N),
            "delay": rng.normal(-5, 20, N),
            "visits": pd.array(rng.poisson(3, N), dtype="Int64"),
            "when": pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, N), "D"),
            "name": ["x"] * N,
            "flag": rng.integers(0, 2, N).astype(bool),
        }
    )


CountingSource = DrawCountingSource


def test_pandas_end_to_end(frame: pd.DataFrame) -> None:
    acct = treedp.Accountant(treedp.PureDP(2.0), dataset="people")
    prof = treedp.profile(frame, epsilon=1.0, accountant=acct, rng=treedp.InsecureSeededSource(1))
    assert list(prof) == ["age", "income", "delay", "visits", "when"]  # from the dtypes
    assert prof.kinds == {
        "age": "integer",
        "income": "float",
        "delay": "float",
        "visits": "integer",
        "when": "datetime",  # private bounds on the public grid of days
    }
    assert set(prof.skipped) == {"name", "flag"}
    assert prof["age"].bins.discrete and not prof["income"].bins.discrete
    with pytest.raises(KeyError, match=r"No column .Age. in the profile\. Columns: age, income"):
        prof["Age"]  # a new user's run: a bare KeyError('Age')
    # one record for the whole profile, the whole epsilon
    assert len(acct.history) == 1
    charge = acct.history[0]
    assert charge.record.mechanism == PROFILE_RECORD and charge.cost == treedp.PureDP(1.0)
    assert charge.record.parameters["columns"] == list(prof)
    assert acct.spent == treedp.PureDP(1.0)
    for name, rel in prof.items():
        assert rel.total_guarantee.epsilon <= prof.shares[name]
    # a quartile estimate lands near the truth (n = 4000, epsilon 0.25 per column)
    true = np.quantile(frame["age"], 0.5, method="inverted_cdf")
    assert abs(float(prof["age"].quantile(0.5)) - true) <= 5
    table = prof.to_frame(rng=treedp.InsecureSeededSource(2))
    assert set(table["statistic"]) == {"n", "lower_bound", "upper_bound", "q0.25", "q0.5", "q0.75"}
    assert len(table) == 5 * 6
    assert "5 columns" in repr(prof)
    # the datetime column's private bounds cover its year and its quartiles land near the truth
    when = prof["when"]
    assert when.bounds_step is not None and when.bounds_step["grid"] == "days"
    lo, hi = when.bins.edges_as_values()[[0, -1]]
    # epsilon 0.02 for the bounds: each scan stops where about k = 600 records (15%) lie beyond
    assert lo <= np.datetime64("2024-05-01") and hi >= np.datetime64("2024-09-01")
    assert hi - lo <= np.timedelta64(2 * 366, "D")
    truth = np.quantile(frame["when"].to_numpy().astype("datetime64[ns]").astype(np.int64), 0.5)
    off = abs(np.datetime64(when.quantile(0.5)).astype("datetime64[ns]").astype(np.int64) - truth)
    assert off <= 10 * 86_400 * 10**9


def test_parquet_file_with_datetime_bounds(frame: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    frame.drop(columns=["visits"]).to_parquet(path)
    bounds = {"when": ("2024-01-01", "2025-01-01")}
    runs = [
        treedp.profile(str(path), epsilon=1.0, bounds=bounds, rng=treedp.InsecureSeededSource(5))
        for _ in range(2)
    ]
    prof = runs[0]
    assert list(prof) == ["age", "income", "delay", "when"]
    assert prof.kinds["when"] == "datetime" and prof["when"].bins.is_datetime
    assert prof["when"].bounds_step is None and prof["age"].bounds_step is not None
    # the noise is drawn column by column in order: a seeded profile is reproducible
    for name in prof:
        np.testing.assert_array_equal(runs[1][name].prefix_counts, prof[name].prefix_counts)
    doc = prof.to_json(rng=treedp.InsecureSeededSource(3))
    assert '"format": "treedp.profile"' in doc and "2024-" in doc


def test_mapping_of_columns() -> None:
    rng = np.random.default_rng(TEST_SEED)
    data: dict[str, Any] = {"a": rng.integers(0, 50, N), "b": rng.normal(0, 1, N)}
    prof = treedp.profile(data, epsilon=0.5, rng=treedp.InsecureSeededSource(1))
    assert prof.kinds == {"a": "integer", "b": "float"}
    # lists have no dtype: their types are declared, never read from the values
    lists = {"a": data["a"].tolist(), "b": data["b"].tolist()}
    with pytest.raises(treedp.InvalidParameterError, match="types="):
        treedp.profile(lists, epsilon=0.5)
    prof = treedp.profile(
        lists, epsilon=0.5, types={"a": "integer"}, rng=treedp.InsecureSeededSource(1)
    )
    assert list(prof) == ["a"]


@pytest.mark.parametrize("epsilon", [1.0, 0.1, 0.3, 2.5, 1e-3, 7.0, 0.123456789])
@pytest.mark.parametrize("k", [1, 2, 3, 7, 20, 99, 300])
def test_split_adds_to_epsilon_exactly(epsilon: float, k: int) -> None:
    shares = split_epsilon(epsilon, k)
    assert len(shares) == k and min(shares) > 0
    assert sum(Decimal(repr(s)) for s in shares) == Decimal(repr(epsilon))
    assert max(shares) - min(shares) <= 1e-9 * epsilon


def test_split_charged_exactly_twice_to_a_total() -> None:
    data = {f"c{i}": np.arange(300, dtype=np.int64) for i in range(7)}
    acct = treedp.Accountant(treedp.PureDP(0.6))
    for _ in range(2):
        treedp.profile(data, epsilon=0.3, accountant=acct, rng=treedp.InsecureSeededSource(1))
    assert acct.spent == treedp.PureDP(0.6)
    with pytest.raises(treedp.BudgetExceededError):
        treedp.profile(data, epsilon=0.3, accountant=acct)
    assert len(acct.history) == 2


def test_charge_after_every_read_and_before_any_noise() -> None:
    seen: list[int] = []
    source = CountingSource(1)

    class Watching(treedp.Accountant):
        def charge(self, record: Any) -> Any:
            seen.append(source.drawn)
            return super().charge(record)

    acct = Watching(treedp.PureDP(1.0))
    data = {"a": np.arange(500), "b": np.linspace(0, 1, 500), "c": np.arange(500) % 7}
    treedp.profile(data, epsilon=1.0, accountant=acct, rng=source)
    assert seen == [0] and source.drawn > 0


def test_a_failed_read_charges_nothing_and_draws_nothing() -> None:
    source = CountingSource(1)
    acct = treedp.Accountant(treedp.PureDP(1.0))
    bad = np.linspace(0, 1, 500)
    bad[3] = np.nan
    data = {"a": np.arange(500), "b": np.arange(500) * 2, "z": bad}
    with pytest.raises(treedp.DataError):
        treedp.profile(data, epsilon=1.0, accountant=acct, rng=source, nan="error")
    assert acct.history == () and source.drawn == 0


SECRET = 987654.321


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"columns": ["nope"]}, treedp.InvalidParameterError, "'columns'.*'nope'"),
        ({"columns": "a"}, treedp.InvalidTypeError, "'columns'"),
        ({"epsilon": -1.0}, treedp.InvalidParameterError, "'epsilon'"),
        ({"epsilon": float("nan")}, treedp.InvalidParameterError, "'epsilon'"),
        ({"epsilon": "1"}, treedp.InvalidTypeError, "'epsilon'"),
        ({"types": {"a": "text"}}, treedp.InvalidParameterError, "'types'"),
        ({"bounds": {"zz": (0, 1)}}, treedp.InvalidParameterError, "'bounds'"),
        ({"columns": ["t"], "bins": "integers"}, treedp.InvalidParameterError, "bins"),
        ({"timezone": "Mars/Olympus"}, treedp.InvalidParameterError, "timezone"),
        ({"bins": 0}, treedp.InvalidParameterError, "bins"),
        ({"columns": ["a"], "bins": 0}, treedp.InvalidParameterError, "bins"),
        ({"columns": ["a"], "bins": 2.5}, treedp.InvalidTypeError, "bins"),
        ({"columns": ["a"], "bins": True}, treedp.InvalidTypeError, "bins"),
        ({"nan": "keep"}, treedp.InvalidParameterError, "nan"),
    ],
)
def test_refusals_charge_nothing_and_name_no_value(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    acct = treedp.Accountant(treedp.PureDP(1.0))
    source = CountingSource(1)
    data = {
        "a": np.full(100, SECRET),
        "t": np.full(100, np.datetime64("2024-05-06T07:08:09")),
    }
    call: dict[str, Any] = {"epsilon": 1.0, "accountant": acct, "rng": source, **kwargs}
    with pytest.raises(error, match=match) as info:
        treedp.profile(data, **call)
    assert acct.history == () and source.drawn == 0
    message = str(info.value)
    assert "987654" not in message and "2024-05-06" not in message and "100" not in message


def test_budget_refusal_reads_nothing() -> None:
    acct = treedp.Accountant(treedp.PureDP(0.5))
    with pytest.raises(treedp.BudgetExceededError, match="profile"):
        treedp.profile({"a": np.arange(10)}, epsilon=1.0, accountant=acct)
    assert acct.history == ()


def test_the_failed_read_check_catches_an_eager_charge(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutant that charges at the first column's read (no meeting point) is caught by the check
    above: a later column's failed read leaves a charge behind."""
    from treedp.profiling import front

    class NoBarrier:
        def __init__(self, parties: int) -> None:
            pass

        def wait(self) -> None:
            pass

        def abort(self) -> None:
            pass

    monkeypatch.setattr(front.threading, "Barrier", NoBarrier)
    acct = treedp.Accountant(treedp.PureDP(1.0))
    bad = np.linspace(0, 1, 500)
    bad[3] = np.nan
    data = {"a": np.arange(500), "b": np.arange(500) * 2, "z": bad}
    with pytest.raises(treedp.DataError):
        treedp.profile(data, epsilon=1.0, accountant=acct, nan="error")
    assert len(acct.history) == 1  # the real gate leaves none (previous test)


@pytest.mark.parametrize("public", [False, True])
def test_a_wide_integer_column_gets_at_most_4096_bins_of_whole_integers(public: bool) -> None:
    """An int column over a range of more integers than ``max(bins, 4096)`` (found privately,
    or given) is released on at most that many equal-width bins whose edges are integers,
    covering the whole range (nothing cut); a narrower one keeps one bin per integer. A
    profile of int64 incomes released 368,292 bins; its intervals took 98 s and 11.8 GB."""
    rng = np.random.default_rng(TEST_SEED)
    wide = rng.integers(0, 10**9, N)
    data = {"wide": wide, "age": rng.integers(18, 90, N)}
    bounds = {"wide": (0, 10**9 - 1)} if public else None
    prof = treedp.profile(
        data, epsilon=2.0, bins=256, bounds=bounds, rng=treedp.InsecureSeededSource(1)
    )
    rel = prof["wide"]
    edges = rel.bins.edges
    width = edges[1] - edges[0]
    assert rel.bins.n_bins <= 4096 and not rel.bins.discrete and width > 1
    assert rel.bins.integers  # read as integers: cdf(x) counts <= floor(x), integer quantiles
    assert np.all(edges == np.round(edges)) and np.allclose(np.diff(edges), width)
    if public:
        assert edges[0] == 0 and edges[-1] >= 10**9
    else:
        step = rel.bounds_step
        assert step is not None and step["width"] == width
        assert edges[0] == step["lo"] and edges[-1] >= step["hi"] + 1
    median = float(rel.quantile(0.5))
    assert abs(median - np.median(wide)) < 0.05 * 10**9 and median.is_integer()
    assert prof["age"].bins.discrete  # 72 integers: one bin each
    rows = {(r["column"], r["statistic"]): r["estimate"] for r in prof.to_records()}
    for column in ("wide", "age"):  # the last integer the bins hold, either way
        assert rows[(column, "upper_bound")] == prof[column].bins.edges[-1] - 1
    as_floats = treedp.profile(
        {"wide": wide}, epsilon=2.0, bins=256, bounds={"wide": (0.0, 1e9 - 1)}
    )  # whole-number float bounds: the same cap (they gave one bin per integer)
    assert as_floats["wide"].bins.n_bins <= 4096 and not as_floats["wide"].bins.discrete
    many = treedp.profile(
        {"y": rng.integers(0, 3000, N)}, epsilon=2.0, bins=256, bounds={"y": (0, 2999)}
    )
    assert many["y"].bins.discrete  # 3,000 integers: one bin each, although bins=256
    low, high = rel.quantile_interval(0.5, simulations=200, rng=treedp.InsecureSeededSource(2))
    assert low <= median <= high
