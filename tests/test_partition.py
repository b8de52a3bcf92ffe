"""The ``Bins`` type's flags: ``integers`` bins (whole integers, one or many per bin)."""

from __future__ import annotations

import numpy as np
import pytest

from treedp.domain import Bins, integer_range_bins, make_bins
from treedp.exceptions import InvalidParameterError, InvalidTypeError


def test_integers_bins_need_integer_edges_within_exact_floats() -> None:
    assert Bins(np.array([0.0, 4.0, 8.0]), integers=True).integers
    assert make_bins(bounds=(0, 9), bins="integers").integers  # discrete implies it
    for edges in ([0.0, 0.5, 1.0], [0.0, 4.0, 2.0**53 + 2]):
        with pytest.raises(InvalidParameterError, match="integers=True needs edges"):
            Bins(np.array(edges), integers=True)
    dated = np.array(["2024-01-01", "2024-02-01"], dtype="datetime64[D]")
    with pytest.raises(InvalidParameterError, match="Datetime bins cannot be integers"):
        Bins(dated, datetime_unit="D", integers=True)
    with pytest.raises(InvalidTypeError, match="'integers'"):
        Bins(np.array([0.0, 4.0]), integers=1)  # type: ignore[arg-type]


def test_integers_bins_locate_a_point_at_its_ceiling() -> None:
    """The values below ``t`` are the integers below ``ceil(t)``: a point inside a bin of
    whole integers is located at its ceiling (continuous bins interpolate ``t`` itself)."""
    whole = Bins(np.array([0.0, 4.0, 8.0]), integers=True)
    plain = Bins(np.array([0.0, 4.0, 8.0]))
    t = np.array([-1.0, 0.0, 0.5, 1.0, 3.5, 4.0, 7.01, 8.0, 9.0])
    j, f = whole.locate_axis(t)
    assert (j + f).tolist() == [0, 0, 0.25, 0.25, 1, 1, 2, 2, 2]
    j, f = plain.locate_axis(t)
    assert (j + f).tolist() == pytest.approx([0, 0, 0.125, 0.25, 0.875, 1, 1.7525, 2, 2])


def test_integers_flag_survives_to_dict_only_when_wider_than_one() -> None:
    wide = Bins(np.array([0.0, 4.0, 8.0]), equal_width=True, integers=True)
    assert wide.to_dict()["integers"] is True
    again = Bins.from_dict(wide.to_dict())
    assert again.integers and again.equal_width and not again.discrete
    one = make_bins(bounds=(0, 3), bins="integers")
    assert "integers" not in one.to_dict()  # implied by discrete: files as before
    assert Bins.from_dict(one.to_dict()).integers


def test_integer_range_bins_one_per_integer_or_whole_integers() -> None:
    narrow, width = integer_range_bins(0, 99, 128)
    assert narrow.discrete and width == 1
    wide, width = integer_range_bins(0, 999, 128)
    assert (wide.n_bins, width, wide.integers, wide.discrete) == (125, 8, True, False)
    assert wide.equal_width and np.array_equal(wide.edges, np.arange(0, 1001, 8.0))
