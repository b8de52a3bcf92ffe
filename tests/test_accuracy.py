"""treedp.predict_error with contribution bounds: the error of each key's tree, before any
data is read, equal to the exact error of the release it predicts."""

from __future__ import annotations

import numpy as np
import pytest

import treedp
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import InsecureSeededSource


def _table(n: int = 4000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "x": rng.integers(0, 64, n),
        "pid": rng.integers(0, 600, n).astype(str),
        "k": rng.choice(np.array(["a", "b", "c"]), n),
    }


@pytest.mark.parametrize(
    "budget",
    [{"epsilon": 1.0}, {"privacy": treedp.ZCDP(0.5)}],
    ids=["laplace", "gaussian"],
)
def test_prediction_is_the_grouped_release_s_exact_error(budget: dict) -> None:
    unit = treedp.PrivacyUnit("pid", max_groups=2, max_contributions_per_group=5)
    keys = ["a", "b", "c"]
    pred = treedp.predict_error(64, privacy_unit=unit, keys=keys, **budget)
    gr = treedp.release_grouped(
        _table(),
        column="x",
        by="k",
        keys=keys,
        privacy_unit="pid",
        max_groups=2,
        max_contributions_per_group=5,
        bounds=(0, 63),
        bins="integers",
        rng=InsecureSeededSource(1),
        **budget,
    )
    for key in keys:
        rel = gr[key]
        got = [rel.stderr("cdf", v) ** 2 for v in (0, 20, 40, 62)]
        np.testing.assert_allclose(got, pred.prefix_variance[[1, 21, 41, 63]], rtol=1e-9)
    assert pred.unit == "person:pid"
    assert pred.tree_budget == pytest.approx(sum(pred.level_budgets))


def test_per_person_release_without_groups_matches() -> None:
    unit = treedp.PrivacyUnit("pid", max_contributions=4)
    pred = treedp.predict_error(64, epsilon=1.0, privacy_unit=unit)
    rel = treedp.release_cdf(
        _table(),
        column="x",
        privacy_unit=unit,
        bounds=(0, 63),
        bins="integers",
        epsilon=1.0,
        rng=InsecureSeededSource(2),
    )
    assert rel.stderr("cdf", 31) ** 2 == pytest.approx(pred.prefix_variance[32], rel=1e-9)
    assert pred.sensitivity == 4


def test_error_scales_exactly_with_the_bound() -> None:
    """Laplace noise: each tree runs at eps/m, so the RMSE is m times the record-level one
    (up to the rounding of eps/m down), and replace doubles the sensitivity."""
    base = treedp.predict_error(1024, epsilon=1.0)
    for m in (1, 5, 50):
        unit = treedp.PrivacyUnit("pid", max_contributions=m)
        pred = treedp.predict_error(1024, epsilon=1.0, privacy_unit=unit)
        assert pred.rmse == pytest.approx(m * base.rmse, rel=1e-6)
        assert pred.sensitivity == m
    rep = treedp.predict_error(
        1024,
        epsilon=1.0,
        neighbours="replace",
        privacy_unit=treedp.PrivacyUnit("p", max_contributions=5),
    )
    assert rep.sensitivity == 10


def test_quantile_scale_per_key() -> None:
    unit = treedp.PrivacyUnit("pid", max_contributions=50)
    pred = treedp.predict_error(1024, epsilon=1.0, privacy_unit=unit, keys={"AA": 30000, "UA": 500})
    per = pred.per_key()
    assert per["AA"]["cdf_rmse"] == per["UA"]["cdf_rmse"] == pred.rmse
    assert per["AA"]["quantile_error"] == pytest.approx(pred.rmse / 30000)
    assert per["UA"]["quantile_error"] == pytest.approx(pred.rmse / 500)
    assert (
        treedp.predict_error(64, epsilon=1.0, keys=["a"]).per_key()["a"]["quantile_error"] is None
    )


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"privacy_unit": "pid"}, InvalidTypeError),
        ({"privacy_unit": treedp.PrivacyUnit("pid")}, InvalidParameterError),
        (
            {"privacy_unit": treedp.PrivacyUnit("p", max_groups=2, max_contributions_per_group=3)},
            InvalidParameterError,  # group bounds need keys
        ),
        ({"keys": {"a": 0}}, InvalidParameterError),
        ({"keys": "abc"}, InvalidTypeError),
    ],
)
def test_bad_input(kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        treedp.predict_error(64, epsilon=1.0, **kwargs)


@pytest.mark.parametrize(
    "unit",
    [
        treedp.PrivacyUnit("p", max_contributions="auto"),
        treedp.PrivacyUnit("p", max_contributions=treedp.AutoBound(share=0.2)),
        treedp.PrivacyUnit("p", max_groups=2, max_contributions_per_group="auto"),
    ],
)
def test_an_auto_bound_is_refused_saying_why(unit: treedp.PrivacyUnit) -> None:
    """'auto' chooses the bound from the data: no figure exists before they are read."""
    with pytest.raises(InvalidParameterError, match="no error can be predicted before the data"):
        treedp.predict_error(64, epsilon=1.0, privacy_unit=unit, keys=["a"])


def test_quantile_error_refuses_bad_sizes() -> None:
    pred = treedp.predict_error(64, epsilon=1.0)
    with pytest.raises(InvalidParameterError):
        pred.quantile_error(0)
    with pytest.raises(InvalidTypeError):
        pred.quantile_error("10")  # type: ignore[arg-type]


def test_prediction_frames_hold_every_prefix_variance() -> None:
    """``to_frame`` and ``to_polars``: one row per prefix ``m = 0..B``, the same columns."""
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    prediction = treedp.predict_error(16, epsilon=1.0, mechanism="tree")
    frame, polars_frame = prediction.to_frame(), prediction.to_polars()
    assert isinstance(frame, pd.DataFrame) and isinstance(polars_frame, pl.DataFrame)
    assert list(frame.columns) == polars_frame.columns == ["prefix", "variance"]
    assert frame["prefix"].tolist() == list(range(17))
    np.testing.assert_array_equal(frame["variance"].to_numpy(), prediction.prefix_variance)
    np.testing.assert_array_equal(polars_frame["variance"].to_numpy(), prediction.prefix_variance)
    assert frame["variance"].iloc[0] == 0.0  # the empty prefix is exact
    assert frame["variance"].max() == prediction.max_cdf_variance
