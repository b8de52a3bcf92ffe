"""The low-signal rule, one place below the report: a grouped release's ``table`` /
``to_frame`` carry each key's released ``n̂`` and the flag the HTML report shows, decided by
the same function (a public key with no records got a confident-looking median before)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp.release import signal
from treedp.report import grouped as report_grouped


def _release() -> treedp.GroupedRelease:
    rng = np.random.default_rng(TEST_SEED)
    n = 4000
    data = {
        "age": rng.integers(18, 90, n),
        "state": rng.choice(["CA", "NY"], n),
        "pid": np.arange(n) % 1000,
    }
    return treedp.release_grouped(
        data, column="age", by="state", keys=["CA", "NY", "RR"], privacy_unit="pid",
        max_contributions=5, bins="integers", bounds=(0, 120), epsilon=0.5,
        rng=treedp.InsecureSeededSource(TEST_SEED),
    )  # fmt: skip


def test_frame_carries_n_hat_and_the_reports_flag() -> None:
    pd = pytest.importorskip("pandas")
    gr = _release()
    frame = gr.to_frame([0.25, 0.5])
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["state", "q", "value", "n_hat", "low_signal"]
    flags = gr.low_signal()
    for key in gr.keys:
        rows = frame[frame["state"] == key]
        assert rows["n_hat"].tolist() == [gr[key].n] * 2
        assert rows["low_signal"].tolist() == [signal.low_signal(gr[key])] * 2 == [flags[key]] * 2
    # RR has no records: its released n̂ is noise around 0 and it is flagged; CA and NY not
    assert flags == {"CA": False, "NY": False, "RR": True}


def test_the_report_uses_the_release_rule() -> None:
    """One rule, one place: the report's names are the release module's functions (the
    dependency points release -> report)."""
    assert report_grouped.low_signal is signal.low_signal
    assert report_grouped.median_stderr is signal.median_stderr
    assert report_grouped.FLAG_SHARE == signal.FLAG_SHARE


def _clamped(n: int = 4000, seed: int = 0) -> dict[str, np.ndarray]:
    """Lognormal values whose public upper bound 200 holds about 60% of them."""
    rng = np.random.default_rng(seed)
    return {
        "v": rng.lognormal(5, 1, n),
        "g": rng.choice(["a", "b"], n),
        "p": rng.integers(0, n // 4, n),
    }


def test_a_grouped_release_warns_once_for_its_clamped_keys() -> None:
    """Every key's end bin holding much released mass, in one warning naming how many keys
    and the advice such a release can take (it warned of nothing: a new user's run, 0 of 50
    90th-percentile intervals covering); an empty public key (noise) does not count."""
    from treedp.value_methods.bounds_warnings import PUBLIC_ONLY_WIDEN

    data = _clamped()
    common = dict(column="v", by="g", bins=32, epsilon=1.0, rng=treedp.InsecureSeededSource(3))
    with pytest.warns(treedp.BoundsWarning) as caught:
        gr = treedp.release_grouped(data, keys=["a", "b", "empty"], bounds=(0, 200), **common)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith("2 of 3 groups warn; group 'a': The last bin holds")
    assert PUBLIC_ONLY_WIDEN in text and "bounds='private'" not in text
    assert gr.bounds_warning() == text and gr["a"].bounds_warning() is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error", treedp.BoundsWarning)
        wide = treedp.release_grouped(data, keys=["a", "b"], bounds=(0, 1e5),
                                      **{**common, "bins": 4096})  # fmt: skip
    assert wide.bounds_warning() is None


def test_a_per_person_release_advises_public_bounds_only() -> None:
    from treedp.value_methods.bounds_warnings import PUBLIC_ONLY_WIDEN

    unit = treedp.PrivacyUnit("p", max_contributions=40)
    with pytest.warns(treedp.BoundsWarning, match="private bounds are not available"):
        rel = treedp.release_cdf(_clamped(), column="v", bounds=(0, 200), bins=32, epsilon=1.0,
                                 privacy_unit=unit, rng=treedp.InsecureSeededSource(3))  # fmt: skip
    warning = rel.bounds_warning()
    assert warning is not None and PUBLIC_ONLY_WIDEN in warning
