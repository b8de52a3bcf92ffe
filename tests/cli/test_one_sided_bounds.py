"""One public side of the bounds (``--bounds 0 private``, ``--bounds private HI``) on the
command line: the same answers as the public API at the same seed, the side found stated,
one-line errors for malformed ``--bounds``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import treedp
from treedp import InsecureSeededSource
from treedp.cli import main
from treedp.cli._common import fmt
from treedp.io import read_column


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    income = np.random.default_rng(1).lognormal(10, 1, 3000)
    path = tmp_path / "data.csv"
    path.write_text("income\n" + "\n".join(f"{v:.2f}" for v in income) + "\n")
    return path


@pytest.mark.parametrize(
    ("words", "bounds", "side"),
    [(["0", "private"], (0, "private"), "upper"), (["private", "1e7"], ("private", 1e7), "lower")],
)
def test_quantiles_with_one_public_side_match_the_api(
    words: list[str], bounds: tuple, side: str, csv_file: Path, capsys: pytest.CaptureFixture
) -> None:
    args = ["quantiles", str(csv_file), "--column", "income", "--q", "0.1", "0.5", "0.9"]
    assert main([*args, "--epsilon", "1", "--bounds", *words, "--insecure-seed", "3"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    expected = treedp.quantiles(
        read_column(str(csv_file), "income"),
        [0.1, 0.5, 0.9],
        epsilon=1.0,
        bounds=bounds,
        rng=InsecureSeededSource(3),
    )
    assert [line.split(": ")[1] for line in out[:3]] == [fmt(v) for v in expected.values]
    # auto runs the recursion over every float: no bounds step, the public side clamps
    assert expected.method == "recursive" and "no bounds step" in out[3]
    public = 0.0 if side == "upper" else 1e7
    assert public in expected.bounds
    assert f"[{fmt(public)}, inf]" in out[3] or f"[-inf, {fmt(public)}]" in out[3]  # no bound
    tree = [*args, "--epsilon", "1", "--bounds", *words, "--method", "tree", "--insecure-seed", "3"]
    assert main(tree) == 0  # a method that needs bounds: one scan finds the other side
    assert f"({side} found privately with epsilon=0.1)" in capsys.readouterr().out


def test_release_and_median_with_a_public_lower_bound(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out_file = tmp_path / "r.tdp"
    common = ["--column", "income", "--epsilon", "1", "--bounds", "0", "private"]
    assert main(["release", str(csv_file), *common, "--bins", "256", "--out", str(out_file)]) == 0
    assert "upper bound found privately" in capsys.readouterr().out
    rel = treedp.load_release(out_file)
    assert rel.edges[0] == 0.0 and rel.bounds_step is not None
    assert rel.bounds_step["known"] == "lower"
    assert main(["query", str(out_file), "--info"]) == 0
    assert "upper bound found privately (lower bound public)" in capsys.readouterr().out
    assert main(["median", str(csv_file), *common, "--method", "exponential"]) == 0
    out = capsys.readouterr().out  # over every float: no bounds step, the public side clamps
    assert "no bounds step" in out


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["0", "privat"], "one public number with the word 'private'"),
        (["0", "1", "2"], "two values LO HI"),
        (["0.5", "private"], "must be an integer"),
    ],
)
def test_malformed_bounds_get_one_line(
    words: list[str], message: str, csv_file: Path, capsys: pytest.CaptureFixture
) -> None:
    args = ["quantiles", str(csv_file), "--column", "income", "--q", "0.5", "--epsilon", "1"]
    assert main([*args, "--bins", "integers", "--bounds", *words]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedp: error:") and message in err[0]


def test_private_bounds_with_group_by_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "g.csv"
    path.write_text("g,v\n" + "\n".join(f"{i % 3},{i}" for i in range(60)) + "\n")
    keys = tmp_path / "keys.txt"
    keys.write_text("0\n1\n2\n")
    out = tmp_path / "r.tdp"
    for words in (["private"], ["0", "private"]):
        args = ["release", str(path), "--column", "v", "--by", "g", "--keys", str(keys)]
        args += ["--bins", "integers", "--epsilon", "1", "--out", str(out), "--bounds", *words]
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "not available with --by" in err[0]
    assert not out.exists()


def test_api_names_a_misspelt_private() -> None:
    x = np.arange(10.0)
    for bounds in ((0, "privat"), ("PRIVATE", 5)):
        with pytest.raises(treedp.InvalidParameterError, match="the word for bounds found"):
            treedp.release_cdf(x, bounds=bounds, bins=4, epsilon=1.0)
    with pytest.raises(treedp.InvalidParameterError, match="group-by"):
        treedp.release_grouped(x, bounds="private", bins=4, epsilon=1.0, by=np.zeros(10), keys=[0])


def test_median_reads_a_directory_or_glob_as_quantiles_does(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(2):
        (folder / f"p{i}.csv").write_text("v\n" + "\n".join(str(j) for j in range(50)) + "\n")
    for source in (str(folder), str(folder / "*.csv")):
        args = ["median", source, "--column", "v", "--method", "tree", "--bounds", "0", "60"]
        assert main([*args, "--epsilon", "1", "--insecure-seed", "1"]) == 0
        assert capsys.readouterr().out.startswith("median = ")


def test_a_flagged_release_prints_one_warning_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The library's BoundsWarning is not printed again by Python's warnings machinery: the
    command prints its own one-line warning."""
    data = tmp_path / "tiny.csv"
    data.write_text("x\n1\n2\n3\n4\n5\n")
    out = tmp_path / "r.json"
    argv = ["release", str(data), "--column", "x", "--bounds", "private", "--bins", "16"]
    assert main([*argv, "--epsilon", "1", "--out", str(out), "--insecure-seed", "4"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedp: warning: ")


def test_quantiles_json_writes_an_open_side_as_infinity(
    csv_file: Path, capsys: pytest.CaptureFixture
) -> None:
    """Over every float the reported bounds are the lattice's ends: JSON says ``"-inf"`` /
    ``"inf"`` as the text line does, not ``±8.98846567431158e+307``."""
    args = ["quantiles", str(csv_file), "--column", "income", "--q", "0.5", "--epsilon", "1"]
    for words, expected in ((["private"], ["-inf", "inf"]), (["0", "private"], [0.0, "inf"])):
        cmd = [*args, "--bounds", *words, "--insecure-seed", "3", "--format", "json"]
        assert main(cmd) == 0
        assert json.loads(capsys.readouterr().out)["bounds"] == expected
