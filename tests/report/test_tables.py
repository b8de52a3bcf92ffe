"""report/tables.bounds_warning: what the released counts show (much mass in an end bin) and
its readings, for /tmp/newuser/repro_1.py's two cases where nothing was clamped."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp.datasets import load_adult
from treedp.report.tables import end_mass_text

READINGS = ("clamped into it", "a point mass", "bounds much wider than the data")


def _said(call: object) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert callable(call)
        call()
    (warning,) = [w for w in caught if issubclass(w.category, treedp.BoundsWarning)]
    assert warning.filename == __file__  # the user's line
    return str(warning.message)


def _only_released_shares(text: str) -> None:
    """The only numbers are the released shares (percent): no data value, count or bound."""
    assert all(n.endswith("%") for n in re.findall(r"\d[\d.,]*%?", text)), text


def test_loose_bounds_nothing_clamped() -> None:
    """(a) all values inside (0, 1e6), most in the first bins: not 'too narrow'."""
    inc = np.minimum(np.random.default_rng(TEST_SEED).lognormal(10.5, 0.8, 50_000), 9e5)
    text = _said(
        lambda: treedp.release_cdf(
            inc, bounds=(0, 1e6), bins=64, epsilon=1.0, rng=treedp.InsecureSeededSource(1)
        )
    )
    assert text.startswith("The first bin holds") and "cannot tell why" in text
    assert all(r in text for r in READINGS) and "look too narrow" not in text
    assert "narrow them, or use more bins" in text
    _only_released_shares(text)


def test_point_mass_at_the_true_lower_bound() -> None:
    """(b) Adult capital_gain, 92% zeros, lower bound 0: a point mass, not clamping."""
    x = load_adult()["capital_gain"]
    rel = treedp.release_cdf(
        x, bounds=(0, 100_000), bins=1024, epsilon=1.0, rng=treedp.InsecureSeededSource(1)
    )
    text = rel.bounds_warning()
    assert text is not None and "the lower bound itself" in text and "bins='integers'" in text
    _only_released_shares(text)
    ints = treedp.release_cdf(
        x, bounds=(0, 100_000), bins="integers", epsilon=1.0, rng=treedp.InsecureSeededSource(1)
    )
    said = ints.bounds_warning()  # one bin per integer already: no bins='integers' advice
    assert said is not None and "a point mass" in said and "bins='integers'" not in said


def test_private_bounds_are_not_advised_to_a_release_that_used_them() -> None:
    """Adult capital_gain (92% zeros) with bounds='private' on integer bins: the first bin
    (0) holds the zeros; the advice is public bounds, not bounds='private' again."""
    x = load_adult()["capital_gain"]
    rel = treedp.release_cdf(
        x, bounds="private", bins="integers", epsilon=1.0, rng=treedp.InsecureSeededSource(2)
    )
    text = rel.bounds_warning()
    assert text is not None and "The first bin holds" in text
    assert "bounds='private'" not in text and "give public bounds that hold them" in text
    public = end_mass_text([("first", "lower", "below", 0.9)])
    assert "or use bounds='private'" in public


def test_both_ends_and_profile_attribution() -> None:
    text = end_mass_text([("first", "lower", "below", 0.3), ("last", "upper", "above", 0.2)])
    assert text.startswith("The first bin holds 30% and the last bin 20% of the released mass")
    assert "records beyond a bound clamped" in text and "a bound itself" in text
    x = load_adult()["capital_gain"]
    said = _said(lambda: treedp.profile({"capital_gain": x}, epsilon=1.0))  # ran on a thread
    assert said.startswith("Column 'capital_gain': The first bin holds")


@pytest.mark.parametrize("wrapped", [False, True])
def test_profile_of_a_frame_names_each_column_once(wrapped: bool) -> None:
    pd = pytest.importorskip("pandas")
    x = load_adult()["capital_gain"]
    table = pd.DataFrame({"capital_gain": x}) if wrapped else {"capital_gain": x}
    said = _said(lambda: treedp.profile(table, epsilon=1.0))
    assert said.count("Column 'capital_gain'") == 1
