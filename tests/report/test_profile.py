"""The HTML page of a profiled table: one section per column, the budget stated once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED

pytest.importorskip("matplotlib")


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")
def test_one_section_per_column(tmp_path: Path) -> None:
    rng = np.random.default_rng(TEST_SEED)
    data = {"age": rng.integers(18, 90, 3000), "pay <&>": rng.lognormal(10, 1, 3000)}
    prof = treedp.profile(data, epsilon=1.0, rng=treedp.InsecureSeededSource(1))
    out = tmp_path / "p.html"
    prof.write_report(out, rng=treedp.InsecureSeededSource(2))
    page = out.read_text(encoding="utf-8")
    assert page.count('<section id="col') == 2
    assert "Column age" in page and "Column pay &lt;&amp;&gt;" in page
    assert "epsilon = 1 in total" in page and "SEEDED" in page
    assert page.count("<svg") == 4  # a CDF and a histogram per column
    assert "<script" not in page
    # axes named after the column; a column's share is labelled as a part of the profile's
    # guarantee; clipping is stated
    svgs = page.split("<svg")[1:]
    assert all(">age<" in svg for svg in svgs[:2])
    assert page.count("This column&#x27;s share: a part of the profile&#x27;s guarantee") == 2
    assert "a part of the profile&#x27;s guarantee above, not a guarantee of its own" in page
    assert "Clipping is post-processing" in page
    summary = tmp_path / "s.csv"
    prof.write_summary(summary, rng=treedp.InsecureSeededSource(2))
    assert summary.read_text().startswith("column,kind,epsilon,statistic,estimate,low,high\n")
