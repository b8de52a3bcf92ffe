"""Bad input over every public entry point: a clear TreeDPError naming the argument, never a
numpy warning (warnings are errors in this suite), a crash or a silent wrong answer."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import treedp
from tests.call_forms import release_kwargs
from treedp import (
    DataError,
    InsecureSeededSource,
    InvalidParameterError,
    InvalidTypeError,
    TreeDPError,
)
from treedp.cli import main

GOOD = {"bounds": (0.0, 10.0), "bins": 8, "epsilon": 1.0}


@pytest.fixture(scope="module")
def release() -> treedp.Release:
    return treedp.release_cdf(np.linspace(0, 10, 50), **GOOD, rng=InsecureSeededSource(0))


DATA_CASES = {
    "empty": [],
    "one value": [3.0],
    "all equal": [5.0] * 100,
    "far outside": [-1e308, 1e308, -np.finfo(float).max],
    "integers": np.arange(20),
    "float32": np.arange(20, dtype=np.float32),
}


@pytest.mark.parametrize("name", list(DATA_CASES))
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_awkward_but_valid_data_gives_a_valid_release(name: str, neighbours: str) -> None:
    values = DATA_CASES[name]
    n = len(values) if neighbours == "replace" else None
    rel = treedp.release_cdf(
        values, **GOOD, neighbours=neighbours, n=n, rng=InsecureSeededSource(1)
    )
    cdf = rel.cdf(np.linspace(-1, 11, 30))
    assert np.isfinite(cdf).all() and (np.diff(cdf) >= 0).all()
    q = rel.quantile([0.1, 0.9])
    assert np.isnan(q).all() or ((q >= 0) & (q <= 10)).all()
    if neighbours == "replace":
        assert rel.n == len(values)


TE, PE, DE = InvalidTypeError, InvalidParameterError, DataError

#: (changes, the argument the message names, the exact class: wrong type → InvalidTypeError,
#: wrong value → InvalidParameterError, data breaking a policy → DataError)
BAD_RELEASE_ARGS = [
    ({"values": [1.0, np.nan]}, "NaN", DE),
    ({"values": ["a"]}, "values", TE),
    ({"values": [np.datetime64("2024-01-01"), 3]}, "values", TE),
    ({"values": np.zeros((2, 2))}, "values", TE),
    ({"bounds": (3.0, 3.0)}, "bounds", PE),
    ({"bounds": (4.0, 3.0)}, "bounds", PE),
    ({"bounds": (0.0, math.nan)}, "bounds", PE),
    ({"bounds": "0,10"}, "bounds", TE),
    ({"bounds": 10}, "bounds", TE),
    ({"bounds": (2**53, 2**53 + 1)}, "2**53", PE),
    ({"bounds": (0, 2**53 + 1), "bins": 10}, "2**53", PE),
    ({"bounds": (-(2**63), 2**63)}, "2**53", PE),
    ({"bounds": (0, 2**1100)}, "float64 range", PE),
    ({"bounds": (2**53 - 1, 2**53), "bins": "integers"}, "2**53", PE),
    ({"bounds": (0.0, 2.0**60), "bins": "integers"}, "2**53", PE),
    ({"bins": 0}, "bins", PE),
    ({"bins": -3}, "bins", PE),
    ({"bins": 10**12}, "bins", PE),
    ({"bins": 2.5}, "bins", TE),
    ({"bins": True}, "bins", TE),
    ({"bins": None, "bounds": None, "edges": [[0, 1], [2, 3]]}, "edges", PE),
    ({"epsilon": 0.0}, "epsilon", PE),
    ({"epsilon": -1.0}, "epsilon", PE),
    ({"epsilon": math.nan}, "epsilon", PE),
    ({"epsilon": math.inf}, "epsilon", PE),
    ({"epsilon": "one"}, "epsilon", TE),
    ({"epsilon": None}, "epsilon", TE),
    ({"epsilon": True}, "epsilon", TE),
    ({"neighbours": "bounded"}, "neighbours", PE),
    ({"neighbours": None}, "neighbours", TE),
    ({"neighbours": "replace", "n": 1.5}, "'n'", TE),
    ({"neighbours": "replace", "n": -1}, "'n'", PE),
    ({"mechanism": "gaussian"}, "mechanism", PE),
    ({"mechanism": None}, "mechanism", TE),
    ({"branching": [2, 2]}, "branching", PE),
    ({"branching": 0}, "branching", PE),
    ({"branching": "4"}, "branching", TE),
    ({"branching": [2.5, 4]}, "branching", TE),
    ({"level_budgets": [-1.0, 2.0]}, "level_budgets", PE),
    ({"level_budgets": "0.5"}, "level_budgets", TE),
    ({"level_budgets": ["a", 1.0]}, "level_budgets", TE),
    ({"estimator": "ml"}, "estimator", PE),
    ({"estimator": 1}, "estimator", TE),
    ({"postprocess": "sort"}, "postprocess", PE),
    ({"postprocess": None}, "postprocess", TE),
    ({"integer": "yes"}, "integer", TE),
    ({"nan": "zero"}, "nan", PE),
    ({"nan": False}, "nan", TE),
    ({"rng": 7}, "rng", TE),
    ({"rng": "seed"}, "rng", TE),
    ({"plan": "auto"}, "plan", TE),
]


@pytest.mark.parametrize(("changes", "argument", "err"), BAD_RELEASE_ARGS)
def test_release_cdf_bad_inputs(changes: dict, argument: str, err: type) -> None:
    kwargs = {**GOOD, **changes}
    values = kwargs.pop("values", np.arange(5.0))
    with pytest.raises(TreeDPError) as info:
        treedp.release_cdf(values, **release_kwargs(kwargs))
    assert argument.lower() in str(info.value).lower()
    assert type(info.value) is err


@pytest.mark.parametrize(("changes", "argument", "err"), BAD_RELEASE_ARGS)
def test_release_counts_bad_inputs(changes: dict, argument: str, err: type) -> None:
    """The same parameters, the same exact errors, from release_counts (data rows aside)."""
    if "values" in changes or "nan" in changes:
        return  # data rows, and the missing-value policy: counts have no missing values
    kwargs = {**GOOD, **changes}
    with pytest.raises(TreeDPError) as info:
        treedp.release_counts(np.ones(8, dtype=np.int64), **release_kwargs(kwargs))
    if kwargs.get("bins") != 8 or kwargs.get("edges") is not None:
        return  # the counts no longer match the bins: either error is right
    assert argument.lower() in str(info.value).lower()
    assert type(info.value) is err


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda r: r.cdf(np.nan), "NaN"),
        (lambda r: r.cdf("x"), "'x'"),
        (lambda r: r.cdf(np.datetime64("2024-01-01")), "'x'"),
        (lambda r: r.range_count(5, 1), "a <= b"),
        (lambda r: r.quantile(-0.1), "'q'"),
        (lambda r: r.quantile(np.nan), "'q'"),
        (lambda r: r.quantile([0.5, 2]), "'q'"),
        (lambda r: r.stderr("cdf"), "stderr takes"),
        (lambda r: r.confidence_interval("cdf", 1.0, level=2), "'level'"),
        (lambda r: r.quantile_interval(0.5, simulations=5), "'simulations'"),
        (lambda r: r.quantile_interval(0.5, rng=3), "rng"),
    ],
)
def test_query_bad_inputs(release: treedp.Release, call, argument: str) -> None:
    with pytest.raises(TreeDPError, match=argument):
        call(release)


@pytest.mark.parametrize(
    ("kwargs", "argument", "err"),
    [
        ({"bins": 0, "epsilon": 1.0}, "bins", PE),
        ({"bins": "8", "epsilon": 1.0}, "bins", TE),
        ({"bins": 8, "epsilon": 0}, "epsilon", PE),
        ({"bins": 8, "epsilon": "1"}, "epsilon", TE),
        ({"bins": 8, "epsilon": 1.0, "branching": 1}, "branching", PE),
        ({"bins": 8, "epsilon": 1.0, "neighbours": "x"}, "neighbours", PE),
    ],
)
def test_predict_error_bad_inputs(kwargs: dict, argument: str, err: type) -> None:
    bins = kwargs.pop("bins")
    with pytest.raises(TreeDPError, match=argument) as info:
        treedp.predict_error(bins, **release_kwargs(kwargs))
    assert type(info.value) is err
    if "branching" not in kwargs:  # plan has the same checks, from the same spec
        with pytest.raises(TreeDPError, match=argument) as info:
            treedp.plan(bins, **kwargs)
        assert type(info.value) is err


def test_load_release_bad_files(tmp_path: Path, release: treedp.Release) -> None:
    good = tmp_path / "good.json"
    release.save(good)
    text = good.read_text()
    for content, message in [
        (text[:-10], "corrupt or truncated"),
        ("", "corrupt or truncated"),
        ('{"format": "other"}', "not a treedp release"),
        (text.replace('"format_version":1', '"format_version":2'), "newer"),
        (text.replace('"format_version":1', '"format_version":"1"'), "invalid format"),
    ]:
        path = tmp_path / "bad.json"
        path.write_text(content)
        with pytest.raises(treedp.ReleaseFormatError, match=message):
            treedp.load_release(path)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(treedp.ReleaseFormatError):
        treedp.load_release(binary)


@pytest.mark.parametrize(
    "argv",
    [
        [
            "release",
            "{csv}",
            "--column",
            "v",
            "--bounds",
            "0",
            "10",
            "--bins",
            "0",
            "--epsilon",
            "1",
            "--out",
            "{out}",
        ],
        [
            "release",
            "{csv}",
            "--column",
            "v",
            "--bounds",
            "0",
            "10",
            "--bins",
            "8",
            "--epsilon",
            "nan",
            "--out",
            "{out}",
        ],
        [
            "release",
            "{csv}",
            "--column",
            "v",
            "--bounds",
            "0",
            "10",
            "--bins",
            "8",
            "--epsilon",
            "inf",
            "--out",
            "{out}",
        ],
        [
            "release",
            "{csv}",
            "--column",
            "v",
            "--bounds",
            "a",
            "b",
            "--bins",
            "8",
            "--epsilon",
            "1",
            "--out",
            "{out}",
        ],
        [
            "release",
            "{csv}",
            "--column",
            "v",
            "--bounds",
            "0",
            "10",
            "--bins",
            "8",
            "--epsilon",
            "1",
            "--neighbours",
            "replace",
            "--out",
            "{out}",
        ],
        [
            "release",
            "{nan_csv}",
            "--column",
            "v",
            "--bounds",
            "0",
            "10",
            "--bins",
            "8",
            "--epsilon",
            "1",
            "--out",
            "{out}",
        ],
        [
            "release",
            "{csv}",
            "--column",
            "v",
            "--bounds",
            "0",
            "10",
            "--bins",
            "8",
            "--epsilon",
            "1",
            "--out",
            "{missing_dir}/r.json",
        ],
        ["query", "{csv}", "--quantiles", "0.5"],
        ["query", "{out}", "--quantiles", "2"],
    ],
)
def test_cli_bad_inputs(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("v\n1\n2\n3\n")
    nan_csv = tmp_path / "n.csv"
    nan_csv.write_text("v,w\n1,a\n,b\n3,c\n")
    out = tmp_path / "r.json"
    if "query" in argv and "{out}" in argv:
        assert (
            main(
                [
                    "release",
                    str(csv),
                    "--column",
                    "v",
                    "--bounds",
                    "0",
                    "10",
                    "--bins",
                    "8",
                    "--epsilon",
                    "1",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        capsys.readouterr()
    args = [
        a.format(csv=csv, nan_csv=nan_csv, out=out, missing_dir=tmp_path / "nope") for a in argv
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedp: error:")


values_strategy = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=30),
    st.lists(st.integers(-(10**6), 10**6), max_size=30),
    st.just("text"),
    st.lists(st.booleans(), max_size=3),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=values_strategy,
    epsilon=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2, 60)),
    bins=st.one_of(st.integers(-3, 300), st.just("integers"), st.just(2**40)),
    bounds=st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)),
    neighbours=st.sampled_from(["add_remove", "replace", "other"]),
    mechanism=st.sampled_from(["tree", "histogram", "threshold", "all_intervals"]),
    postprocess=st.sampled_from(["monotone", "monotone_l1", "none"]),
)
def test_public_api_fuzz(values, epsilon, bins, bounds, neighbours, mechanism, postprocess):
    """Any input either gives a sane release or a TreeDPError; nothing else escapes."""
    n = len(values) if neighbours == "replace" and isinstance(values, list) else None
    if bins == "integers":
        bounds = (math.floor(bounds[0]) % 200, math.floor(bounds[0]) % 200 + 50)
    try:
        rel = treedp.release_cdf(
            values,
            epsilon=epsilon,
            bounds=bounds,
            bins=bins,
            neighbours=neighbours,
            n=n,
            mechanism=mechanism,
            postprocess=postprocess,
            nan="error",
            rng=InsecureSeededSource(0),
        )
    except TreeDPError:
        return
    lo, hi = rel.bins.edges[0], rel.bins.edges[-1]
    xs = np.linspace(lo - 1, hi + 1, 7)
    cdf = rel.cdf(xs)
    assert np.isfinite(cdf).all()
    if postprocess != "none":
        assert (np.diff(cdf) >= 0).all() and (cdf >= 0).all()
    assert np.isfinite(rel.stderr("cdf", xs)).all()
    q = rel.quantile([0.25, 0.75])
    assert np.isnan(q).all() or (np.diff(q) >= 0).all()
