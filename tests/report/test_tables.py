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
    assert "find them from the records with bounds='private'" in public  # release_counts has none
    assert "bins='integers' reads every integer" in public
    for discrete, integers in ((True, True), (False, True)):  # integers given already
        given = end_mass_text([("first", "lower", "below", 0.9)], discrete, integers=integers)
        assert "bins='integers'" not in given
        assert ("answered at the bound" in given) == (not discrete)


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


def test_a_quantile_in_an_end_bin_of_found_bounds_near_that_end_warns() -> None:
    """A release on privately found bounds: a level within two of the scans' allowances of
    records of an end, answered in that end bin, warns that the records clamped into it may
    hold the quantile (a new user's run: Adult capital_gain at ε = 0.25 found ``[0, 9741]``
    and answered q = 0.99 at 9741, true 15,024, with only the first bin's warning). An inner
    level, a tail answered inside the bounds and public bounds do not warn."""
    from treedp.value_methods.bounds_warnings import in_found_end_bins

    gain = np.asarray(load_adult()["capital_gain"], dtype=np.int64)

    def release(seed: int, bounds: object = "private") -> treedp.Release:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", treedp.BoundsWarning)  # the first bin's 92%
            return treedp.release_cdf(gain, bounds=bounds, bins="integers", epsilon=0.25,
                                      rng=treedp.InsecureSeededSource(seed))  # fmt: skip

    clamped = release(3)
    assert clamped.bins.edges[-1] < 15_024
    text = _said(lambda: clamped.quantile([0.5, 0.99]))
    assert "answered at a privately found bound" in text
    assert f"about {clamped.bounds_step['allowance']:.0f} records" in text  # public: the plan
    with warnings.catch_warnings():
        warnings.simplefilter("error", treedp.BoundsWarning)
        clamped.quantile([0.25, 0.5])  # the block of zeros, far from the lower end
        inside = release(0)
        assert inside.bins.edges[-1] > 15_024
        inside.quantile([0.5, 0.99])  # 15,0xx: inside the bounds, not in the end bin
        release(3, (0, 10**5)).quantile([0.99])  # public bounds: nothing found, no allowance
    # The rule alone: released answers, levels, edges, allowance and count only.
    edges = np.arange(0.0, 11.0)
    assert in_found_end_bins([9.5], [0.99], edges, 100.0, 10_000.0)
    assert not in_found_end_bins([9.5], [0.9], edges, 100.0, 10_000.0)  # 1,000 above
    assert in_found_end_bins([0.2], [0.01], edges, 100.0, 10_000.0)
    assert not in_found_end_bins([5.0], [0.99], edges, 100.0, 10_000.0)  # an inner bin
