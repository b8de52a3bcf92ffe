"""A release's privacy contract: its ``spend()`` is the record its accountant was charged."""

from __future__ import annotations

import numpy as np
import pytest

import treedp


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"bounds": "private"},
        {"privacy_unit": treedp.PrivacyUnit("pid", max_contributions=3)},
        {"privacy_unit": treedp.PrivacyUnit("pid", max_contributions="auto")},
    ],
    ids=["plain", "private bounds", "person", "person auto"],
)
def test_spend_is_what_the_accountant_was_charged(extra: dict[str, object]) -> None:
    """``Release.spend()`` carries the whole cost and unit the accountant was charged; the
    mechanism's own record is the noise's per record (the README called that one "the record
    an accountant composes": a per-person release logged 0.18 of ε = 1, per record; a new
    user's run)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.lognormal(3, 1, 2000), "pid": np.arange(2000) % 300})
    acc = treedp.Accountant(treedp.PureDP(5.0))
    kwargs: dict[str, object] = {"bounds": (0, 500), "bins": 64, **extra}
    rel = treedp.release_cdf(
        frame, column="x", epsilon=1.0, accountant=acc, rng=treedp.InsecureSeededSource(1), **kwargs
    )
    charged = acc.history[-1].record
    spend = rel.spend()
    assert spend.measure == rel.total_guarantee
    assert spend.measure.epsilon == pytest.approx(charged.measure.epsilon)  # type: ignore[union-attr]
    assert spend.unit == charged.unit and spend.neighbours == charged.neighbours
    assert spend.mechanism == charged.mechanism
    if not extra:
        assert spend == rel.mechanism.spend()
    else:
        assert rel.mechanism.spend().measure.epsilon < 0.95  # type: ignore[union-attr]
