"""Time zones on the command line: CSV times written with an offset (as pandas, R and databases
write them) read with ``--tz``; answers printed in the zone; one-line errors otherwise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.cli_lines import one_error_line
from treedp.cli import main

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

NY = "America/New_York"


@pytest.fixture(scope="module")
def ny_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    t = pd.Timestamp("2013-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 8760, 2000), "h")
    path = tmp_path_factory.mktemp("tz") / "flights.csv"
    pd.DataFrame({"time_hour": t.tz_convert(NY)}).to_csv(path, index=False)  # -05:00 / -04:00
    return path


BOUNDS = ["--bounds", "2013-01-01", "2014-01-01", "--epsilon", "1", "--insecure-seed", "2"]


@pytest.mark.parametrize("command", ["median", "quantiles"])
def test_median_and_quantiles_print_times_in_the_zone(
    command: str, ny_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--q", "0.5"] if command == "quantiles" else []
    args = [command, str(ny_csv), "--column", "time_hour", *BOUNDS, "--tz", NY, *extra]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "-04:00" in out.splitlines()[0] or "-05:00" in out.splitlines()[0]


def test_release_and_query_keep_the_zone(
    ny_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    args = ["release", str(ny_csv), "--column", "time_hour", "--bins", "64", *BOUNDS]
    assert main([*args, "--tz", NY, "--out", str(out)]) == 0
    capsys.readouterr()
    query = ["query", str(out), "--quantile", "0.5", "--cdf", "2013-07-01", "2013-07-01T04:00Z"]
    assert main([*query, "--format", "json"]) == 0
    answers = json.loads(capsys.readouterr().out)["answers"]
    cdf_local, cdf_utc, quantile = (a["estimate"] for a in answers)
    assert cdf_local == cdf_utc  # New York midnight is 04:00 UTC in July
    assert pd.Timestamp(quantile).tz is not None and str(quantile).endswith(("-04:00", "-05:00"))


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ([], "UTC offset.*bounds are naive.*--tz"),
        (["--tz", "Nowhere/Atlantis"], "--tz takes a zone"),
        (["--tz", NY, "--bounds", "2013-03-10T02:30", "2014-01-01"], "daylight-saving"),
    ],
)
def test_one_line_errors(
    extra: list[str], match: str, ny_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["release", str(ny_csv), "--column", "time_hour", "--bins", "8", *BOUNDS, *extra]
    assert main([*args, "--out", str(tmp_path / "x.json")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert re.search(match, line), line
    assert not (tmp_path / "x.json").exists()


def test_tz_needs_datetime_bounds(
    ny_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["median", str(ny_csv), "--column", "time_hour", "--bounds", "0", "1"]
    assert main([*args, "--epsilon", "1", "--tz", "UTC"]) == 2
    assert "--tz applies to datetime --bounds" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["median", "quantiles"])
def test_median_and_quantiles_refuse_offsets_under_naive_bounds_charging_nothing(
    command: str, ny_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32: as ``treedp release``, the same one line, before the ledger is charged."""
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset", "d", "--epsilon", "1"]) == 0
    capsys.readouterr()
    extra = ["--q", "0.5"] if command == "quantiles" else []
    args = [command, str(ny_csv), "--column", "time_hour", *BOUNDS, *extra]
    spend = ["--ledger", str(ledger), "--dataset", "d"]  # the whole budget: epsilon 1
    assert main([*args, *spend]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert re.search("UTC offset.*bounds are naive.*--tz", line), line
    assert "2013" not in line
    assert main([*args, "--tz", NY, *spend]) == 0  # nothing was charged: epsilon 1 is left
    capsys.readouterr()
    assert main([*args, "--tz", NY, *spend]) == 2  # now it is spent


@pytest.mark.parametrize(
    "extra", [["--method", "exponential"], ["--method", "stable"], ["--neighbours", "replace"]]
)
def test_median_methods_reading_the_column_check_the_cells_too(
    extra: list[str], ny_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The methods that read the column into memory (``treedp.read_column(offsets=...)``)
    refuse cells with offsets under naive bounds as the tree does, charging nothing."""
    ledger = tmp_path / "l.db"
    init = ["budget", "init", str(ledger), "--dataset", "d", "--epsilon", "1"]
    assert main(init) == 0
    capsys.readouterr()
    args = ["median", str(ny_csv), "--column", "time_hour", *BOUNDS, *extra]
    pure_add_remove = extra == ["--method", "exponential"]  # the ledger's kind of budget
    spend = ["--ledger", str(ledger), "--dataset", "d"] if pure_add_remove else []
    assert main([*args, *spend]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert re.search("UTC offset.*bounds are naive.*--tz", line), line
    assert main([*args, "--tz", NY, *spend]) == 0  # nothing was charged before
    assert "median = " in capsys.readouterr().out  # an answer (stable may refuse: ⊥)


def test_read_column_checks_offsets(ny_csv: Path) -> None:
    import treedp

    assert treedp.read_column(ny_csv, "time_hour", offsets=True).dtype.kind == "M"
    with pytest.raises(treedp.InvalidTypeError, match="UTC offset"):
        treedp.read_column(ny_csv, "time_hour", offsets=False)
    with pytest.raises(treedp.InvalidTypeError, match="'offsets'"):
        treedp.read_column(ny_csv, "time_hour", offsets="yes")  # type: ignore[arg-type]
