"""The CLI, in process: exit codes, stdout, files written, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli_lines import one_error_line
from treedp import load_release
from treedp.cli import main
from treedp.cli._output import SEEDED_QUIET


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "data.csv"
    rows = ["age,name,when"] + [
        f"{a},p{i},2024-01-{1 + i % 28:02d}" for i, a in enumerate(rng.integers(18, 90, 500))
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_release_and_query(csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "rel.json"
    code = main(
        [
            "release",
            str(csv_file),
            "--column",
            "age",
            "--bounds",
            "18",
            "90",
            "--bins",
            "integers",
            "--epsilon",
            "1",
            "--insecure-seed",
            "3",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert "SEEDED" in capsys.readouterr().out
    rel = load_release(out)
    assert rel.seeded and rel.bins.discrete
    assert main(["query", str(out), "--quantiles", "0.25", "0.5"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("quantile(0.25) = ") and len(lines) == 2
    # every answer of a seeded release carries the marker (privacy issue #11, item 6)
    assert all(line.endswith("[SEEDED: not for publication]") for line in lines)
    assert main(["query", str(out), "--cdf", "30", "60"]) == 0
    assert capsys.readouterr().out.count("cdf(") == 2
    assert main(["query", str(out), "--range", "20", "40"]) == 0
    assert capsys.readouterr().out.startswith("range_count([20, 40)) = ")
    assert main(["query", str(out), "--histogram"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 73
    assert main(["query", str(out), "--info"]) == 0
    info = capsys.readouterr().out
    assert "guarantee:" in info and "pure epsilon-DP" in info
    assert "[SEEDED: not for publication]" in info and "records:" in info


def test_release_replace_parquet_and_datetime(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": np.linspace(0, 1, 200)}), tmp_path / "d.parquet")
    out = tmp_path / "p.json"
    assert (
        main(
            [
                "release",
                str(tmp_path / "d.parquet"),
                "--column",
                "x",
                "--bounds",
                "0",
                "1",
                "--bins",
                "64",
                "--epsilon",
                "2",
                "--neighbours",
                "replace",
                "--n",
                "200",
                "--branching",
                "8",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert load_release(out).n == 200
    out2 = tmp_path / "t.json"
    assert (
        main(
            [
                "release",
                str(csv_file),
                "--column",
                "when",
                "--bounds",
                "2024-01-01",
                "2024-02-01",
                "--bins",
                "31",
                "--epsilon",
                "1",
                "--out",
                str(out2),
            ]
        )
        == 0
    )
    assert main(["query", str(out2), "--quantiles", "0.5"]) == 0
    assert "2024-01-" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (
            [
                "release",
                "{csv}",
                "--column",
                "nope",
                "--bounds",
                "0",
                "1",
                "--bins",
                "4",
                "--epsilon",
                "1",
                "--out",
                "{out}",
            ],
            "not in",
        ),
        (
            [
                "release",
                "{csv}",
                "--column",
                "name",
                "--bounds",
                "0",
                "1",
                "--bins",
                "4",
                "--epsilon",
                "1",
                "--out",
                "{out}",
            ],
            "not numeric",
        ),
        (
            [
                "release",
                "{csv}",
                "--column",
                "age",
                "--bounds",
                "5",
                "1",
                "--bins",
                "4",
                "--epsilon",
                "1",
                "--out",
                "{out}",
            ],
            "lo < hi",
        ),
        (
            [
                "release",
                "{csv}",
                "--column",
                "age",
                "--bounds",
                "0",
                "100",
                "--bins",
                "4",
                "--epsilon",
                "-1",
                "--out",
                "{out}",
            ],
            "epsilon",
        ),
        (
            [
                "release",
                "{csv}",
                "--column",
                "age",
                "--bounds",
                "0",
                "100",
                "--bins",
                "x",
                "--epsilon",
                "1",
                "--out",
                "{out}",
            ],
            "--bins",
        ),
        (
            ["release", "{csv}", "--column", "age", "--epsilon", "1", "--out", "{out}"],
            "Public bins are required",
        ),
        (
            [
                "release",
                "missing.csv",
                "--column",
                "age",
                "--bins",
                "4",
                "--epsilon",
                "1",
                "--out",
                "{out}",
            ],
            "does not exist",
        ),
        (
            [
                "release",
                "{csv}",
                "--column",
                "age",
                "--bounds",
                "private",
                "--epsilon",
                "1",
                "--out",
                "{out}",
            ],
            "--bounds private needs --bins",
        ),
        (["query", "{csv}", "--cdf", "3"], "not valid JSON"),
        (["query", "{out}", "--cdf", "3"], "No release file"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
        (["--bogus"], "unrecognized option --bogus: the command comes first"),
    ],
)
def test_errors_are_one_line(
    args: list[str], match: str, csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "never.json"
    argv = [a.format(csv=csv_file, out=out) for a in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert match in one_error_line(captured.err)
    assert not out.exists()
    assert not list(tmp_path.glob("*.tmp"))


def test_demo(capsys: pytest.CaptureFixture) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for column in ("age", "hours_per_week", "capital_gain"):
        assert f"{column}:" in out
    assert "CC BY 4.0" in out


def test_release_file_is_json(csv_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    main(
        [
            "release",
            str(csv_file),
            "--column",
            "age",
            "--bounds",
            "0",
            "100",
            "--bins",
            "10",
            "--epsilon",
            "1",
            "--out",
            str(out),
        ]
    )
    doc = json.loads(out.read_text())
    assert doc["format"] == "treedp.release" and doc["format_version"] == 1


def test_plan_command(capsys: pytest.CaptureFixture) -> None:
    assert (
        main(["plan", "--bins", "1000", "--epsilon", "1", "--neighbours", "replace", "--n", "5000"])
        == 0
    )
    out = capsys.readouterr().out
    assert "plan for B=1000" in out and "expected CDF error" in out and "compared:" in out
    assert main(["plan", "--bins", "0", "--epsilon", "1"]) == 2
    assert "--bins" in capsys.readouterr().err


def _ends(out: str, neighbours: str) -> bool:
    """The answer states its neighbour relation and ends with the seeded mark."""
    return f"{neighbours} neighbours" in out and out.rstrip().endswith(
        ") [SEEDED: not for publication]"
    )


def test_median_command(csv_file: Path, capsys: pytest.CaptureFixture) -> None:
    base = ["median", str(csv_file), "--column", "age", "--epsilon", "1", "--insecure-seed", "1"]
    assert main([*base, "--bounds", "0", "100"]) == 0
    assert capsys.readouterr().out.startswith("median = ")
    assert main([*base, "--method", "exponential", "--bounds", "0", "100"]) == 0
    out = capsys.readouterr().out
    assert "exponential" in out and "spent" in out and _ends(out, "add_remove")
    em = [*base, "--method", "exponential", "--bounds", "0", "100", "--neighbours", "replace"]
    assert main(em) == 0
    assert _ends(capsys.readouterr().out, "replace")
    assert main([*base, "--bounds", "0", "100", "--neighbours", "replace"]) == 0
    assert _ends(capsys.readouterr().out, "replace")
    assert main([*base, "--method", "stable", "--neighbours", "add_remove"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "replace neighbours" in err
    assert main([*base, "--method", "stable"]) == 0
    assert "stable_median" in capsys.readouterr().out
    assert main([*base, "--method", "subsample", "--m", "50", "--resolution", "5"]) == 0
    assert "subsample" in capsys.readouterr().out
    unseeded = base[: base.index("--insecure-seed")]
    assert main([*unseeded, "--bounds", "0", "100"]) == 0
    assert "SEEDED" not in capsys.readouterr().out
    assert main([*base, "--method", "exponential"]) == 2
    assert "--bounds" in capsys.readouterr().err
    assert main([*base, "--method", "subsample"]) == 2


def _release_args(csv_file: Path, out: Path, *extra: str) -> list[str]:
    return [
        "release",
        str(csv_file),
        "--column",
        "age",
        "--bounds",
        "18",
        "90",
        "--bins",
        "integers",
        "--epsilon",
        "1",
        "--insecure-seed",
        "5",
        "--out",
        str(out),
        *extra,
    ]


def test_release_estimator_postprocess_integer(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "rel.json"
    extra = ["--estimator", "direct", "--postprocess", "monotone_l1", "--integer"]
    assert main(_release_args(csv_file, out, *extra, "--neighbors", "add_remove")) == 0
    rel = load_release(out)
    assert (rel.estimator, rel.postprocess, rel.integer) == ("direct", "monotone_l1", True)
    assert not rel.mechanism.least_squares_only  # a plan for the direct estimator: no strategy
    assert rel.neighbours == "add_remove"
    assert np.array_equal(rel.consistent_counts, np.round(rel.consistent_counts))
    assert main(_release_args(csv_file, out, "--postprocess", "none")) == 0
    rel = load_release(out)
    assert (rel.estimator, rel.postprocess, rel.integer) == ("efficient", "none", False)
    capsys.readouterr()
    assert main(_release_args(csv_file, out, "--estimator", "ml")) == 2
    assert "--estimator" in one_error_line(capsys.readouterr().err)


def test_choices_come_from_the_library() -> None:
    import argparse

    from treedp.cli import _build_parser
    from treedp.estimation import ESTIMATORS, POSTPROCESS
    from treedp.mechanisms.registry import MECHANISMS

    parser = _build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    release = sub.choices["release"]
    by_dest = {a.dest: a for a in release._actions}
    assert tuple(by_dest["estimator"].choices) == ESTIMATORS
    assert tuple(by_dest["postprocess"].choices) == POSTPROCESS
    assert tuple(by_dest["mechanism"].choices) == ("auto", *MECHANISMS)
    assert {"--neighbours", "--neighbors"} <= set(by_dest["neighbours"].option_strings)
    for command, sub_parser in sub.choices.items():
        for action in sub_parser._actions:
            assert action.help, f"{command} {action.option_strings or action.dest} has no help"


def test_python_dash_m_treedp(csv_file: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    import treedp

    src = str(Path(treedp.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    version = subprocess.run(
        [sys.executable, "-m", "treedp", "--version"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert version.returncode == 0 and version.stdout.strip() == f"treedp {treedp.__version__}"
    out = tmp_path / "rel.json"
    run = subprocess.run(
        [sys.executable, "-m", "treedp", *_release_args(csv_file, out, "--mechanism", "histogram")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert load_release(out).mechanism.name == "histogram"
    bad = subprocess.run(
        [sys.executable, "-m", "treedp", "release"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert bad.returncode == 2
    assert one_error_line(bad.stderr)


def test_read_column_error_classes(csv_file: Path) -> None:
    from treedp.exceptions import InvalidParameterError, InvalidTypeError
    from treedp.io import read_column

    for args, err in [
        ((123, "age"), InvalidTypeError),
        ((csv_file, 0), InvalidTypeError),
        ((csv_file, "nope"), InvalidParameterError),
        ((csv_file.with_suffix(".txt"), "age"), InvalidParameterError),
    ]:
        with pytest.raises(err) as info:
            read_column(*args)
        assert type(info.value) is err


# ---------------------------------------------------------------------- issue 17: the CLI
def _seeded_release(csv_file: Path, tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "q.tdp"
    argv = ["release", str(csv_file), "--column", "age", "--bounds", "0", "100", "--bins", "20"]
    assert main([*argv, "--epsilon", "1", "--insecure-seed", "2", "--out", str(out), *extra]) == 0
    return out  # its "wrote ..." line is left in the capture: callers read it first


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"age,b\n1,2\n3\n5,6,7\n", "number of fields differs"),  # ragged rows
        (b"ag\xe9,b\n1,2\n", "not valid UTF-8"),  # a Latin-1 header
    ],
)
def test_reader_failures_are_one_line(
    content: bytes, match: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    out = tmp_path / "r.tdp"
    argv = ["release", str(path), "--column", "age", "--bounds", "0", "9", "--bins", "3"]
    code = main([*argv, "--epsilon", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and match in one_error_line(err) and "internal" not in err
    assert not out.exists()


def test_arguments_are_checked_before_the_data_is_read(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import treedp.cli.median as median_cli
    import treedp.cli.release as release_cli

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was read")

    monkeypatch.setattr(release_cli, "release_of", never)  # runs the query: reads the data
    monkeypatch.setattr(median_cli, "read_inputs", never)
    base = ["release", str(csv_file), "--column", "age", "--bounds", "0", "100", "--bins", "8"]
    out = str(tmp_path / "r.tdp")
    cases = [
        ([*base, "--epsilon", "0", "--out", out], "--epsilon"),
        ([*base, "--epsilon", "1", "--out", f"{tmp_path}/"], "ends with a separator"),
        ([*base, "--epsilon", "1", "--out", str(tmp_path / "no" / "r.tdp")], "does not exist"),
        ([*base, "--epsilon", "1", "--out", str(tmp_path)], "is a folder"),
        ([*base, "--epsilon", "1", "--neighbours", "replace", "--out", out], "--n"),
        (
            [
                *base,
                "--epsilon",
                "1",
                "--nan",
                "drop",
                "--neighbors",
                "replace",
                "--n",
                "5",
                "--out",
                out,
            ],
            "--nan drop is not allowed with --neighbours replace",
        ),
        (
            [*base, "--epsilon", "1", "--mechanism", "histogram", "--branching", "2", "--out", out],
            "--branching",
        ),
        (
            ["median", str(csv_file), "--column", "age", "--epsilon", "-1", "--bounds", "0", "9"],
            "--epsilon",
        ),
        (
            [
                "median",
                str(csv_file),
                "--column",
                "age",
                "--epsilon",
                "1",
                "--method",
                "stable",
                "--bins",
                "8",
            ],
            "--bins does not apply to --method stable",
        ),
        (
            [
                "median",
                str(csv_file),
                "--column",
                "age",
                "--epsilon",
                "1",
                "--method",
                "subsample",
                "--m",
                "10",
                "--delta",
                "2",
            ],
            "--delta must be in (0, 1)",
        ),
    ]
    for argv, words in cases:
        assert main(argv) == 2, argv
        line = one_error_line(capsys.readouterr().err)
        assert words in line, (argv, line)
        assert "nan='" not in line and "The 'epsilon' parameter" not in line


def test_bad_edges_are_one_line(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    base = ["release", str(csv_file), "--epsilon", "1", "--out", str(tmp_path / "r.tdp")]
    for extra, words in [
        (["--column", "age", "--edges", "0", "abc", "10"], "mixes numbers and datetimes"),
        (["--column", "when", "--edges", "2024-01-01", "2024-01-5x"], "--edges takes"),
        (["--column", "age", "--edges", "0", "50", "20"], "--edges must be strictly"),
    ]:
        assert main([*base, *extra]) == 2
        assert words in one_error_line(capsys.readouterr().err)


def test_integer_bounds_beyond_2_53_and_bad_datetimes(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    base = ["release", str(csv_file), "--epsilon", "1", "--out", str(tmp_path / "r.tdp")]
    for extra, words in [
        (["--column", "age", "--bounds", "0", "9007199254740993", "--bins", "10"], "2**53"),
        (["--column", "age", "--bounds", "0", str(2**53), "--bins", "integers"], "2**53"),
        (["--column", "when", "--bounds", "2024-01-01", "2024-13-45", "--bins", "4"], "datetime"),
    ]:
        assert main([*base, *extra]) == 2
        assert words in one_error_line(capsys.readouterr().err)


def test_interrupt_is_one_line_exit_130_and_no_file(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    def interrupt(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    out = tmp_path / "r.tdp"
    argv = ["release", str(csv_file), "--column", "age", "--bounds", "0", "100", "--bins", "8"]
    assert main([*argv, "--epsilon", "1", "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip() == "treedp: interrupted"
    assert list(tmp_path.iterdir()) == [csv_file]


def test_interrupt_while_starting_is_one_line(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the CLI imports its subcommands and builds its parser: one line, 130."""
    import treedp.cli

    def interrupt() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(treedp.cli, "_build_parser", interrupt)
    assert main(["plan", "--bins", "8", "--epsilon", "1"]) == 130
    assert capsys.readouterr().err.strip() == "treedp: interrupted"


def test_query_errors_are_one_line(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rel = _seeded_release(csv_file, tmp_path)
    capsys.readouterr()
    for extra, words in [
        (["--cdf", "abc"], "--cdf takes numbers"),
        (["--range", "1", "x"], "--range takes numbers"),
        (["--quantiles", "half"], "--quantiles takes probabilities"),
        (["--quantiles", "1.5"], "--quantiles takes probabilities in [0, 1]; got '1.5'"),
        (["--median", "--level", "1"], "--level"),
        ([], "at least one of"),
    ]:
        assert main(["query", str(rel), *extra]) == 2
        assert words in one_error_line(capsys.readouterr().err)


def test_edited_release_with_recomputed_checksum_is_one_line(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from treedp.release.format import _checksum

    out = tmp_path / "r.json"
    argv = ["release", str(csv_file), "--column", "age", "--bounds", "0", "100", "--bins", "8"]
    assert main([*argv, "--epsilon", "1", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    doc["payload"]["metadata"]["scales"][0] = True
    doc["checksum"] = _checksum(doc["payload"])
    out.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["query", str(out), "--median"]) == 2
    assert "inconsistent release" in one_error_line(capsys.readouterr().err)


def test_query_several_types_negative_numbers_and_intervals(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rel_path = _seeded_release(csv_file, tmp_path)
    capsys.readouterr()
    rel = load_release(rel_path)
    argv = ["query", str(rel_path), "--cdf", "-1e3", "-.5", "50", "--range", "-1E2", "40"]
    argv += ["--range", "20", "60", "--quantiles", "0.25", "--median", "--ci", "--level", "0.9"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 7 and all(line.endswith("[SEEDED: not for publication]") for line in lines)
    assert lines[0].startswith("cdf(-1e3) = 0.0 ")
    assert "0.9 interval incl. within-bin uncertainty [" in lines[0]
    assert lines[3].startswith("range_count([-1E2, 40)) = ") and "se " in lines[3]
    assert lines[6].startswith("median = ")
    low, high = rel.confidence_interval("cdf", 50.0, level=0.9)
    assert f"[{low:.1f}, {high:.1f}]" in lines[2]


def test_query_json_and_csv(csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import csv as csv_module
    import io

    rel_path = _seeded_release(csv_file, tmp_path)
    capsys.readouterr()
    rel = load_release(rel_path)
    argv = ["query", str(rel_path), "--cdf", "50", "--histogram", "--ci", "--info"]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["seeded"] is True and doc["note"] == "[SEEDED: not for publication]"
    assert doc["level"] == 0.95 and "records" in doc["info"]
    first = doc["answers"][0]
    assert first["query"] == "cdf" and first["args"] == ["50"]
    assert first["estimate"] == pytest.approx(rel.cdf(50.0))
    assert first["stderr"] == pytest.approx(rel.stderr("cdf", 50.0))
    hist = [a for a in doc["answers"] if a["query"] == "histogram"]
    assert len(hist) == 20 and hist[0]["args"] == ["0.0", "5.0"]
    assert main([*argv[:-1], "--format", "csv"]) == 0
    rows = list(csv_module.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 21 and rows[0]["query"] == "cdf" and rows[0]["a"] == "50"
    assert float(rows[0]["estimate"]) == pytest.approx(rel.cdf(50.0))
    assert all(r["note"] == "[SEEDED: not for publication]" for r in rows)
    assert float(rows[1]["low"]) <= float(rows[1]["estimate"]) <= float(rows[1]["high"])


def test_query_info_is_readable(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rel_path = _seeded_release(csv_file, tmp_path)
    capsys.readouterr()
    assert main(["query", str(rel_path), "--info"]) == 0
    out = capsys.readouterr().out
    for words in [
        "mechanism:",
        "pure epsilon-DP, epsilon=1",
        "20 equal-width bins over [0",
        "records:",
        "estimated",
        "seeded with 2 [SEEDED",
    ]:
        assert words in out, out
    assert "{" not in out and "[[" not in out  # no Python reprs


def test_query_prints_the_bounds_warning(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("v\n" + "\n".join(str(x) for x in [5] * 50 + list(range(10))) + "\n")
    out = tmp_path / "r.tdp"
    argv = ["release", str(path), "--column", "v", "--bounds", "0", "4", "--bins", "8"]
    assert main([*argv, "--epsilon", "2", "--insecure-seed", "1", "--out", str(out)]) == 0
    assert "treedp: warning: The last bin holds" in capsys.readouterr().err
    assert main(["query", str(out), "--median"]) == 0
    err = capsys.readouterr().err
    assert "treedp: warning: The last bin holds" in err and "widen the bounds" in err


def test_median_datetimes_nan_and_refusal(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "d.csv"
    rows = [f"{i * 0.37:.3f},2024-01-{1 + i % 28:02d}" for i in range(200)] + [",2024-02-01"]
    path.write_text("x,when\n" + "\n".join(rows) + "\n")
    base = ["median", str(path), "--epsilon", "1", "--insecure-seed", "3"]
    dt = ["--column", "when", "--bounds", "2024-01-01", "2024-02-01"]
    assert main([*base, *dt]) == 0
    out = capsys.readouterr().out
    assert out.startswith("median = 2024-01-") and "add_remove neighbours (the default" in out
    assert main([*base, *dt, "--method", "exponential"]) == 0
    assert capsys.readouterr().out.startswith("median = 2024-01-")
    assert main([*base, "--column", "x", "--bounds", "0", "80"]) == 2
    assert "--nan drop" in one_error_line(capsys.readouterr().err)
    assert main([*base, "--column", "x", "--bounds", "0", "80", "--nan", "drop"]) == 0
    assert capsys.readouterr().out.startswith("median = ")
    path.write_text("x\n" + "\n".join(f"{i * 0.37:.3f}" for i in range(200)) + "\n")
    assert main([*base, "--column", "x", "--method", "stable"]) == 0
    out = capsys.readouterr().out
    assert "refused (⊥)" in out and "continuous column" in out and "--method tree" in out


def _all_actions(parser: Any, name: str = "treedp") -> Any:
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, child in action.choices.items():
                yield from _all_actions(child, sub_name)
        else:
            yield name, action


def test_every_option_has_help_and_neighbors_is_accepted() -> None:
    from treedp.cli import _build_parser

    parser = _build_parser()
    missing = [(cmd, a.dest) for cmd, a in _all_actions(parser) if not a.help and a.dest != "help"]
    assert missing == []
    spellings = {cmd: a.option_strings for cmd, a in _all_actions(parser) if a.dest == "neighbours"}
    assert spellings and all("--neighbors" in s for s in spellings.values())


def test_version_is_fast_and_light() -> None:
    """``treedp --version`` loads no scipy, pandas or pyarrow (what costs most at start-up)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import treedp.cli\n"
        "try:\n    treedp.cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('scipy', 'pandas', 'pyarrow', 'polars') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip().endswith("[]"), done.stdout
    assert done.stdout.startswith("treedp ")


# ------------------------------------------------------------------ streaming inputs (issue 13)
def _stream_args(src: str, out: Path, *extra: str) -> list[str]:
    return [
        "release",
        src,
        "--column",
        "v",
        "--bounds",
        "0",
        "10",
        "--bins",
        "8",
        "--epsilon",
        "1",
        "--insecure-seed",
        "4",
        "--quiet",
        "--out",
        str(out),
        *extra,
    ]


@pytest.fixture
def many_forms(tmp_path: Path) -> Path:
    import gzip

    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    values = np.random.default_rng(2).uniform(0, 10, 3000)
    d = tmp_path / "forms"
    (d / "dir").mkdir(parents=True)
    pq.write_table(pa.table({"v": values}), d / "v.parquet", row_group_size=500)
    feather.write_feather(pa.table({"v": values}), d / "v.feather")
    text = "v\n" + "".join(f"{float(x)!r}\n" for x in values)
    with gzip.open(d / "v.csv.gz", "wt") as handle:
        handle.write(text)
    (d / "v.csv").write_text(text)
    (d / "semi.csv").write_text("w;v\n" + text[2:].replace("\n", ";\n").replace(";\n", "\n"))
    for k, part in enumerate(np.array_split(values, 3)):
        pq.write_table(pa.table({"v": part}), d / "dir" / f"p{k}.parquet")
    return d


def test_release_every_file_form_gives_one_answer(
    many_forms: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    answers = []
    for src in ("v.parquet", "v.feather", "v.csv.gz", "v.csv", "dir", "dir/*.parquet", "dir/p0"):
        out = tmp_path / f"{src.replace('/', '_').replace('*', 'x')}.json"
        if src == "dir/p0":  # several files, as a shell expands a glob
            src = " ".join(str(many_forms / "dir" / f"p{k}.parquet") for k in range(3))
        args = _stream_args(str(many_forms / src), out)
        if " " in src:
            args[1:2] = src.split(" ")
        assert main(args) == 0, capsys.readouterr().err
        answers.append(load_release(out).cdf([2.5, 5.0]).tolist())
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO((many_forms / "v.csv").read_bytes()))
    )
    assert main(_stream_args("-", tmp_path / "stdin.json")) == 0
    answers.append(load_release(tmp_path / "stdin.json").cdf([2.5, 5.0]).tolist())
    assert all(a == answers[0] for a in answers)
    err = capsys.readouterr().err.splitlines()  # --quiet, and no bar outside a terminal
    assert set(err) == {SEEDED_QUIET} and len(err) == 8  # only each run's seeded mark


def test_release_delimiter_and_encoding(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("caf\u00e9;v\n1;2.5\n2;7.5\n".encode("latin-1"))
    out = tmp_path / "r.json"
    assert main(_stream_args(str(path), out)) == 2
    assert "encoding" in one_error_line(capsys.readouterr().err)
    assert main(_stream_args(str(path), out, "--encoding", "latin-1")) == 2
    assert "not in" in one_error_line(capsys.readouterr().err)  # ',' splits nothing here
    assert main(_stream_args(str(path), out, "--encoding", "latin-1", "--delimiter", ";")) == 0
    assert load_release(out).bins.n_bins == 8


def test_failure_mid_stream_leaves_no_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = np.linspace(0, 10, 20_000)
    values[-3] = np.nan  # in the last row group, after the others were counted
    pq.write_table(pa.table({"v": values}), tmp_path / "late.parquet", row_group_size=1000)
    out = tmp_path / "r.json"
    assert main(_stream_args(str(tmp_path / "late.parquet"), out)) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "NaN" in line
    assert not out.exists() and not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*"))
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("v,w\n" + "1,2\n" * 5000 + "3\n")
    assert main(_stream_args(str(ragged), out)) == 2
    assert "number of fields" in one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_query_quantile_errors_name_the_option(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "r.json"
    args = ["release", str(csv_file), "--column", "age", "--bounds", "0", "100"]
    assert main([*args, "--bins", "10", "--epsilon", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--quantiles", "1.5"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "--quantiles takes probabilities" in line and "'q'" not in line


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--bounds", "0", "100", "--bounds-share", "0.5"], "--bounds-share applies only"),
        (["--bounds", "0", "100", "--bins", "7", "--method", "recursive"], "--bins B does not"),
        (["--bounds", "0", "100", "--bins", "7", "--method", "exponential"], "--bins B does not"),
    ],
)
def test_quantiles_refuses_options_it_would_ignore(
    extra: list[str], match: str, csv_file: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["quantiles", str(csv_file), "--column", "age", "--q", "0.5", "--epsilon", "1"]
    assert main([*argv, *extra]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert match in line and "(see 'treedp quantiles --help')" in line


def test_quantiles_integer_bins_with_recursive_are_allowed(
    csv_file: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["quantiles", str(csv_file), "--column", "age", "--q", "0.5", "--epsilon", "1"]
    extra = ["--bounds", "0", "100", "--bins", "integers", "--method", "recursive"]
    assert main([*argv, *extra, "--insecure-seed", "1"]) == 0
    assert "method recursive" in capsys.readouterr().out


def test_quantiles_takes_a_public_n(csv_file: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["quantiles", str(csv_file), "--column", "age", "--q", "0.25", "0.5", "0.75"]
    common = ["--epsilon", "1", "--bounds", "0", "100", "--insecure-seed", "2"]
    assert main([*argv, *common, "--n", "500"]) == 0
    assert "method" in capsys.readouterr().out
    assert main([*argv, *common, "--n", "-3"]) == 2
    assert "--n" in one_error_line(capsys.readouterr().err)
