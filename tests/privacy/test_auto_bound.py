"""max_contributions="auto": the private choice of the rows kept per person.

Privacy: the choice reads the data only through a histogram of persons by their row count
(sensitivity 1 under add/remove, 2 under replace, checked by brute force over every small
table, with a mutant the check catches); the release states the sum of the choice's ε and the
trees'; public checks come before any charge; what it refuses is refused before reading.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.privacy.auto_bound_tables import zipf_persons
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import InsecureSeededSource
from treedp.privacy.auto_bound import (
    AutoBound,
    bucket_counts,
    candidates,
    choose_bound,
    objective,
)


def _max_change(grid: np.ndarray, neighbours: str, counts_fn=bucket_counts) -> int:
    """The largest L1 change of the bucket counts over all neighbouring tables of <= 3
    persons with 1..12 rows each (add/remove one person, or replace one person's rows)."""
    worst = 0
    sizes = range(1, 13)
    for k in range(4):
        for table in itertools.product(sizes, repeat=k):
            base = counts_fn(np.array(table, dtype=np.int64), grid)
            if neighbours == "add_remove":
                for extra in sizes:
                    other = counts_fn(np.array([*table, extra], dtype=np.int64), grid)
                    worst = max(worst, int(np.abs(other - base).sum()))
            elif k:
                for i, new in itertools.product(range(k), sizes):
                    changed = list(table)
                    changed[i] = new
                    other = counts_fn(np.array(changed, dtype=np.int64), grid)
                    worst = max(worst, int(np.abs(other - base).sum()))
    return worst


@pytest.mark.parametrize(("neighbours", "claimed"), [("add_remove", 1), ("replace", 2)])
def test_sensitivity_is_exact_by_brute_force(neighbours: str, claimed: int) -> None:
    grid = candidates(16)
    assert _max_change(grid, neighbours) == claimed


def test_brute_force_catches_a_mutant_that_counts_rows_not_persons() -> None:
    """A variant histogram weighting each person by their rows would have sensitivity up to
    the row count: the same check sees it exceed the claim."""

    def by_rows(r: np.ndarray, grid: np.ndarray) -> np.ndarray:
        bucket = np.maximum(np.searchsorted(grid, r, side="right") - 1, 0)
        return np.bincount(bucket, weights=r, minlength=grid.size).astype(np.int64)

    assert _max_change(candidates(16), "add_remove", by_rows) > 1


def test_spent_epsilon_is_at_most_the_share() -> None:
    r = np.random.default_rng(0).integers(1, 500, 300)
    for nb, eps in (("add_remove", 0.1), ("replace", 0.05), ("add_remove", 0.3333)):
        bound, spent = choose_bound(r, AutoBound(), 50.0, eps, nb, InsecureSeededSource(1))
        assert spent <= Fraction(eps) and spent > Fraction(eps) * Fraction(999_999, 10**6)
        assert bound in candidates(AutoBound().cap)


def test_objective_prefers_small_bounds_without_heterogeneity() -> None:
    grid = candidates(1024)
    hist = bucket_counts(np.full(100, 200), grid).astype(float)
    j = objective(hist, grid, noise_unit=10.0, h=0.0)
    assert grid[int(np.argmin(j))] == 1
    j = objective(hist, grid, noise_unit=1e-6, h=1.0)
    assert grid[int(np.argmin(j))] >= 181  # keeps (nearly) every row when noise is free


def _frame() -> pd.DataFrame:
    return zipf_persons(400, cap=300, keys="abc")


def test_grouped_release_states_the_sum_and_round_trips(tmp_path) -> None:
    ledger = treedp.Accountant(treedp.PureDP(1.0))
    gr = treedp.release_grouped(
        _frame(),
        column="x",
        by="k",
        keys=list("abc"),
        privacy_unit="pid",
        max_contributions="auto",
        bounds=(0, 31),
        bins="integers",
        epsilon=1.0,
        accountant=ledger,
        rng=InsecureSeededSource(4),
    )
    choice = gr.bound_choice
    assert choice is not None and 0 < choice["epsilon_spent"] <= 0.1
    m = gr.bounds.max_contributions
    tree = gr[gr.keys[0]].mechanism.epsilon_spent()
    assert Fraction(gr.guarantee.epsilon) >= m * tree + Fraction(choice["epsilon_spent"])
    assert gr.guarantee.epsilon <= 1.0
    assert len(ledger.history) == 1  # charged once
    gr.save(tmp_path / "g.tdp")
    again = treedp.load_grouped_release(tmp_path / "g.tdp")
    assert again.bound_choice == choice and again.guarantee == gr.guarantee


def test_per_person_release_states_the_sum_and_round_trips(tmp_path) -> None:
    rel = treedp.release_cdf(
        _frame(),
        column="x",
        privacy_unit=treedp.PrivacyUnit("pid", max_contributions="auto"),
        bounds=(0, 31),
        bins="integers",
        epsilon=1.0,
        rng=InsecureSeededSource(5),
    )
    assert rel.unit is not None and 0 < rel.unit.bound_epsilon <= 0.1
    assert rel.guarantee.epsilon <= 1.0
    rel.save(tmp_path / "r.json")
    assert treedp.load_release(tmp_path / "r.json").guarantee == rel.guarantee


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"epsilon": 1.0, "max_contributions_per_group": 2}, InvalidParameterError),
        ({"epsilon": 1.0, "max_groups": 2}, InvalidParameterError),
        ({"epsilon": 1.0, "keys": None, "delta": 1e-6}, InvalidParameterError),
        ({"epsilon": 1.0, "max_contributions": "often"}, InvalidParameterError),
    ],
)
def test_refused_before_anything_is_charged(kwargs: dict, error: type) -> None:
    ledger = treedp.Accountant(treedp.PureDP(1.0))
    args = {"keys": list("abc"), "max_contributions": "auto", **kwargs}
    with pytest.raises(error):
        treedp.release_grouped(
            _frame(),
            column="x",
            by="k",
            privacy_unit="pid",
            bounds=(0, 31),
            bins="integers",
            accountant=ledger,
            **args,
        )
    assert len(ledger.history) == 0


def test_duckdb_is_refused_before_reading() -> None:
    """A database bounds persons by window functions in the query that counts: "auto" would
    need a second query over the source (docs/grouped.md)."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("t", _frame())
    _refused_before_reading(con.sql("SELECT * FROM t"), "give duckdb data a fixed bound")


def test_dask_is_refused_before_reading() -> None:
    """Dask bounds persons in one pass after its shuffle, with the bound known: "auto" would
    need a second pass over the shuffled data (docs/grouped.md)."""
    dd = pytest.importorskip("dask.dataframe")
    _refused_before_reading(dd.from_pandas(_frame(), npartitions=2), "dask")


def _refused_before_reading(data: object, match: str) -> None:
    """``max_contributions="auto"`` on ``data`` is refused, naming the engine, with nothing
    charged."""
    ledger = treedp.Accountant(treedp.PureDP(1.0))
    with pytest.raises(InvalidParameterError, match=match):
        treedp.release_grouped(
            data,
            column="x",
            by="k",
            keys=list("abc"),
            privacy_unit="pid",
            max_contributions="auto",
            bounds=(0, 31),
            bins="integers",
            epsilon=1.0,
            accountant=ledger,
        )
    assert len(ledger.history) == 0


@pytest.mark.parametrize(
    "bad",
    [{"share": 0}, {"share": 1.5}, {"cap": 0}, {"cap": 2.5}, {"heterogeneity": 2}],
)
def test_auto_bound_settings_are_checked(bad: dict) -> None:
    with pytest.raises((InvalidParameterError, InvalidTypeError)):
        AutoBound(**bad)


def test_few_persons_do_not_pull_the_bound_to_the_cap() -> None:
    """Privacy review F7: noise in the many empty high buckets (weighted by their row counts)
    chose bounds in the thousands for 40 persons of 3 rows; thresholded, it chooses small."""
    chosen = [
        choose_bound(np.full(40, 3), AutoBound(), 10.0, 0.1, "add_remove", InsecureSeededSource(s))[
            0
        ]
        for s in range(20)
    ]
    assert sum(m <= 4 for m in chosen) >= 18


def test_a_small_budget_is_released_not_refused_after_the_charge() -> None:
    """Privacy review F7: at eps=0.01 a large bound made the trees' budget invalid after the
    charge; the candidates are now only bounds the trees can take."""
    ledger = treedp.Accountant(treedp.PureDP(1.0))
    gr = treedp.release_grouped(
        _frame(),
        column="x",
        by="k",
        keys=list("abc"),
        privacy_unit="pid",
        max_contributions=treedp.AutoBound(cap=2**24),
        bounds=(0, 31),
        bins="integers",
        epsilon=1e-5,
        accountant=ledger,
        rng=InsecureSeededSource(6),
    )
    assert gr.bounds.max_contributions * 1e-6 <= 0.9e-5
    assert len(ledger.history) == 1
