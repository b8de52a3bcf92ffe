"""``treedp median --bounds private`` (issue #16, after a new user's run): the real CLI entry
point, as tests/test_cli.py runs it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.cli_lines import one_error_line
from treedp import InsecureSeededSource
from treedp.cli import main
from treedp.cli._common import fmt, fmt_spent
from treedp.io import read_column


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "data.csv"
    ages = rng.integers(18, 90, 2000)
    income = rng.lognormal(10, 1, 2000)
    rows = ["age,income,when"] + [
        f"{a},{v:.2f},2024-01-{1 + i % 28:02d}"
        for i, (a, v) in enumerate(zip(ages, income, strict=True))
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def _median(path: Path, *extra: str) -> list[str]:
    return ["median", str(path), "--column", "income", "--epsilon", "1", *extra]


@pytest.mark.parametrize("method", ["tree", "exponential"])
def test_median_with_private_bounds_is_treedp_quantiles_at_one_half(
    method: str, csv_file: Path, capsys: pytest.CaptureFixture
) -> None:
    """The CLI answer is the public API's answer (same seed), with the bounds, the bounds
    step's epsilon and the total stated."""
    args = _median(csv_file, "--method", method, "--bounds", "private", "--insecure-seed", "7")
    assert main(args) == 0
    out = capsys.readouterr().out.strip()
    values = read_column(str(csv_file), "income")
    neighbours = "add_remove"  # the CLI's default for both methods
    expected = treedp.quantiles(
        values,
        0.5,
        epsilon=1.0,
        bounds="private",
        bins=1024 if method == "tree" else None,
        method=method,
        neighbours=neighbours,
        rng=InsecureSeededSource(7),
    )
    assert out.startswith(f"median = {fmt(expected.value)} (")
    shown = ", ".join(fmt(b) for b in expected.bounds)
    if method == "tree":
        assert f"bounds [{shown}] found privately with epsilon=0.1;" in out
    else:  # no bounds step: the exponential mechanism over every float
        assert "over every float, no bounds step;" in out
    assert f"total pure epsilon={fmt_spent(expected.epsilon_spent)} of 1," in out
    assert f"{neighbours} neighbours (the default for this method)" in out
    assert out.endswith("[SEEDED: not for publication]")
    # --bounds-share sets the share; integer bins answer an integer (tree)
    more = ["--bounds-share", "0.25"] + (["--bins", "integers"] if method == "tree" else [])
    assert main([*_median(csv_file, "--method", method, "--bounds", "private"), *more]) == 0
    out = capsys.readouterr().out
    assert ("found privately with epsilon=0.25;" if method == "tree" else "no bounds step") in out
    if method == "tree":
        assert float(out.split()[2]).is_integer()


def test_median_private_bounds_refusals(csv_file: Path, capsys: pytest.CaptureFixture) -> None:
    """Options that would be ignored, and methods that take no bounds, are refused in one
    line naming the option, before any data is read."""
    cases = [
        (["--method", "stable", "--bounds", "private"], "--bounds private does not apply"),
        (
            ["--method", "subsample", "--m", "10", "--bounds", "private"],
            "--bounds private does not apply to --method subsample",
        ),
        (["--method", "stable", "--bounds-share", "0.2"], "--bounds-share does not apply"),
        (["--bounds", "0", "1e6", "--bounds-share", "0.2"], "--bounds-share applies only"),
        (["--bounds-share", "0.2"], "--bounds-share applies only"),
        (["--bounds", "private", "--bounds-share", "1.5"], "--bounds-share must be"),
        (["--bounds", "private", "--bins", "999999999"], "--bins"),
        (["--bounds", "1", "2", "3"], "--bounds takes two values"),
        (["--method", "exponential"], "--bounds is required"),
    ]
    for extra, expected in cases:
        assert main(_median(csv_file, *extra)) == 2, extra
        line = one_error_line(capsys.readouterr().err)
        assert expected in line, (extra, line)
    # checked before the data is read: a missing file is not reached
    missing = str(csv_file.parent / "missing.csv")
    assert main(["median", missing, "--column", "x", "--epsilon", "1", "--method", "stable",
                 "--bounds", "private"]) == 2  # fmt: skip
    assert "--bounds private does not apply" in one_error_line(capsys.readouterr().err)
    # a datetime column finds its private bounds on the public grid of days
    args = ["median", str(csv_file), "--column", "when", "--epsilon", "1", "--bounds", "private"]
    assert main([*args, "--insecure-seed", "1"]) == 0
    assert "found privately" in capsys.readouterr().out


def test_median_private_bounds_charge_the_total_once(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "b.db"
    assert main(["budget", "init", str(path), "--dataset", "d", "--epsilon", "1.5"]) == 0
    capsys.readouterr()
    ledger = ["--ledger", str(path), "--dataset", "d"]
    args = _median(csv_file, "--bounds", "private", *ledger)
    assert main(args) == 0  # the default method: treedp.quantiles picks (add_remove)
    assert "remaining epsilon=0.5" in capsys.readouterr().out
    assert main(args) == 2  # 1 more does not fit: refused, nothing charged
    assert "Nothing was charged" in one_error_line(capsys.readouterr().err)
    with treedp.open_ledger(path, "d") as led:
        assert len(led.history) == 1 and led.spent.epsilon == pytest.approx(1.0)
        assert led.history[0].record.mechanism == "quantiles[exponential]"  # over every float
        assert led.history[0].record.parameters["bounds"] == "private"


def test_median_default_method_with_private_bounds_answers_where_the_tree_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """100 Adult ages, ε = 1, ``--bounds private`` without ``--method``: the library's choice
    (the exponential mechanism over every float) answers near the true median, where the
    tree on the collapsed bounds answered about 0 (a new user's run); ``--method tree``
    still runs the tree, as asked."""
    ages = np.asarray(treedp.datasets.load_adult()["age"])[:100]
    path = tmp_path / "age.csv"
    path.write_text("age\n" + "\n".join(map(str, ages)) + "\n")
    base = ["median", str(path), "--column", "age", "--epsilon", "1", "--bounds", "private",
            "--insecure-seed", "1"]  # fmt: skip
    assert main(base) == 0
    out = capsys.readouterr().out
    value = float(out.split()[2])
    assert abs(value - np.median(ages)) < 10 and "exponential mechanism over every float" in out
    assert main([*base, "--method", "tree"]) == 0
    assert "(tree, bounds [" in capsys.readouterr().out


def test_median_private_bounds_warn_at_the_grid_end(
    csv_file: Path, capsys: pytest.CaptureFixture
) -> None:
    """Too little epsilon for the records: a scan runs off the public grid; the answer
    comes with a warning on stderr (post-processing of the released stops)."""
    args = ["median", str(csv_file), "--column", "income", "--epsilon", "0.001"]
    args += ["--method", "tree", "--bins", "64", "--bounds", "private", "--insecure-seed", "3"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("median = ")
    warning = captured.err.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("treedp: warning: ")
    assert "records" in warning[0]


def test_median_exponential_takes_integer_bins_as_quantiles_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`treedp median --method exponential --bins integers` answers an integer of the domain
    (as `treedp quantiles` does), with public or private bounds; a number of bins is refused
    in one line (the mechanism has no bins)."""
    path = tmp_path / "ages.csv"
    ages = np.random.default_rng(0).integers(17, 91, 2000)
    path.write_text("age\n" + "\n".join(str(v) for v in ages) + "\n")
    base = ["median", str(path), "--column", "age", "--epsilon", "1", "--method", "exponential"]
    for bounds in (["17", "90"], ["private"], ["0", "private"]):
        argv = [*base, "--bounds", *bounds, "--bins", "integers", "--insecure-seed", "1"]
        assert main(argv) == 0
        out = capsys.readouterr().out
        value = out.split("median = ")[1].split(" ")[0]
        assert value.isdigit() and 17 <= int(value) <= 90
    assert main([*base, "--bounds", "17", "90", "--bins", "64"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "--bins integers only" in line


def test_quantiles_and_median_read_several_inputs_and_a_delimiter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Like `treedp release`: several files (the column of each, concatenated), and
    `--delimiter` for CSV; a missing input is one line naming it."""
    (tmp_path / "a.csv").write_text("age\n30\n40\n")
    (tmp_path / "b.csv").write_text("age;w\n50;1\n60;1\n70;1\n")
    (tmp_path / "c.csv").write_text("age\n50\n60\n70\n")
    two = [str(tmp_path / "a.csv"), str(tmp_path / "c.csv")]
    common = ["--column", "age", "--epsilon", "50", "--bounds", "0", "100", "--bins", "integers"]
    assert main(["median", *two, *common, "--insecure-seed", "1"]) == 0
    assert capsys.readouterr().out.startswith("median = 50 (tree")
    argv = ["quantiles", *two, *common, "--q", "0.5", "0.9", "--insecure-seed", "1"]
    assert main(argv) == 0
    assert "q=0.5: 50" in capsys.readouterr().out
    semi = [str(tmp_path / "b.csv"), "--delimiter", ";"]
    assert main(["median", *semi, *common, "--insecure-seed", "1"]) == 0
    assert capsys.readouterr().out.startswith("median = 60 (tree")
    assert main(["median", str(tmp_path / "a.csv"), str(tmp_path / "nope.csv"), *common]) == 2
    assert "nope.csv" in one_error_line(capsys.readouterr().err)


def test_quantiles_notes_bins_integers_for_the_continuous_methods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recursive and exponential methods read the column as continuous: without --bins
    the command adds one note naming --bins integers (a public-parameter note); with it,
    none."""
    path = tmp_path / "ages.csv"
    path.write_text("age\n" + "\n".join(str(v) for v in [30, 40, 40, 40, 50] * 40) + "\n")
    argv = ["quantiles", str(path), "--column", "age", "--q", "0.25", "0.5", "0.75"]
    common = ["--epsilon", "1", "--bounds", "0", "100", "--insecure-seed", "1"]
    assert main([*argv, *common]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--bins integers" in err[0] and err[0].startswith("treedp: note:")
    assert main([*argv, *common, "--bins", "integers"]) == 0
    assert capsys.readouterr().err == ""


def test_api_median_takes_integers_and_names_the_private_bounds_call() -> None:
    x = np.repeat([1, 2, 3], [10, 80, 10])
    assert (
        treedp.median(x, bounds=(0, 5), epsilon=5.0, bins="integers", rng=InsecureSeededSource(1))
        == 2.0
    )
    with pytest.warns(DeprecationWarning, match="bins='integers'"):  # the old spelling
        old = treedp.median(
            x, bounds=(0, 5), epsilon=5.0, integers=True, rng=InsecureSeededSource(1)
        )
    assert old == 2.0
    with pytest.raises(treedp.InvalidParameterError, match=r"treedp\.quantiles"):
        treedp.median(x, bounds="private", epsilon=1.0)  # type: ignore[arg-type]
    dates = np.array(["2024-01-02", "2024-03-01"], dtype="datetime64[D]")
    with pytest.raises(treedp.InvalidTypeError, match="not datetimes"):
        treedp.quantiles(
            dates, 0.5, epsilon=1.0, bounds=("2024-01-01", "2024-12-31"), bins="integers"
        )


def test_fmt_spent_rounds_a_spend_up() -> None:
    """A spend is never shown below itself: what rounding the parts down leaves below the
    budget reads as the budget; six significant digits otherwise."""
    assert fmt_spent(0.9999999997) == "1" and fmt_spent(0.1) == "0.1"
    assert fmt_spent(0.12345649) == "0.123457" and fmt_spent(2.5e-7) == "2.5e-07"
    assert fmt_spent(0.0) == "0"
