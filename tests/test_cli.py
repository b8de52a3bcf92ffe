"""The CLI, in process: exit codes, stdout, files written, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from treedp import load_release
from treedp.cli import main


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "data.csv"
    rows = ["age,name,when"] + [
        f"{a},p{i},2024-01-{1 + i % 28:02d}" for i, a in enumerate(rng.integers(18, 90, 500))
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("treedp: error:")
    return lines[0]


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
    assert "guarantee: pure" in info and "[SEEDED: not for publication]" in info


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
        (["query", "{csv}", "--cdf", "3"], "not valid JSON"),
        (["query", "{out}", "--cdf", "3"], "No release file"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_errors_are_one_line(
    args: list[str], match: str, csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "never.json"
    argv = [a.format(csv=csv_file, out=out) for a in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert match in _one_error_line(captured.err)
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
    assert "'bins'" in capsys.readouterr().err


SEEDED_END = "X) [SEEDED: not for publication]"


def test_median_command(csv_file: Path, capsys: pytest.CaptureFixture) -> None:
    base = ["median", str(csv_file), "--column", "age", "--epsilon", "1", "--insecure-seed", "1"]
    assert main([*base, "--bounds", "0", "100"]) == 0
    assert capsys.readouterr().out.startswith("median = ")
    assert main([*base, "--method", "exponential", "--bounds", "0", "100"]) == 0
    out = capsys.readouterr().out
    assert (
        "exponential" in out
        and "spent" in out
        and out.rstrip().endswith(SEEDED_END.replace("X", "replace"))
    )
    em = [*base, "--method", "exponential", "--bounds", "0", "100", "--neighbours", "add_remove"]
    assert main(em) == 0
    assert capsys.readouterr().out.rstrip().endswith(SEEDED_END.replace("X", "add_remove"))
    assert main([*base, "--bounds", "0", "100", "--neighbours", "replace"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(SEEDED_END.replace("X", "replace"))
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
    assert rel.neighbours == "add_remove"
    assert np.array_equal(rel.consistent_counts, np.round(rel.consistent_counts))
    assert main(_release_args(csv_file, out, "--postprocess", "none")) == 0
    rel = load_release(out)
    assert (rel.estimator, rel.postprocess, rel.integer) == ("efficient", "none", False)
    capsys.readouterr()
    assert main(_release_args(csv_file, out, "--estimator", "ml")) == 2
    assert "--estimator" in _one_error_line(capsys.readouterr().err)


def test_choices_come_from_the_library() -> None:
    import argparse

    from treedp.cli import _build_parser
    from treedp.estimation import ESTIMATORS, POSTPROCESS
    from treedp.mechanisms.factory import MECHANISMS

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
    assert _one_error_line(bad.stderr)


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
    assert capsys.readouterr().err == ""  # --quiet, and no bar outside a terminal anyway


def test_release_delimiter_and_encoding(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("caf\u00e9;v\n1;2.5\n2;7.5\n".encode("latin-1"))
    out = tmp_path / "r.json"
    assert main(_stream_args(str(path), out)) == 2
    assert "encoding" in _one_error_line(capsys.readouterr().err)
    assert main(_stream_args(str(path), out, "--encoding", "latin-1")) == 2
    assert "not in" in _one_error_line(capsys.readouterr().err)  # ',' splits nothing here
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
    line = _one_error_line(capsys.readouterr().err)
    assert "NaN" in line
    assert not out.exists() and not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*"))
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("v,w\n" + "1,2\n" * 5000 + "3\n")
    assert main(_stream_args(str(ragged), out)) == 2
    assert "number of fields" in _one_error_line(capsys.readouterr().err)
    assert not out.exists()
