"""``"auto"`` contribution bounds on files (Parquet, CSV): the histograms of rows per person
(counts, and the mass histogram the choice releases) are made from the spill files between the
two passes (the input is read once), summed over spill files that each hold whole persons; they
equal the in-memory histograms exactly (per person), and per group count each person's
``min(max_groups, keys)`` pairs; one charge, after every value was read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.privacy.auto_bound_tables import zipf_persons
from tests.stats import TEST_SEED
from treedp import grouped_auto
from treedp.noise import InsecureSeededSource
from treedp.privacy.auto_mass import MASS_UNITS

pytest.importorskip("pyarrow")

KEYS = list("abcd")
masses: dict[str, np.ndarray] = {}


def _frame() -> pd.DataFrame:
    return zipf_persons(300, cap=200, keys="".join(KEYS))


def _sources(tmp_path, df: pd.DataFrame) -> dict[str, object]:
    df.to_parquet(tmp_path / "t.parquet")
    df.to_csv(tmp_path / "t.csv", index=False)
    return {"memory": df, "parquet": str(tmp_path / "t.parquet"), "csv": str(tmp_path / "t.csv")}


def _histograms(monkeypatch, sources: dict[str, object], **bounds) -> dict[str, np.ndarray]:
    """The true count histogram each source hands to the choice (its mass histogram in
    ``masses``), and one charge per release."""
    seen: dict[str, np.ndarray] = {}
    real = grouped_auto.choose_from_histogram
    for name, data in sources.items():

        def spy(hist, *args, _name=name, **kwargs):
            seen[_name] = np.asarray(hist).copy()
            masses[_name] = np.asarray(kwargs["mass"]).copy()
            return real(hist, *args, **kwargs)

        monkeypatch.setattr(grouped_auto, "choose_from_histogram", spy)
        ledger = treedp.Accountant(treedp.ZCDP(1.0))
        gr = treedp.release_grouped(
            data,
            column="x",
            by="k",
            keys=KEYS,
            privacy_unit="pid",
            bounds=(0, 31),
            bins="integers",
            privacy=treedp.ZCDP(0.5),
            accountant=ledger,
            rng=InsecureSeededSource(TEST_SEED),
            **bounds,
        )
        assert len(ledger.history) == 1 and gr.bound_choice["rho_spent"] <= 0.05
    return seen


def test_files_histogram_equals_memory(tmp_path, monkeypatch) -> None:
    df = _frame()
    seen = _histograms(monkeypatch, _sources(tmp_path, df), max_contributions="auto")
    assert seen["memory"].sum() == df.pid.nunique()
    assert np.array_equal(seen["parquet"], seen["memory"])
    assert np.array_equal(seen["csv"], seen["memory"])
    assert masses["memory"].sum() == df.pid.nunique() * MASS_UNITS
    assert np.array_equal(masses["parquet"], masses["memory"])
    assert np.array_equal(masses["csv"], masses["memory"])


def test_files_per_group_counts_the_drawn_pairs(tmp_path, monkeypatch) -> None:
    df, g = _frame(), 2
    seen = _histograms(
        monkeypatch,
        _sources(tmp_path, df),
        max_groups=g,
        max_contributions_per_group="auto",
    )
    pairs = int(np.minimum(df.groupby("pid").k.nunique(), g).sum())
    assert {name: int(h.sum()) for name, h in seen.items()} == dict.fromkeys(seen, pairs)
    assert {n: int(h.sum()) for n, h in masses.items()} == dict.fromkeys(seen, pairs * MASS_UNITS)


def test_files_per_group_keeps_the_drawn_keys(tmp_path) -> None:
    """5 rows in each of 4 keys per person, max_groups=2, a large budget: c = 5 is chosen and
    each person keeps 10 rows (the spill rewritten to the drawn keys, then bounded)."""
    pid = np.repeat(np.arange(60), 20).astype(str)
    df = pd.DataFrame({"x": np.zeros(1200, int), "pid": pid, "k": np.tile(KEYS, 300)})
    df.to_parquet(tmp_path / "t.parquet")
    gr = treedp.release_grouped(
        str(tmp_path / "t.parquet"),
        column="x",
        by="k",
        keys=KEYS,
        privacy_unit="pid",
        max_groups=2,
        max_contributions_per_group="auto",
        bounds=(0, 31),
        bins="integers",
        epsilon=50.0,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert gr.bounds.max_contributions_per_group >= 5
    total = sum(gr[k].n for k in KEYS)
    assert abs(total - 600) < 60  # 60 persons × 10 rows; noise at ε = 45 / 10 per tree


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_files_with_every_row_filtered_release_as_memory(tmp_path, kind: str) -> None:  # type: ignore[no-untyped-def]
    """Privacy review R7, F1: when the filters leave no row (no key listed, or every value
    missing under ``nan="drop"``) the spill files are empty; the mass histogram is then the
    empty table's (zeros) and the release goes on as in memory. It raised after the charge,
    where one added person with a kept row made it release: an observable refusal."""
    frames = {
        "keys": pd.DataFrame({"x": [1.0, 2.0, 3.0], "pid": ["a", "b", "c"], "k": ["z"] * 3}),
        "missing": pd.DataFrame({"x": [np.nan] * 3, "pid": ["a", "b", "c"], "k": ["a"] * 3}),
    }
    for name, df in frames.items():
        path = tmp_path / f"{name}.{kind}"
        df.to_parquet(path) if kind == "parquet" else df.to_csv(path, index=False)
        results = []
        for data in (df, str(path)):
            ledger = treedp.Accountant(treedp.PureDP(2.0))
            gr = treedp.release_grouped(
                data,
                column="x",
                by="k",
                keys=["a", "b"],
                privacy_unit="pid",
                max_contributions="auto",
                bounds=(0, 31),
                bins="integers",
                epsilon=1.0,
                nan="drop",
                accountant=ledger,
                rng=InsecureSeededSource(1),
            )
            assert len(ledger.history) == 1
            results.append(gr.bounds.max_contributions)
        assert results[0] == results[1]
