"""The page of a whole grouped release: the guarantee once for the privacy unit, the CDFs of
all keys, quartiles and expected error per key, keys with too little signal flagged."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp.cli import main

pytest.importorskip("matplotlib", reason="the treedp[plot] extra (matplotlib) is not installed")

from tests.report.test_html import Page
from treedp.release.signal import FLAG_SHARE, low_signal, median_stderr
from treedp.report.grouped import grouped_guarantee_rows, render_grouped_report

CARRIERS = ("AA", "UA", "DL", "B6", "OO")


def _seed(k: int = 0) -> treedp.InsecureSeededSource:
    return treedp.InsecureSeededSource(TEST_SEED + k)


def flights(n: int = 12000) -> dict[str, np.ndarray]:
    """A flights-like table: delays per carrier, several rows per plane; OO has few rows."""
    rng = np.random.default_rng(TEST_SEED)
    carrier = rng.choice(CARRIERS, n, p=[0.35, 0.3, 0.25, 0.098, 0.002])
    delay = np.round(rng.gamma(2.0, 15.0, n) - 20.0)
    return {"carrier": carrier, "dep_delay": delay, "tailnum": rng.integers(0, 2000, n).astype(str)}


@pytest.fixture(scope="module")
def grouped() -> treedp.GroupedRelease:
    return treedp.release_grouped(
        flights(),
        column="dep_delay",
        by="carrier",
        keys=list(CARRIERS),
        privacy_unit="tailnum",
        max_contributions=10,
        epsilon=1.0,
        bounds=(-60, 300),
        bins="integers",
        rng=_seed(),
    )


@pytest.fixture(scope="module")
def page(grouped: treedp.GroupedRelease) -> str:
    return render_grouped_report(grouped, column="dep_delay", rng=_seed(1))


def test_one_page_for_every_key(page: str, grouped: treedp.GroupedRelease) -> None:
    parsed = Page(page)
    assert {"released", "guarantee", "plots", "quantiles", "expected-error", "reading"} <= (
        parsed.ids()
    )
    text = parsed.content
    # the guarantee once, for the privacy unit, with its contribution bounds
    assert text.count("pure 1-DP for the whole release") == 1
    assert "one person (column 'tailnum')" in text and "max_contributions = 10" in text
    # a per-tree budget never stands alone: it is called a part of the guarantee
    per = grouped[CARRIERS[0]].guarantee.describe()
    assert f"{per} per record" in text and "parts of the guarantee above" in text
    assert "SEEDED" in text
    assert len(parsed.all("figure")) == 1 and len(parsed.all("svg")) == 1
    assert "dep_delay" in page.split("<svg")[1]  # the axes are named after the column
    body = page.split('id="h-quantiles"')[1].split("</table>")[0]
    assert body.count("<tr>") == len(CARRIERS) + 1  # one row per key and the header
    assert "Bands and intervals are clipped" in text and "post-processing" in text


def test_quartiles_are_the_releases_with_intervals(grouped: treedp.GroupedRelease) -> None:
    rows = _rows(render_grouped_report(grouped, rng=_seed(2)), "h-quantiles")
    for key, cells in zip(CARRIERS, rows, strict=True):
        rel = grouped[key]
        assert cells[0] == key
        median = rel.quantile(0.5)
        shown = "—" if math.isnan(median) else f"{median:g}"
        assert cells[3].startswith(shown + " [")
        lo, hi = map(float, re.findall(r"\[(.*), (.*)\]", cells[3])[0])
        assert lo <= hi and lo >= -60 and hi <= 300


def test_expected_error_per_key_is_exact(grouped: treedp.GroupedRelease, page: str) -> None:
    rows = _rows(page, "h-error")
    for key, cells in zip(CARRIERS, rows, strict=True):
        rel = grouped[key]
        se_n = math.sqrt(rel.prefix_variance[-1])  # exact, from public parameters
        assert cells[2] == f"{se_n:.4g}"
        rmse = math.sqrt(float(np.mean(rel.prefix_variance[1:])))
        assert cells[3] == f"{rmse:.4g}"
        assert cells[-1] == ("too little signal" if low_signal(rel) else "")


def test_low_signal_rule(grouped: treedp.GroupedRelease) -> None:
    """The flag reads released and public quantities only: n̂ and the exact variance at the
    released median's edge; the tiny key is flagged, the large ones are not."""
    big, tiny = grouped["AA"], grouped["OO"]
    assert not low_signal(big) and low_signal(tiny)
    for rel in (big, tiny):
        counts = rel.consistent_counts
        if counts[-1] > 0:
            m = int(np.searchsorted(counts, counts[-1] / 2))
            se = math.sqrt(rel.prefix_variance[m])
            assert median_stderr(rel) == pytest.approx(se)
            assert low_signal(rel) == (se > FLAG_SHARE * rel.n)
        else:
            assert math.isnan(median_stderr(rel))
    # the threshold moves the flag as stated
    share = median_stderr(big) / big.n
    assert low_signal(big, share * 0.99) and not low_signal(big, share * 1.01)


def test_guarantee_rows_state_unit_and_parts(grouped: treedp.GroupedRelease) -> None:
    rows = dict(grouped_guarantee_rows(grouped))
    assert rows["Guarantee"].startswith(grouped.guarantee.describe())
    assert f"Δ = {grouped.contribution_factor}" in rows["Per-key trees"]
    assert rows["Budget per block of a tree"].startswith("off, ") or (
        0 not in grouped["AA"].level_budgets
    )
    assert "inf" not in " ".join(rows.values())


def test_write_report_takes_a_grouped_release(
    grouped: treedp.GroupedRelease, tmp_path: Path
) -> None:
    out = tmp_path / "all.html"
    treedp.write_report(grouped, out, column="dep_delay", rng=_seed(3))
    html = out.read_text(encoding="utf-8")
    assert "Quartiles per key" in html and out.stat().st_mode & 0o777 == 0o644
    one = tmp_path / "one.html"
    treedp.write_report(grouped, one, key="DL", rng=_seed(3))
    text = Page(one.read_text(encoding="utf-8")).content
    assert "carrier = DL" in text and "pure 1-DP for the whole release" in text
    assert "This key's tree: a part of the guarantee above" in text
    tree = text.split("This key's tree: a part of the guarantee above")[1]
    assert "per record: a part of the grouped release's guarantee above" in tree
    assert "the release's privacy unit is stated above" in tree
    with pytest.raises(treedp.InvalidParameterError, match="key"):
        treedp.write_report(grouped["DL"], tmp_path / "x.html", key="DL")
    with pytest.raises(treedp.InvalidTypeError, match="release"):
        treedp.write_report({"DL": grouped["DL"]}, tmp_path / "x.html")
    with pytest.raises(treedp.InvalidParameterError, match="flag_share"):
        treedp.write_report(grouped, tmp_path / "x.html", flag_share=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.html", "one.html"]


def test_many_keys_are_small_multiples() -> None:
    rng = np.random.default_rng(TEST_SEED)
    keys = [f"k{i:02d}" for i in range(9)]
    table = {"g": rng.choice(keys, 9000), "x": rng.integers(0, 100, 9000)}
    gr = treedp.release_grouped(
        table, column="x", by="g", keys=keys, epsilon=1.0, bounds=(0, 99), bins=20, rng=_seed(4)
    )
    html = render_grouped_report(gr, column="x", rng=_seed(5))
    assert "one small plot per key" in html
    assert [cells[-1] for cells in _rows(html, "h-error")] == [""] * len(keys)  # none flagged


def test_cli_report_of_a_grouped_file(
    grouped: treedp.GroupedRelease, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "g.tdp"
    grouped.save(path)
    out = tmp_path / "page.html"
    assert main(["report", str(path), "--out", str(out), "--column", "dep_delay"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    html = out.read_text(encoding="utf-8")
    assert "Quartiles per key" in html and "dep_delay" in html.split("<svg")[1]
    assert main(["report", str(path), "--out", str(out), "--key", "UA"]) == 0
    assert "carrier = UA" in out.read_text(encoding="utf-8")


def _rows(page: str, heading: str) -> list[list[str]]:
    """The body rows of the first table after ``heading``, as cell texts."""
    body = page.split(f'id="{heading}"')[1].split("</table>")[0].split("<tbody>")[1]
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        for row in body.split("</tr>")
        if "<t" in row
    ]
