"""``treedp plan`` with contribution bounds: each key's expected error before any data is
read, the same figures as :func:`treedp.predict_error`, and one-line usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import treedp
from treedp.cli import main


def test_per_key_error_is_predict_error_s(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("AA\nUA\nDL\n")
    args = ["plan", "--bins", "256", "--epsilon", "1", "--max-contributions", "50"]
    assert main([*args, "--keys", str(keys), "--sizes", "2000"]) == 0
    out = capsys.readouterr().out
    unit = treedp.PrivacyUnit("person", max_contributions=50)
    pred = treedp.predict_error(256, epsilon=1.0, privacy_unit=unit, keys=["AA", "UA", "DL"])
    assert f"expected CDF error (RMSE): {pred.rmse:.4g} records" in out
    assert f"2,000 records: off by about {pred.rmse / 2000:.3g}" in out
    assert "sensitivity 50" in out and "keys: 3" in out


def test_headline_json_and_quiet_are_each_keys_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """With contribution bounds the plan is that of each key's tree at the person's budget
    over the sensitivity (as a release makes it): the headline, ``predicted`` and ``--quiet``
    were the one-row-per-person plan (±9.64 where each key's tree has ±192.7)."""
    keys = tmp_path / "keys.txt"
    keys.write_text("AA\nUA\n")
    args = ["plan", "--bins", "1024", "--epsilon", "1", "--max-contributions", "20"]
    args += ["--keys", str(keys), "--sizes", "500", "20000"]
    unit = treedp.PrivacyUnit("person", max_contributions=20)
    pred = treedp.predict_error(1024, epsilon=1.0, privacy_unit=unit, keys=["AA", "UA"])
    record = treedp.plan(1024, epsilon=1.0)
    assert main(args) == 0
    out = capsys.readouterr().out
    headline = next(line for line in out.splitlines() if "expected CDF error:" in line)
    assert f"±{pred.rmse:.3g} records" in headline
    assert f"±{record.cdf_rmse:.3g} " not in out
    assert "sensitivity 20: 0.05 per record" in out
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["predicted"] == pytest.approx(pred.mean_cdf_mse, rel=1e-9)
    assert doc["person"] == {
        "unit": "person:person", "neighbours": "add_remove", "sensitivity": 20,
        "tree_budget": pred.tree_budget, "epsilon": 1.0,
    }  # fmt: skip
    assert [row["key"] for row in doc["per_key"]] == ["AA", "UA"]
    row = doc["per_key"][0]
    assert row["cdf_rmse"] == pytest.approx(pred.rmse)
    assert row["quantile_error"] == [
        {"n_assumed": 500, "level_error": pytest.approx(pred.quantile_error(500))},
        {"n_assumed": 20000, "level_error": pytest.approx(pred.quantile_error(20000))},
    ]
    assert main([*args, "--quiet"]) == 0
    mechanism, _, budgets = capsys.readouterr().out.split()
    assert (
        mechanism == doc["mechanism"]
        and budgets.split(",")[-1] == f"{doc['level_budgets'][-1]:.6g}"
    )
    assert float(budgets.split(",")[-1]) <= pred.tree_budget + 1e-12  # the tree's, not 1.0


def test_without_bounds_plan_prints_no_per_key_block(capsys: pytest.CaptureFixture) -> None:
    assert main(["plan", "--bins", "64", "--epsilon", "1"]) == 0
    assert "per key" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra",
    [["--max-groups", "2", "--max-contributions-per-group", "3"], ["--max-contributions", "0"]],
)
def test_bad_bounds_are_one_line(extra: list[str], capsys: pytest.CaptureFixture) -> None:
    assert main(["plan", "--bins", "64", "--epsilon", "1", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedp: error:")


@pytest.mark.parametrize("budget", [["--epsilon", "1"], ["--rho", "0.5"]])
def test_replace_plans_the_add_remove_tree_a_release_makes(
    budget: list[str], capsys: pytest.CaptureFixture
) -> None:
    """Under a person-level ``replace`` each key's tree is an add/remove tree without a public
    n at twice the sensitivity (as the release makes it); session 10's plan was a ``replace``
    tree with a public total (2650 records² where the release's own error is 1213)."""
    args = ["plan", "--bins", "64", *budget, "--neighbours", "replace", "--max-contributions", "3"]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    unit = treedp.PrivacyUnit("person", max_contributions=3)
    given = {"epsilon": 1.0} if budget[0] == "--epsilon" else {"privacy": treedp.ZCDP(0.5)}
    pred = treedp.predict_error(64, neighbours="replace", privacy_unit=unit, **given)
    rel = treedp.release_cdf(
        {"x": [1, 2, 3], "person": ["a", "b", "a"]},
        column="x",
        bounds=(0, 64),
        bins=64,
        neighbours="replace",
        privacy_unit=unit,
        rng=treedp.InsecureSeededSource(1),
        **given,
    )
    assert doc["neighbours"] == "add_remove" and doc["person"]["neighbours"] == "replace"
    assert doc["person"]["sensitivity"] == (6 if budget[0] == "--epsilon" else 18)
    assert doc["predicted"] == pytest.approx(pred.mean_cdf_mse, rel=1e-9)
    assert doc["predicted"] == pytest.approx(float(rel.prefix_variance[1:].mean()), rel=1e-9)
    assert tuple(doc["level_budgets"]) == rel.mechanism.block_budgets


def test_n_with_bounds_is_one_line(capsys: pytest.CaptureFixture) -> None:
    args = ["plan", "--bins", "64", "--epsilon", "1", "--neighbours", "replace"]
    assert main([*args, "--max-contributions", "3", "--n", "1000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedp: error: --n is not used")


def test_an_auto_bound_is_one_line_saying_why(capsys: pytest.CaptureFixture) -> None:
    assert main(["plan", "--bins", "64", "--epsilon", "1", "--max-contributions", "auto"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-contributions auto chooses the bound from the data" in err[0]


def test_an_auto_bound_per_group_is_one_line_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``--max-contributions-per-group auto`` failed in argparse ("invalid int value")."""
    keys = tmp_path / "keys.txt"
    keys.write_text("AA\nBB\n")
    args = ["plan", "--bins", "64", "--epsilon", "1", "--keys", str(keys), "--max-groups", "2"]
    assert main([*args, "--max-contributions-per-group", "auto"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--max-contributions-per-group auto chooses the bound from the data" in err[0]
