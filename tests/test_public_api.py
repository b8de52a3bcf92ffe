"""The public surface is pinned, and the vendored data and readers work."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import treedp
from treedp.datasets import ADULT_COLUMNS, load_adult
from treedp.exceptions import InvalidParameterError
from treedp.io import read_column


def test_all_is_pinned() -> None:
    assert set(treedp.__all__) == {
        "ContinualStream",
        "continual",
        "load_continual",
        "ApproxDP",
        "PureDP",
        "ZCDP",
        "Bins",
        "BoundsWarning",
        "DataError",
        "ErrorPrediction",
        "InsecureSeededSource",
        "InvalidParameterError",
        "InvalidTypeError",
        "MissingDependencyError",
        "LocalEngine",
        "MechanismOptions",
        "Plan",
        "PrivacyUnit",
        "AutoBound",
        "PrivateBounds",
        "PlanCache",
        "RandomSource",
        "Release",
        "ReleaseFormatError",
        "ReleaseSpec",
        "SqlSource",
        "SystemRandomSource",
        "TableProfile",
        "TreeDPError",
        "TreeShape",
        "__version__",
        "build_query",
        "default_branching",
        "load_release",
        "make_bins",
        "median",
        "noting",
        "plan",
        "predict_error",
        "quantile_exponential",
        "release_cdf",
        "release_counts",
        "release_grouped",
        "run_query",
        "GroupedRelease",
        "load_grouped_release",
        "noisy_mode",
        "stable_median",
        "subsample_and_aggregate",
        "Accountant",
        "BudgetExceededError",
        "Ledger",
        "LedgerError",
        "init_ledger",
        "open_ledger",
        "QuantilesResult",
        "Query",
        "private_bounds",
        "profile",
        "quantiles",
        "quantiles_recursive",
        "PARAMETERS",
        "FileSource",
        "read_column",
        "check_files",
        "convert_keys",
        "is_grouped_file",
        "list_datasets",
        "write_report",
        "check_median",
    }
    assert callable(treedp.median)  # a function, not a module (issue #12, item 6)
    for name in treedp.__all__:
        assert hasattr(treedp, name)


def test_errors_subclass_builtins() -> None:
    assert issubclass(treedp.InvalidParameterError, ValueError)
    assert issubclass(treedp.DataError, ValueError)
    assert issubclass(treedp.InvalidTypeError, TypeError)
    assert issubclass(treedp.ReleaseFormatError, ValueError)
    assert issubclass(treedp.MissingDependencyError, ImportError)
    assert issubclass(treedp.BudgetExceededError, ValueError)
    assert issubclass(treedp.LedgerError, ValueError)


def test_adult_subset() -> None:
    data = load_adult()
    assert tuple(data) == ADULT_COLUMNS
    assert all(col.size == 48_842 for col in data.values())
    assert data["age"].min() == 17 and data["age"].max() == 90


def test_read_column_csv_gz_and_errors(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "x.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("a,b\n1,x\n2,y\n,z\n")
    col = np.asarray(read_column(path, "a"), dtype=float)
    assert col[:2].tolist() == [1.0, 2.0] and np.isnan(col[2])
    with pytest.raises(InvalidParameterError, match="must end in"):
        read_column(_touch(tmp_path), "a")


def test_read_column_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from treedp.engines.files import count as files_count

    monkeypatch.setattr(files_count, "pyarrow_or_none", lambda: None)
    path = tmp_path / "x.csv"
    path.write_text("a,t,s\n1,2024-01-01,u\n2.5,2024-02-01,v\n")
    assert read_column(path, "a").tolist() == [1.0, 2.5]
    assert read_column(path, "t").dtype.kind == "M"
    with pytest.raises(treedp.InvalidTypeError, match="neither numbers nor datetimes"):
        read_column(path, "s")
    with pytest.raises(treedp.MissingDependencyError, match=r"treedp\[parquet\]"):
        (tmp_path / "y.parquet").write_bytes(b"")
        read_column(tmp_path / "y.parquet", "a")


def _touch(tmp_path: Path) -> Path:
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"")
    return path


def test_datasets_submodule_without_its_own_import() -> None:
    """``treedp.datasets.load_adult()`` works after ``import treedp`` alone."""
    import subprocess
    import sys

    code = "import treedp; print(len(treedp.datasets.load_adult()['age']) > 0)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_dir_lists_the_public_names_not_the_module_imports() -> None:
    names = dir(treedp)
    assert set(treedp.__all__) <= set(names) and "datasets" in names
    assert not {"Any", "TYPE_CHECKING", "annotations", "importlib"} & set(names)


def test_parameters_state_the_library_choices_defaults_and_checks(tmp_path: Path) -> None:
    """``PARAMETERS`` is read-only, lists the library's own choices, and checks as it does."""
    params = treedp.PARAMETERS
    assert set(params) >= {"epsilon", "rho", "level", "nan", "mechanism", "method", "path"}
    assert params["nan"].choices == ("error", "drop") and params["nan"].default == "error"
    assert params["mechanism"].choices[0] == "auto" and "tree" in params["mechanism"].choices
    assert params["epsilon"].low == 1e-6 and params["epsilon"].check(1) == 1.0
    assert params["bounds_share"].default == 0.1 and params["n_share"].default == 0.02
    assert params["level"].default == 0.95 and params["level"].check(0.9) == 0.9
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        params["epsilon"].check(0)
    with pytest.raises(InvalidParameterError, match="'nan'"):
        params["nan"].check("zero")
    with pytest.raises(InvalidParameterError, match="ends with a separator"):
        params["path"].check(f"{tmp_path}/")
    with pytest.raises(TypeError):
        params["nan"] = params["level"]  # type: ignore[index]


def test_check_median_refuses_before_any_data_is_read() -> None:
    assert treedp.check_median("tree", 1.0, bounds=(0, 10), bins=8) == 1.0
    left = treedp.check_median("tree", 1.0, bounds="private", bins=8)
    assert 0.85 < left < 1.0  # what the bounds step leaves
    with pytest.raises(InvalidParameterError, match="nan='drop' is not allowed"):
        treedp.check_median("stable", 1.0, neighbours="replace", nan="drop")
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        treedp.check_median("subsample", -1.0, neighbours="replace")
    with pytest.raises(InvalidParameterError, match="'method'"):
        treedp.check_median("mean", 1.0)


def test_file_inputs_are_checked_and_keys_typed(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("g,v\n1,2\n")
    assert treedp.check_files(path) == ([str(path)], "csv")
    with pytest.raises(InvalidParameterError):
        treedp.check_files(tmp_path / "missing.csv")
    source = treedp.FileSource(str(path))
    assert treedp.convert_keys(["1", "2"], source, ["g"]) == ["1", "2"]  # CSV keys stay text
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"g": [1, 2], "v": [0.5, 1.5]}), tmp_path / "x.parquet")
    typed = treedp.convert_keys(["1", "2"], treedp.FileSource(str(tmp_path / "x.parquet")), ["g"])
    assert typed == [1, 2]
    with pytest.raises(InvalidParameterError, match="cannot be read as the type of the column 'g'"):
        treedp.convert_keys(["one"], treedp.FileSource(str(tmp_path / "x.parquet")), ["g"])
