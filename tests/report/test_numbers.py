"""How the pages write numbers: no "0.00%" for a share that rounds to zero, "off" for a level
that is not released, round points for the CDF table, the column's name on the axes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import treedp
from treedp.report.numbers import axis_name, level_texts, nice_points, percent


@pytest.mark.parametrize(
    ("share", "text"),
    [
        (0.0128, "1.28%"),
        (3e-5, "< 0.01%"),
        (1e-12, "< 0.01%"),
        (0.0, "0.00%"),
        (5e-5, "0.01%"),
        (math.nan, "—"),
        (math.inf, "—"),
    ],
)
def test_percent(share: float, text: str) -> None:
    assert percent(share) == text


def test_level_texts_say_off() -> None:
    assert level_texts([math.inf, 2041.39, 1444.9], [0.0, 0.03, 0.04]) == "off, 2041, 1445"
    assert level_texts([0.0, 0.5], [0.0, 0.5], "g") == "off, 0.5"
    assert level_texts([math.inf, 2.0], [1.0]) == "off, 2"  # no budget per value


@pytest.mark.parametrize(
    ("values", "points"),
    [
        (np.arange(-60, 301), [-50, 0, 50, 100, 150, 200, 250, 300]),
        (np.arange(17, 91), [20, 30, 40, 50, 60, 70, 80, 90]),
        (np.linspace(0, 100, 41), [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]),
        (np.linspace(0, 1, 65), [0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0][::2]),
    ],
)
def test_nice_points(values: np.ndarray, points: list[float]) -> None:
    v = np.asarray(values, dtype=np.float64)
    assert v[nice_points(v)].tolist() == pytest.approx(points)


def test_nice_points_give_up_on_odd_edges() -> None:
    odd = np.array([0.37, 1.91, 2.73, 5.11, 9.87])  # no round number among them
    assert nice_points(odd).size == 0
    assert nice_points(np.array([1.0, 2.0])).size == 0


def test_axis_name() -> None:
    rel = treedp.release_counts([3, 5, 2], epsilon=1.0, rng=treedp.InsecureSeededSource(1))
    assert axis_name(rel, "income") == "income"
    assert axis_name(rel, None) == "value"
    x = np.array(["2024-01-01", "2024-03-01"], dtype="datetime64[D]")
    dated = treedp.release_cdf(
        x, epsilon=1.0, bounds=(x[0], x[1]), bins=8, rng=treedp.InsecureSeededSource(1)
    )
    assert axis_name(dated, None) == "date"
