"""The HTML report page, ``treedp report``, the notebook display and the demo's page.

The page is checked as a person sees it: rendered by headless Chromium (Debian's ``chromium``,
installed by ``.ci/run``), screenshotted at 1000 and 400 px wide and printed to PDF.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp.cli import main

pytest.importorskip("matplotlib", reason="the treedp[plot] extra (matplotlib) is not installed")

from treedp.report.html import SEEDED_WARNING, expected_error, render_report, write_report

SECTIONS = ("released", "guarantee", "plots", "quantiles", "cdf-values", "expected-error")


class Page(HTMLParser):
    """The parts of a page the tests look at."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.figure_parts: list[set[str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "figure":
            self.figure_parts.append(set())
        elif self.figure_parts and "figure" in self.stack:
            self.figure_parts[-1].add(tag)
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if a.get("id")}

    def all(self, name: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == name]

    @property
    def content(self) -> str:
        return " ".join(self.text)


def _seed(k: int = 0) -> treedp.InsecureSeededSource:
    return treedp.InsecureSeededSource(TEST_SEED + k)


@pytest.fixture(scope="module")
def seeded() -> treedp.Release:
    x = np.random.default_rng(TEST_SEED).integers(17, 91, 5000)
    return treedp.release_cdf(  # the planned tree (auto pads a strategy at 74 bins)
        x, epsilon=1.0, bounds=(17, 90), bins="integers", mechanism="tree", rng=_seed()
    )


@pytest.fixture(scope="module")
def published() -> treedp.Release:
    """A release from OS randomness (no seed warning); only its page's structure is checked."""
    x = np.random.default_rng(TEST_SEED).normal(50.0, 12.0, 5000)
    return treedp.release_cdf(
        x, epsilon=0.5, bounds=(0, 100), bins=40, neighbours="replace", n=5000
    )


@pytest.fixture(scope="module")
def seeded_html(seeded: treedp.Release) -> str:
    return render_report(seeded, rng=_seed(1))


def test_page_has_every_section(seeded_html: str, seeded: treedp.Release) -> None:
    page = Page(seeded_html)
    assert set(SECTIONS) <= page.ids()
    text = page.content
    assert SEEDED_WARNING in text
    assert "pure 1-DP" in text and "add/remove" in text and "one record" in text
    assert "74 integer bins over [17, 90]" in text
    levels = " × ".join(map(str, seeded.branching or ()))
    assert f"fan-out {levels}" in text
    assert "Expected error" in text and "RMSE" in text
    assert len(page.all("figure")) == 3
    assert len(page.all("table")) == 2
    # one row per quantile (7) plus the header; CDF values at up to 11 points
    rows = seeded_html.split('id="h-quantiles"')[1].split("</table>")[0].count("<tr>")
    assert rows == 8


def test_page_is_self_contained(seeded_html: str) -> None:
    page = Page(seeded_html)
    assert not page.all("script") and not page.all("link") and not page.all("img")
    assert not page.all("iframe") and not page.all("object")
    for _, attrs in page.tags:
        for key in ("src", "href", "xlink:href"):
            value = attrs.get(key) or ""
            assert not value.startswith(("http:", "https:", "//")), value
    assert "url(http" not in seeded_html and "@import" not in seeded_html
    assert page.all("meta") and any(a.get("name") == "viewport" for a in page.all("meta"))


def test_figures_have_text_alternatives(seeded_html: str) -> None:
    page = Page(seeded_html)
    svgs = page.all("svg")
    assert len(svgs) == 3
    ids = page.ids()
    for svg in svgs:
        assert svg.get("role") == "img"
        for ident in (svg.get("aria-labelledby") or "").split():
            assert ident in ids
        assert "width" not in svg  # scales to its container
    for parts in page.figure_parts:
        assert {"svg", "title", "desc", "figcaption"} <= parts


def test_page_reflows_and_prints(seeded_html: str) -> None:
    assert "@media (max-width: 520px)" in seeded_html
    assert "@media print" in seeded_html
    assert "figure svg { display: block; width: 100%; height: auto;" in seeded_html


def test_unseeded_page_has_no_warning(published: treedp.Release) -> None:
    html = render_report(published, level=0.9, quantiles=(0.5,), title="Incomes <2024>")
    page = Page(html)
    assert SEEDED_WARNING not in page.content
    assert "Records (public n)" in page.content and "replace" in page.content
    assert "<title>Incomes &lt;2024&gt;</title>" in html and "90% low" in page.content


def test_expected_error_is_the_plans(seeded: treedp.Release) -> None:
    ours = expected_error(seeded)
    planned = treedp.predict_error(
        seeded.bins.n_bins,
        epsilon=seeded.epsilon,
        neighbours="add_remove",
        mechanism=treedp.MechanismOptions(
            "auto", branching=seeded.branching, level_budgets=seeded.level_budgets
        ),
    )
    assert ours.mean_cdf_mse == pytest.approx(planned.mean_cdf_mse, rel=1e-9)
    assert ours.worst_prefix == planned.worst_prefix
    assert ours.branching == planned.branching


def test_write_report_is_atomic_and_readable(seeded: treedp.Release, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(seeded, out, rng=_seed(2))
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert out.stat().st_mode & 0o777 == 0o644
    with pytest.raises(treedp.InvalidParameterError, match="does not exist") as info:
        write_report(seeded, tmp_path / "missing" / "r.html")
    assert str(tmp_path / "missing" / "r.html") in str(info.value)  # the user's path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


# ---------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def release_file(seeded: treedp.Release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rel") / "age.tdp"
    seeded.save(path)
    return path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("treedp: error: ")
    return lines[0]


def test_cli_report(release_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(release_file), "--out", str(out), "--title", "Ages"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    page = Page(out.read_text(encoding="utf-8"))
    assert set(SECTIONS) <= page.ids() and "Ages" in page.content


@pytest.mark.parametrize("case", ["not_a_release", "missing_file", "unwritable", "no_matplotlib"])
def test_cli_report_bad_input(
    case: str,
    release_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source, out = release_file, tmp_path / "report.html"
    if case == "not_a_release":
        source = tmp_path / "bad.tdp"
        source.write_bytes(b"PK\x03\x04 this is not a release")
    elif case == "missing_file":
        source = tmp_path / "absent.tdp"
    elif case == "unwritable":
        out = tmp_path / "no" / "such" / "dir" / "report.html"
    else:
        monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["report", str(source), "--out", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    if case == "unwritable":
        assert str(out) in line
    if case == "no_matplotlib":
        assert "treedp[plot]" in line
    assert not out.exists()
    assert not list(tmp_path.rglob("*.tmp"))


def test_demo_writes_the_adult_page(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "adult.html"
    assert main(["demo", "--report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"Report page for the age column: {out}" in printed
    page = Page(out.read_text(encoding="utf-8"))
    assert set(SECTIONS) <= page.ids() and "UCI Adult" in page.content


# ---------------------------------------------------------------------------- notebook
def test_notebook_display(seeded: treedp.Release) -> None:
    html = seeded._repr_html_()
    page = Page(html)
    assert len(page.all("svg")) == 1 and page.all("svg")[0].get("role") == "img"
    assert "pure 1-DP" in page.content and SEEDED_WARNING in page.content
    assert "<script" not in html
    text = repr(seeded)
    assert "\n" not in text and len(text) < 160 and "SEEDED" in text


# ---------------------------------------------------------------------------- in a browser
def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(
        "Debian's chromium is not installed here (.ci/run installs it with "
        "'apt-get install -y chromium'); the page cannot be rendered"
    )


def _headless(browser: str, profile: Path, *args: str) -> None:
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def test_page_in_headless_chromium(
    seeded: treedp.Release, tmp_path: Path, seeded_html: str
) -> None:
    from matplotlib.image import imread

    browser = _chromium()
    page = tmp_path / "report.html"
    page.write_text(seeded_html, encoding="utf-8")
    url = page.as_uri()
    for width in (1000, 400):
        shot = tmp_path / f"shot-{width}.png"
        _headless(
            browser,
            tmp_path / "profile",
            f"--screenshot={shot}",
            f"--window-size={width},1800",
            url,
        )
        pixels = imread(shot)[..., :3]
        assert pixels.shape[:2] == (1800, width)
        assert float(pixels.std()) > 0.05  # not blank
        ink = np.mean(pixels.min(axis=2) < 0.5)
        assert 0.005 < ink < 0.5  # text and figures, not a solid block
        # the seeded warning's red border is on screen
        red = (pixels[..., 0] > 0.55) & (pixels[..., 1] < 0.2) & (pixels[..., 2] < 0.25)
        assert red.sum() > 200
        # nothing is cut off on the right at this width: the last columns are background
        assert float(pixels[:, -3:].std()) < 0.02
    pdf = tmp_path / "report.pdf"
    _headless(browser, tmp_path / "profile", f"--print-to-pdf={pdf}", "--no-pdf-header-footer", url)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and data.count(b"/Type /Page") >= 2


def test_guarantee_rows_say_which_bounds_were_found_privately() -> None:
    """The total guarantee row names the privately found side and the public one."""
    from treedp.report.html import _guarantee_rows

    x = np.random.default_rng(3).lognormal(3, 1, 2000)
    for bounds, text in (
        ("private", "the bounds were found privately"),
        ((0, "private"), "the upper bound was found privately (the lower one was given as public)"),
    ):
        rel = treedp.release_cdf(
            x, bounds=bounds, bins=64, epsilon=1.0, rng=treedp.InsecureSeededSource(1)
        )
        rows = dict(_guarantee_rows(rel))
        assert text in rows["Total guarantee"]


def test_page_carries_the_bounds_warning() -> None:
    """A release whose end bin holds most of the mass (bounds too narrow) or whose private
    bounds failed says so on the page, as `treedp query` does."""
    x = np.random.default_rng(TEST_SEED).normal(50, 10, 2000)
    narrow = treedp.release_cdf(
        x, bounds=(45, 55), bins=32, epsilon=1.0, rng=treedp.InsecureSeededSource(1)
    )
    warning = narrow.bounds_warning()
    assert warning is not None
    page = render_report(narrow, rng=treedp.InsecureSeededSource(2))
    assert "Warning: " in page and "of the released mass" in page
    fine = treedp.release_cdf(
        x, bounds=(0, 100), bins=32, epsilon=1.0, rng=treedp.InsecureSeededSource(1)
    )
    assert fine.bounds_warning() is None
    assert "Warning: " not in render_report(fine, rng=treedp.InsecureSeededSource(2))


# ---------------------------------------------------------------------------- round 4 fixes
def _section(html: str, heading: str) -> str:
    return Page(html.split(f'id="{heading}"')[1].split("</section>")[0]).content


def test_cdf_table_at_round_points(seeded_html: str) -> None:
    body = seeded_html.split('id="h-cdf"')[1].split("</table>")[0].split("<tbody>")[1]
    xs = [row.split("</th>")[0].rsplit(">", 1)[1] for row in body.split("<tr>")[1:]]
    assert xs == ["20", "30", "40", "50", "60", "70", "80", "90"]


def test_a_switched_off_level_says_off(seeded: treedp.Release, seeded_html: str) -> None:
    assert seeded.level_budgets[0] == 0  # the plan switched the root off
    error = _section(seeded_html, "h-error")
    assert "Noise variance per level off, " in error and "inf" not in error
    guarantee = _section(seeded_html, "h-guarantee")
    assert "(parts of the guarantee above) off, " in guarantee


def test_a_share_that_rounds_to_zero() -> None:
    huge = treedp.release_counts(np.full(64, 10**8), epsilon=1.0, rng=_seed(3))
    error = _section(render_report(huge, rng=_seed(4)), "h-error")
    assert "(< 0.01% of n̂)" in error and "0.00%" not in error


def test_column_names_the_axes_and_clipping_is_stated(seeded: treedp.Release) -> None:
    html = render_report(seeded, column="age", rng=_seed(5))
    svgs = html.split("<svg")[1:]
    assert all(">age<" in svg for svg in svgs)  # every figure's value axis
    assert "x (age)" in _section(html, "h-cdf")
    assert "clipped to what is possible" in _section(html, "h-reading")
    assert "Clipping is post-processing" in _section(html, "h-reading")


def test_grouped_page_in_headless_chromium(tmp_path: Path) -> None:
    """The page of a whole grouped release, as a person sees it: on screen at 1000 and 400 px
    (nothing cut off), and printed."""
    from matplotlib.image import imread

    from tests.report.test_grouped import CARRIERS, flights

    browser = _chromium()
    grouped = treedp.release_grouped(
        flights(4000),
        column="dep_delay",
        by="carrier",
        keys=list(CARRIERS),
        privacy_unit="tailnum",
        max_contributions=5,
        epsilon=1.0,
        bounds=(-60, 300),
        bins="integers",
        rng=_seed(6),
    )
    page = tmp_path / "grouped.html"
    treedp.write_report(grouped, page, column="dep_delay", rng=_seed(7))
    url = page.as_uri()
    for width in (1000, 400):
        shot = tmp_path / f"grouped-{width}.png"
        _headless(
            browser,
            tmp_path / "profile",
            f"--screenshot={shot}",
            f"--window-size={width},2400",
            url,
        )
        pixels = imread(shot)[..., :3]
        assert pixels.shape[:2] == (2400, width)
        ink = np.mean(pixels.min(axis=2) < 0.5)
        assert 0.005 < ink < 0.5
        red = (pixels[..., 0] > 0.55) & (pixels[..., 1] < 0.2) & (pixels[..., 2] < 0.25)
        assert red.sum() > 200  # the seeded warning
        assert float(pixels[:, -3:].std()) < 0.02  # nothing cut off on the right
    pdf = tmp_path / "grouped.pdf"
    _headless(browser, tmp_path / "profile", f"--print-to-pdf={pdf}", "--no-pdf-header-footer", url)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and data.count(b"/Type /Page") >= 2


def test_a_privately_chosen_person_bound_is_stated() -> None:
    """``max_contributions="auto"``: the page says the bound was chosen from the data and what
    it spent (as ``treedp release`` and ``query --info`` say), per person and per group."""
    from tests.privacy.test_auto_bound import _frame
    from treedp.report.grouped import grouped_guarantee_rows

    common = {"column": "x", "bounds": (0, 31), "bins": "integers", "epsilon": 1.0}
    chosen = 'chosen privately (max_contributions="auto", ε = 0.1 of the budget)'
    auto = treedp.PrivacyUnit("pid", max_contributions="auto")
    rel = treedp.release_cdf(_frame(), privacy_unit=auto, rng=_seed(1), **common)
    assert chosen.replace('"', "&quot;") in render_report(rel)
    fixed = treedp.PrivacyUnit("pid", max_contributions=1)
    page = render_report(treedp.release_cdf(_frame(), privacy_unit=fixed, rng=_seed(2), **common))
    assert "at most 1 row each:" in page and "chosen privately" not in page
    grouped = treedp.release_grouped(_frame(), by="k", keys=list("abc"), privacy_unit="pid",
                                     max_contributions="auto", rng=_seed(3), **common)  # fmt: skip
    unit = dict(grouped_guarantee_rows(grouped))["Privacy unit"]
    assert unit.endswith(chosen)


def test_a_page_warns_each_thing_once(tmp_path: Path) -> None:
    """A page reads a release's quantiles in a table, a figure and a summary: each distinct
    warning is emitted once, at the caller's line, and a profile's are named by column (a new
    user's run saw the same words four times, unnamed)."""
    import warnings

    x = np.random.default_rng(0).lognormal(3, 1, 3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = treedp.profile({"a": x, "b": np.round(x)}, epsilon=0.1, rng=_seed(1))
    for write, expected in (
        (lambda: profile.write_report(tmp_path / "p.html"), ["Column 'a': ", "Column 'b': "]),
        (lambda: write_report(profile["a"], tmp_path / "r.html"), [""]),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write()
        texts = [str(w.message) for w in caught]
        assert len(texts) == len(set(texts)) == len(expected)
        pairs = zip(sorted(texts), expected, strict=True)
        assert all(t.startswith(p) and "found bound" in t for t, p in pairs)
        assert all(w.filename == __file__ for w in caught)
