"""Grouped releases: one tree per public key, the person-level contract, files, bad input."""

from __future__ import annotations

import io
import math
import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

import treedp
from tests.sources import CountingSource
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.api_grouped import selection_threshold
from treedp.exceptions import (
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    ReleaseFormatError,
)
from treedp.privacy import ApproxDP, PureDP


def _data(n=3000, seed=TEST_SEED):
    rng = np.random.default_rng(seed)
    return {
        "age": rng.integers(17, 91, n),
        "state": rng.choice(["CA", "NY", "TX", "WA"], n),
        "person": rng.integers(0, n // 3, n),
    }


OPTS = {"bounds": (17, 90), "bins": "integers", "epsilon": 1.0}


def test_one_tree_per_public_key_and_absent_keys_are_released() -> None:
    d = _data()
    keys = ["CA", "NY", "ZZ"]
    gr = treedp.release_grouped(
        d["age"], by=d["state"], keys=keys, rng=InsecureSeededSource(TEST_SEED), **OPTS
    )
    assert isinstance(gr, treedp.GroupedRelease)
    assert list(gr) == keys and len(gr) == 3 and "ZZ" in gr and "TX" not in gr
    assert gr.seeded and "SEEDED" in repr(gr)
    assert gr.unit == "record" and gr.bounds.max_contributions == 1
    assert "one row is one person" in repr(gr)
    # one plan: every key shares the mechanism, so the same shape and scales
    mechs = {id(gr[k].mechanism) for k in gr}
    assert len(mechs) == 1
    for k in keys:
        rel = gr[k]
        assert isinstance(rel, treedp.Release)
        for fn in (rel.cdf(50), rel.range_count(20, 60), rel.median(), rel.histogram()):
            assert fn is not None
    # the absent key is noise around 0; a present key around its true count
    assert abs(gr["ZZ"].n) < 200
    assert abs(gr["CA"].n - (d["state"] == "CA").sum()) < 200
    with pytest.raises(InvalidParameterError):
        gr["TX"]


def test_the_output_does_not_depend_on_which_keys_are_present() -> None:
    """Same seed, data with and without key 'NY': same keys, shapes and metadata."""
    d = _data()
    no_ny = d["state"] != "NY"
    a = treedp.release_grouped(
        d["age"], by=d["state"], keys=["CA", "NY"], rng=InsecureSeededSource(1), **OPTS
    )
    b = treedp.release_grouped(
        d["age"][no_ny],
        by=d["state"][no_ny],
        keys=["CA", "NY"],
        rng=InsecureSeededSource(1),
        **OPTS,
    )
    assert a.keys == b.keys and a.metadata() == b.metadata()
    for k in a:
        assert [lv.shape for lv in a[k].noisy_levels] == [lv.shape for lv in b[k].noisy_levels]
    # with the same noise, CA's trees are identical (its records are the same)
    assert all(
        np.array_equal(x, y)
        for x, y in zip(a["CA"].noisy_levels, b["CA"].noisy_levels, strict=True)
    )


@pytest.mark.parametrize(
    ("m", "g", "c", "factor"), [(3, None, None, 3), (4, 2, 1, 2), (5, 2, 2, 4)]
)
def test_noise_is_scaled_by_the_contribution_factor(m, g, c, factor) -> None:
    d = _data()
    gr = treedp.release_grouped(
        d,
        column="age",
        by="state",
        keys=["CA", "NY"],
        privacy_unit="person",
        max_contributions=m,
        max_groups=g,
        max_contributions_per_group=c,
        rng=InsecureSeededSource(2),
        **OPTS,
    )
    assert gr.contribution_factor == factor
    mech = gr["CA"].mechanism
    spent = factor * mech.epsilon_spent()
    assert spent <= Fraction(1.0)
    assert isinstance(gr.guarantee, PureDP) and gr.guarantee.epsilon <= 1.0
    assert gr.guarantee.epsilon > 0.999
    # every level's scale is at least Δ / ε_l for the person-level budgets Δ·ε'_l
    for s, e in zip(mech.scales, mech.block_epsilons, strict=True):
        if e == 0:  # a level the plan switched off (the root): not measured at all
            assert s is None
            continue
        assert s is not None and float(s) >= 1 / e * (1 - 1e-12)
    rec = gr.spend()
    assert rec.unit == "person:person" and rec.measure == gr.guarantee
    assert rec.parameters["contribution_factor"] == factor


def test_replace_doubles_the_factor() -> None:
    d = _data()
    gr = treedp.release_grouped(
        d,
        column="age",
        by="state",
        keys=["CA"],
        privacy_unit="person",
        max_contributions=2,
        neighbours="replace",
        rng=InsecureSeededSource(3),
        **OPTS,
    )
    assert gr.contribution_factor == 4 and gr.neighbours == "replace"


def test_dataframes_and_arrays_agree() -> None:
    d = _data()
    keys = ["CA", "NY", "TX", "WA"]
    common = dict(keys=keys, privacy_unit="person", max_contributions=2, **OPTS)
    out = []
    for table in (d, pd.DataFrame(d), pl.DataFrame(d)):
        gr = treedp.release_grouped(
            table, column="age", by="state", rng=InsecureSeededSource(4), **common
        )
        out.append(gr)
    arr = treedp.release_grouped(
        d["age"],
        by=d["state"],
        keys=keys,
        privacy_unit=d["person"],
        max_contributions=2,
        rng=InsecureSeededSource(4),
        **OPTS,
    )
    out.append(arr)
    for gr in out[1:]:
        for k in keys:
            for x, y in zip(gr[k].noisy_levels, out[0][k].noisy_levels, strict=True):
                assert np.array_equal(x, y)


def test_several_by_columns_and_tuple_keys_round_trip(tmp_path) -> None:
    d = _data()
    d["sex"] = np.where(d["person"] % 2 == 0, "F", "M")
    keys = [("CA", "F"), ("CA", "M"), ("NY", "F")]
    gr = treedp.release_grouped(
        pd.DataFrame(d),
        column="age",
        by=["state", "sex"],
        keys=keys,
        rng=InsecureSeededSource(5),
        **OPTS,
    )
    assert gr.keys == tuple(keys) and gr.by == ("state", "sex")
    path = tmp_path / "g.tdp"
    gr.save(path)
    back = treedp.load_grouped_release(path)
    assert back.keys == gr.keys and back.guarantee == gr.guarantee
    for k in keys:
        for x, y in zip(gr[k].noisy_levels, back[k].noisy_levels, strict=True):
            assert np.array_equal(x, y)
    table = back.table([0.5])
    assert table["state"] == ["CA", "CA", "NY"] and table["sex"] == ["F", "M", "F"]
    frame = back.to_frame([0.25, 0.75])
    assert list(frame.columns) == ["state", "sex", "q", "value", "n_hat", "low_signal"]
    assert len(frame) == 6
    # with a level, each key's quantile interval (a new user's run: the CLI's --ci had them)
    sims = InsecureSeededSource(7)
    wide = back.to_frame([0.25, 0.75], level=0.9, rng=sims)
    assert list(wide.columns) == [
        "state", "sex", "q", "value", "low", "high", "n_hat", "low_signal",
    ]  # fmt: skip
    assert (wide["low"] <= wide["value"]).all() and (wide["value"] <= wide["high"]).all()
    low, high = back[keys[0]].quantile_interval(
        [0.25, 0.75], level=0.9, rng=InsecureSeededSource(7)
    )
    assert wide["low"].iloc[:2].tolist() == list(low) and wide["high"].iloc[:2].tolist() == list(
        high
    )


def test_date_and_datetime_keys_round_trip(tmp_path) -> None:
    """Keys of a date or datetime ``by`` column are written as tagged ISO text and read back
    as dates, datetimes (a ``Timestamp`` too) and ``datetime64`` values."""
    import datetime as dt

    days = np.array(["2024-01-01", "2024-01-02", "2024-01-03"], dtype="datetime64[ns]")
    frame = pd.DataFrame({"d": days[np.arange(30) % 3], "x": np.linspace(1, 90, 30)})
    keys = [dt.date(2024, 1, 1), pd.Timestamp("2024-01-02"), np.datetime64("2024-01-03")]
    gr = treedp.release_grouped(
        frame, column="x", by="d", keys=keys, rng=InsecureSeededSource(5), **OPTS
    )
    path = tmp_path / "g.tdp"
    gr.save(path)
    back = treedp.load_grouped_release(path)
    assert back.keys == (dt.date(2024, 1, 1), dt.datetime(2024, 1, 2), np.datetime64("2024-01-03"))
    assert [back[k].n for k in back.keys] == [gr[k].n for k in gr.keys]


def test_file_is_checksummed_and_validated(tmp_path) -> None:
    d = _data()
    gr = treedp.release_grouped(
        d["age"], by=d["state"], keys=["CA", "NY"], rng=InsecureSeededSource(6), **OPTS
    )
    buf = io.BytesIO()
    gr.save(buf)
    raw = buf.getvalue()
    back = treedp.load_grouped_release(io.BytesIO(raw))
    assert back.quantile(0.5) == gr.quantile(0.5)
    # tamper with one noisy count: the array checksum fails
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as zin, zipfile.ZipFile(out, "w") as zout:
        last = max(n for n in zin.namelist() if n.startswith("level_"))  # a noised block
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == last:
                data = data[:-1] + bytes([data[-1] ^ 1])
            zout.writestr(item, data)
    with pytest.raises(ReleaseFormatError):
        treedp.load_grouped_release(io.BytesIO(out.getvalue()))
    with pytest.raises(ReleaseFormatError):
        treedp.load_grouped_release(io.BytesIO(raw[:100]))
    with pytest.raises(ReleaseFormatError):
        treedp.load_grouped_release(tmp_path / "missing.tdp")
    plain = tmp_path / "plain.tdp"
    gr["CA"].save(plain)
    with pytest.raises(ReleaseFormatError):
        treedp.load_grouped_release(plain)


def test_discrete_quantile_reads_the_inverse_cdf_integer() -> None:
    """At a huge epsilon the reading is the data's inverse-CDF integer: its rank gap (the
    distance from q n to the ranks [#(x < v), #(x <= v)] it holds) is a few counts at most."""
    rng = np.random.default_rng(TEST_SEED + 7)
    ages = rng.integers(17, 91, 5000)
    gr = treedp.release_grouped(
        ages,
        by=np.zeros(5000, dtype=int),
        keys=[0],
        bounds=(17, 90),
        bins="integers",
        epsilon=50.0,
        rng=InsecureSeededSource(7),
    )
    qs = np.linspace(0.01, 0.99, 99)
    est = np.asarray(gr.quantile(qs)[0])
    xs = np.sort(ages)
    below = np.searchsorted(xs, est, side="left") - qs * xs.size
    above = qs * xs.size - np.searchsorted(xs, est, side="right")
    assert np.maximum(0.0, np.maximum(below, above)).max() <= 2.0  # noise at ε = 50


def test_private_key_selection() -> None:
    rng = np.random.default_rng(TEST_SEED + 8)
    n = 4000
    state = np.where(rng.uniform(size=n) < 0.5, "big", "other")
    state[:3] = "rare"  # one person's three rows: never selected at delta = 1e-9
    person = np.arange(n)
    person[:3] = 0
    d = {"age": rng.integers(17, 91, n), "state": state, "person": person}
    gr = treedp.release_grouped(
        d,
        column="age",
        by="state",
        privacy_unit="person",
        max_contributions=3,
        delta=1e-9,
        rng=InsecureSeededSource(8),
        **OPTS,
    )
    assert set(gr.keys) == {"big", "other"}
    assert isinstance(gr.guarantee, ApproxDP) and gr.guarantee.delta == 1e-9
    assert gr.guarantee.epsilon <= 1.0
    sel = gr.selection
    assert sel is not None and sel["threshold"] >= 2


@pytest.mark.parametrize("g", [1, 3])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_selection_threshold_is_the_smallest_meeting_delta(g, delta) -> None:
    scale = Fraction(2 * g)
    eps = 0.5
    tau = selection_threshold(scale, g, eps, delta)
    p = math.exp(-1 / float(scale))

    def delta_of(t):
        return math.exp(eps) * g * p ** (t - 1) / (1 + p)

    assert delta_of(tau) <= delta
    assert tau == 2 or delta_of(tau - 1) > delta


class _Untouchable(dict):
    """A table whose values must not be read (only its schema)."""

    def __getitem__(self, key):
        raise AssertionError("data read before the parameters were checked")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (dict(by="nope", keys=["a"]), InvalidParameterError),
        (dict(by="s", keys=["a"], privacy_unit="nope", max_contributions=1), InvalidParameterError),
        (dict(by="s", keys=["a", None]), InvalidParameterError),
        (dict(by="s", keys=["a", "a"]), InvalidParameterError),
        (dict(by="s", keys=["a"], privacy_unit="p", max_contributions=0), InvalidParameterError),
        (dict(by="s", keys=["a"], privacy_unit="p", max_contributions=1.5), InvalidTypeError),
        (
            dict(by="s", keys=["a"], privacy_unit="p", max_groups=-1, max_contributions=2),
            InvalidParameterError,
        ),
        (dict(by="s", keys=["a"], max_contributions=2), InvalidParameterError),
        (dict(by="s"), InvalidParameterError),
        (dict(by="s", keys=["a"], delta=1e-6), InvalidParameterError),
        (dict(by="s", keys=["a"], n=5), TypeError),  # not a parameter of release_grouped
        (dict(by="s", keys="a"), InvalidTypeError),
    ],
)
def test_bad_input_is_refused_before_data_is_read(kwargs, error) -> None:
    table = _Untouchable(v=[1], s=["a"], p=[1])
    with pytest.raises(error) as exc:
        treedp.release_grouped(table, column="v", epsilon=1.0, bounds=(0, 10), bins=4, **kwargs)
    message = str(exc.value)
    assert "1 row" not in message and "[1]" not in message  # names parameters, not data


def test_missing_keys_and_ids_follow_the_nan_policy() -> None:
    d = {
        "v": np.array([1.0, 2.0, 3.0]),
        "s": np.array(["a", None, "a"], dtype=object),
        "p": np.array([1, 2, 3]),
    }
    with pytest.raises(DataError):
        treedp.release_grouped(
            d, column="v", by="s", keys=["a"], epsilon=1.0, bounds=(0, 4), bins=4
        )
    gr = treedp.release_grouped(
        d,
        column="v",
        by="s",
        keys=["a"],
        nan="drop",
        epsilon=1.0,
        bounds=(0, 4),
        bins=4,
        rng=InsecureSeededSource(9),
    )
    assert list(gr) == ["a"]
    d2 = dict(d, s=np.array(["a", "a", "a"]), p=np.array([1.0, np.nan, 2.0]))
    with pytest.raises(DataError):
        treedp.release_grouped(
            d2,
            column="v",
            by="s",
            keys=["a"],
            privacy_unit="p",
            max_contributions=1,
            epsilon=1.0,
            bounds=(0, 4),
            bins=4,
        )


def test_privacy_unit_without_by_is_a_release_with_the_person_level_guarantee(
    tmp_path: Path,
) -> None:
    """Issue 28 item 6: a privacy unit without ``by`` gives one Release (not a grouped
    release keyed ``()``), whose guarantee is the person's: Δ = 2 times the tree's ε."""
    d = _data()
    rel = treedp.release_grouped(
        d,
        column="age",
        privacy_unit="person",
        max_contributions=2,
        rng=InsecureSeededSource(10),
        **OPTS,
    )
    assert isinstance(rel, treedp.Release) and rel.unit is not None
    assert rel.unit.label == "person:person" and rel.neighbours == "add_remove"
    assert rel.guarantee.epsilon <= 1.0 and rel.guarantee.epsilon == pytest.approx(1.0)
    assert rel.mechanism.epsilon_spent() * 2 <= 1.0 and rel.n > 0
    same = treedp.release_cdf(
        d,
        column="age",
        privacy_unit=treedp.PrivacyUnit("person", max_contributions=2),
        rng=InsecureSeededSource(10),
        **OPTS,
    )
    assert np.array_equal(same.prefix_counts, rel.prefix_counts)
    rel.save(tmp_path / "p.tdp")
    back = treedp.load_release(tmp_path / "p.tdp")
    assert back.guarantee == rel.guarantee and back.unit is not None


def test_cli_release_and_query_grouped(tmp_path, capsys) -> None:
    import csv
    import json

    from treedp.cli import main

    d = _data(600)
    data = tmp_path / "d.csv"
    with data.open("w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["age", "state", "person_id"])
        w.writerows(zip(d["age"], d["state"], d["person"], strict=True))
    keys = tmp_path / "keys.txt"
    keys.write_text("CA\nNY\nZZ\n")
    out = tmp_path / "g.tdp"
    argv = ["release", str(data), "--column", "age", "--by", "state", "--keys", str(keys)]
    argv += ["--privacy-unit", "person_id", "--max-contributions", "3", "--bounds", "17", "90"]
    argv += ["--bins", "integers", "--epsilon", "1", "--insecure-seed", "1", "--out", str(out)]
    assert main(argv) == 0
    assert "3 groups" in capsys.readouterr().out
    assert main(["query", str(out), "--quantiles", "0.5", "0.9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "state,query,argument,value,n_hat,low_signal"
    assert len(lines) == 1 + 6 + 2  # the low-signal note (ZZ has no rows), SEEDED
    zz = [line.split(",") for line in lines[1:7] if line.startswith("ZZ")]
    assert len(zz) == 2 and all(row[-1] == "True" for row in zz)  # no rows: flagged
    assert lines[7].startswith("# low_signal: ")
    assert main(["query", str(out), "--cdf", "40", "--key", "NY", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["seeded"] and doc["unit"] == "person:person_id"
    assert [r["state"] for r in doc["rows"]] == ["NY"]
    assert main(["query", str(out), "--cdf", "40", "--key", "TX"]) != 0
    assert main(["query", str(out), "--info"]) == 0


def test_grouped_release_charges_the_accountant_before_any_randomness() -> None:
    acct = treedp.Accountant(treedp.PureDP(1.5))
    values = np.array([1.0, 2.0, 3.0, 4.0])
    keys = np.array(["a", "b", "a", "b"])
    args = {"by": keys, "keys": ["a", "b"], "bounds": (0, 5), "bins": 5}
    treedp.release_grouped(values, epsilon=1.0, accountant=acct, **args)
    assert float(acct.spent.epsilon) == pytest.approx(1.0)
    source = CountingSource()
    with pytest.raises(treedp.BudgetExceededError):
        treedp.release_grouped(values, epsilon=1.0, accountant=acct, rng=source, **args)
    assert source.calls == 0  # refused before any noise or sampling


def test_grouped_release_plots_and_displays() -> None:
    pytest.importorskip("matplotlib")
    values = np.array([1.0, 2.0, 3.0, 4.0, 2.5, 3.5])
    keys = np.array(["a", "b", "a", "b", "a", "b"])
    grouped = treedp.release_grouped(
        values, by=keys, keys=["a", "b"], bounds=(0, 5), bins=5, epsilon=1.0,
        rng=treedp.InsecureSeededSource(1),
    )  # fmt: skip
    fig, axes = grouped.plot(layout="small_multiples")
    assert len(axes) == 2 and len(fig.axes) >= 2
    html = grouped._repr_html_()
    assert "<table>" in html and "SEEDED" in html and html.count("<tr>") == 3


def test_grouped_quantiles_on_integer_bins_are_each_keys_inverse_cdf() -> None:
    """GroupedRelease.quantile answers what each key's Release.quantile answers (the inverse
    CDF on integer bins; it kept its own nearest-CDF rule for one round)."""
    import treedp.datasets

    adult = treedp.datasets.load_adult()
    keys = (9, 10, 13)
    g = treedp.release_grouped(
        adult["age"],
        by=adult["education_num"],
        keys=keys,
        bounds=(17, 90),
        bins="integers",
        epsilon=1.0,
        rng=InsecureSeededSource(1),
    )
    q = [0.0, 0.1, 0.4, 0.5, 0.9, 1.0]
    answers = g.quantile(q)
    for key in keys:
        np.testing.assert_array_equal(answers[key], g[key].quantile(q))
        truth = np.quantile(adult["age"][adult["education_num"] == key], q, method="inverted_cdf")
        assert np.abs(np.asarray(answers[key]) - truth).max() <= 1


def test_grouped_release_keeps_an_approx_dp_target(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """privacy=ApproxDP(ε, δ) on a grouped release: the target is kept in its file and read
    back (the zCDP guarantee implies it); a pure release has none."""
    from treedp.release.grouped import load_grouped_release

    rng = np.random.default_rng(1)
    g = treedp.release_grouped(
        rng.integers(17, 91, 3000),
        by=rng.choice(["a", "b"], 3000),
        keys=["a", "b"],
        bounds=(17, 90),
        bins="integers",
        privacy=treedp.ApproxDP(1.0, 1e-6),
        rng=InsecureSeededSource(1),
    )
    assert g.target == {"epsilon": 1.0, "delta": 1e-6}
    assert g.approx_target == treedp.ApproxDP(1.0, 1e-6)
    g.save(tmp_path / "g.tdp")
    assert load_grouped_release(tmp_path / "g.tdp").target == g.target
    pure = treedp.release_grouped(
        rng.integers(17, 91, 300),
        by=np.zeros(300, dtype=int),
        keys=[0],
        bounds=(17, 90),
        bins="integers",
        epsilon=1.0,
    )
    assert pure.target is None and pure.approx_target is None


def test_release_grouped_refuses_a_mechanism_that_cannot_serve_groups() -> None:
    """The CLI calls release_grouped directly: DAWA's refusal is its own, not an internal one."""
    with pytest.raises(treedp.InvalidParameterError, match="not available for a group-by"):
        treedp.release_grouped(
            {"v": [0.1, 0.2], "k": [0, 1]},
            column="v",
            by="k",
            keys=[0, 1],
            epsilon=1.0,
            bounds=(0, 1),
            bins=4,
            mechanism="dawa",
        )


def test_each_keys_noisy_levels_are_handed_over_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grouped release and the loaders give each key's fresh levels to its Release
    read-only, which keeps them as they are (no second copy of every key's levels); the
    loaded release answers as the saved one."""
    import treedp.grouped_stage
    import treedp.release.format
    import treedp.release.grouped
    from treedp.release import record

    handed: list[np.ndarray] = []

    def spy(levels):  # type: ignore[no-untyped-def]
        out = record.handed_over(levels)
        handed.extend(out)
        return out

    for module in (treedp.grouped_stage, treedp.release.grouped, treedp.release.format):
        monkeypatch.setattr(module, "handed_over", spy)
    d = _data()
    gr = treedp.release_grouped(
        d["age"], by=d["state"], keys=["CA", "NY"], rng=InsecureSeededSource(3), **OPTS
    )
    path = tmp_path / "g.tdp"
    gr.save(path)
    back = treedp.load_grouped_release(path)
    single = tmp_path / "one.json"
    gr["CA"].save(single)
    one = treedp.load_release(single)
    kept = {id(a) for a in handed}
    for rel in (gr["CA"], gr["NY"], back["CA"], back["NY"], one):
        assert all(id(lv) in kept and not lv.flags.writeable for lv in rel.noisy_levels)
    assert np.array_equal(back["NY"].cdf([30.0, 50.0]), gr["NY"].cdf([30.0, 50.0]))
    assert np.array_equal(one.cdf([30.0, 50.0]), gr["CA"].cdf([30.0, 50.0]))


def test_each_loader_names_the_other_for_the_other_kind_of_file(tmp_path: Path) -> None:
    """A grouped release given to ``load_release`` (and a single binary release given to
    ``load_grouped_release``) is refused with the loader that reads it, not as "not a treedp
    file"."""
    d = _data()
    gr = treedp.release_grouped(
        d["age"], by=d["state"], keys=["CA", "NY"], rng=InsecureSeededSource(4), **OPTS
    )
    grouped, single = tmp_path / "g.tdp", tmp_path / "one.tdp"
    gr.save(grouped)
    gr["CA"].save(single)
    with pytest.raises(ReleaseFormatError, match="load_grouped_release"):
        treedp.load_release(grouped)
    with pytest.raises(ReleaseFormatError, match=r"treedp\.load_release"):
        treedp.load_grouped_release(single)
    assert np.array_equal(treedp.load_release(single).cdf([40.0]), gr["CA"].cdf([40.0]))
