"""A table profile as frames (pandas and polars, the same columns) and in a notebook."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import polars as pl
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp.profiling.result import HTML_COLUMNS, SUMMARY_COLUMNS

pytestmark = pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # small n, small epsilon
N = 2000


class NoDraws:
    """A source that fails on any draw: the refusal must come before the simulations."""

    seeded = True

    def random_bytes(self, n: int) -> bytes:
        raise AssertionError("a draw was made before the missing package was noticed")

    def describe(self) -> dict[str, object]:
        return {"source": "no draws", "seeded": True}


@pytest.fixture(scope="module")
def prof() -> treedp.TableProfile:
    rng = np.random.default_rng(TEST_SEED)
    table = pd.DataFrame(
        {
            "age": rng.integers(18, 90, N),
            "income": rng.lognormal(10, 1, N),
            "when": pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, N), "D"),
        }
    )
    bounds = {"when": (pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01"))}
    return treedp.profile(
        table, epsilon=1.0, bounds=bounds, rng=treedp.InsecureSeededSource(TEST_SEED)
    )


def test_pandas_and_polars_summaries_agree(prof: treedp.TableProfile) -> None:
    frame = prof.to_frame(rng=treedp.InsecureSeededSource(1))
    polars_frame = prof.to_polars(rng=treedp.InsecureSeededSource(1))
    assert isinstance(polars_frame, pl.DataFrame)
    assert list(frame.columns) == list(SUMMARY_COLUMNS) == polars_frame.columns
    assert frame.shape == polars_frame.shape == (len(prof) * 6, 7)
    assert polars_frame["statistic"].to_list() == frame["statistic"].tolist()
    # a datetime column beside numeric ones: the mixed columns are text, as in the CSV
    assert "when" in prof and polars_frame["estimate"].dtype == pl.String
    assert polars_frame["estimate"].to_list() == [
        None if v is None else str(v) for v in frame["estimate"]
    ]


def test_numeric_only_summary_stays_numeric(prof: treedp.TableProfile) -> None:
    numeric = treedp.TableProfile(
        releases={k: prof[k] for k in ("age", "income")},
        kinds={k: prof.kinds[k] for k in ("age", "income")},
        epsilon=prof.shares["age"] + prof.shares["income"],
        shares={k: prof.shares[k] for k in ("age", "income")},
    )
    polars_frame = numeric.to_polars(quantiles=[0.5], rng=treedp.InsecureSeededSource(1))
    assert polars_frame["estimate"].dtype == pl.Float64 and polars_frame.shape == (8, 7)


def test_notebook_display_is_short(prof: treedp.TableProfile) -> None:
    html = prof._repr_html_()
    assert "TableProfile" in html and "pure 1-DP" in html
    assert all(f"<td>{name}</td>" in html for name in prof)
    assert html.count("<tr>") == len(prof) + 1 and len(html) < 3000
    assert HTML_COLUMNS >= 10


def test_without_polars_the_error_names_the_extra(
    prof: treedp.TableProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = NoDraws()
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(treedp.MissingDependencyError, match=r"treedp\[polars\]"):
        prof.to_polars(rng=source)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(treedp.MissingDependencyError, match=r"treedp\[pandas\]"):
        prof.to_frame(rng=source)
    # refused before the intervals' simulations: NoDraws fails the test on any draw
