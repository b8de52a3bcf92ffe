"""``treedp quantiles`` and ``treedp median`` without --bins on an integer-typed column (a
Parquet schema, a database query): integer mode, said in the output; CSV stays continuous."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.stats import TEST_SEED
from treedp.cli import main


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """The Likert column of tests/test_quantiles_typed.py as Parquet (int64 and float64) and CSV."""
    rng = np.random.default_rng(TEST_SEED)
    x = rng.choice([1, 2, 3, 4, 5], size=5000, p=[0.1, 0.1, 0.6, 0.1, 0.1])
    parquet, csv = tmp_path / "l.parquet", tmp_path / "l.csv"
    pq.write_table(pa.table({"v": x, "f": x.astype(float)}), parquet)
    csv.write_text("v\n" + "\n".join(map(str, x)) + "\n")
    return {"parquet": str(parquet), "csv": str(csv)}


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main([*argv, "--format", "json"]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_quantiles(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Rates: tests/test_quantiles_typed.py (a quartile other than 3 below 1e-27 per call)."""
    base = ["quantiles", files["parquet"], "--q", "0.25", "0.5", "0.75", "--epsilon", "1",
            "--bounds", "0.5", "5.5", "--insecure-seed", "1"]  # fmt: skip
    doc = _json([*base, "--column", "v"], capsys)
    assert doc["integer_mode"] == "column type" and doc["bounds"] == [1, 5]
    assert [row["value"] for row in doc["quantiles"]] == [3, 3, 3]  # type: ignore[attr-defined]
    assert not doc["notes"]  # no "reads the column as continuous" hint
    assert main([*base, "--column", "v"]) == 0
    assert "integer mode: the column's type is an integer type" in capsys.readouterr().out
    for column, path in (("f", files["parquet"]), ("v", files["csv"])):  # float type; no schema
        argv = [*base[:1], path, *base[2:], "--column", column, "--method", "recursive"]
        doc = _json(argv, capsys)
        assert doc["integer_mode"] is None and doc["notes"], (path, column)


@pytest.mark.parametrize("method", ["tree", "exponential"])
def test_median(method: str, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Rates: tests/test_quantiles_typed.py (below 1e-27 per call)."""
    base = ["median", files["parquet"], "--epsilon", "1", "--bounds", "1", "5", "--method",
            method, "--insecure-seed", "2"]  # fmt: skip
    doc = _json([*base, "--column", "v"], capsys)
    assert doc["integer_mode"] == "column type" and doc["median"] == 3
    assert main([*base, "--column", "v"]) == 0
    assert "integer mode: the column's type" in capsys.readouterr().out
    doc = _json([*base, "--column", "f"], capsys)
    # continuous, as before; the tree's bin holding the 60% block starts at 3 and the median
    # is nearer its start in rank (release/atoms.py), where the others draw a float beside it
    assert doc["integer_mode"] is None and (doc["median"] == 3) == (method == "tree")
    private = [*base[:5], "private", *base[7:], "--column", "v"]
    doc = _json(private, capsys)
    assert doc["integer_mode"] == "column type" and float(doc["median"]).is_integer()  # type: ignore[arg-type]
    doc = _json([*base, "--column", "v", "--bins", "integers"], capsys)
    assert doc["integer_mode"] == "declared" and doc["median"] == 3


def test_collapsed_private_bounds_say_what_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """100 Adult ages as int64 Parquet, ε = 1, both bounds private: the scans collapse, the
    recursion answers (quantiles_fallback), and the CLI says the bounds step said nothing
    instead of calling the float lattice's ends "found privately"."""
    import treedp

    ages = np.asarray(treedp.datasets.load_adult()["age"])[:100].astype(np.int64)
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"age": ages}), path)
    argv = ["quantiles", str(path), "--column", "age", "--bounds", "private", "--epsilon", "1",
            "--q", "0.25", "0.5", "--insecure-seed", "0"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "method recursive" in captured.out and "found privately" not in captured.out
    assert "(the bounds step, epsilon=0.1, said nothing: every float a candidate)" in captured.out
    assert "recursive method instead" in captured.err
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["bounds_found_privately"] is False
