"""The low-signal rule, one place below the report: a grouped release's ``table`` /
``to_frame`` carry each key's released ``n̂`` and the flag the HTML report shows, decided by
the same function (a public key with no records got a confident-looking median before)."""

from __future__ import annotations

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
