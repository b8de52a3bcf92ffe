"""A file release whose person ids are hashed (text ids) records the collision δ.

The decision is made from public information only (input kind, the id column's schema type),
before the charge: CSV and text Parquet ids state ``collision_delta_per_person`` in the charge
and the release's spend, and ``collision`` in its metadata, unit and saved file; integer ids
and in-memory data do not. Deterministic tests (no statistical claim): no false failures. A
mutant that drops the statement is caught.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import grouped_stage
from treedp.engines.files.grouped import person_ids_hashed
from treedp.exceptions import InvalidTypeError, ReleaseFormatError
from treedp.noise import InsecureSeededSource
from treedp.privacy.collision import COLLISION, COLLISION_DELTA

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

OPTS: dict[str, Any] = {"bounds": (0, 9), "bins": "integers", "epsilon": 1.0}


def _frame(seed: int = 0, n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.integers(0, 10, n),
            "k": rng.choice(np.array(["a", "b"]), n),
            "pid": rng.integers(0, 60, n),
        }
    )


def _inputs(tmp: Path, df: pd.DataFrame) -> dict[str, Any]:
    """Text-id inputs (CSV, Parquet of strings) and integer-id inputs (Parquet, memory)."""
    text = df.assign(pid=df.pid.astype(str))
    df.to_parquet(tmp / "int.parquet")
    text.to_parquet(tmp / "text.parquet")
    df.to_csv(tmp / "t.csv", index=False)
    return {
        "csv": str(tmp / "t.csv"),
        "parquet_text": str(tmp / "text.parquet"),
        "parquet_int": str(tmp / "int.parquet"),
        "memory_text": text,
        "memory_int": df,
    }


HASHED = {"csv", "parquet_text"}


def _grouped(data: Any, ledger: treedp.Accountant | None = None) -> Any:
    return treedp.release_grouped(
        data,
        column="x",
        by="k",
        keys=["a", "b"],
        privacy_unit="pid",
        max_contributions=2,
        rng=InsecureSeededSource(TEST_SEED),
        accountant=ledger,
        **OPTS,
    )


def _states(gr: Any) -> bool:
    """Whether a grouped release states the δ, everywhere it should (all or nothing)."""
    in_spend = gr.spend().parameters.get("collision_delta_per_person")
    in_meta = gr.metadata().get("collision")
    assert (in_spend is None) == (in_meta is None) == (gr.collision is None)
    if in_meta is None:
        return False
    assert in_spend == COLLISION_DELTA and in_meta == COLLISION
    return True


def test_grouped_release_states_delta_for_hashed_ids_only(tmp_path: Path) -> None:
    _check_grouped(tmp_path)


def _check_grouped(tmp_path: Path) -> None:
    for name, data in _inputs(tmp_path, _frame()).items():
        ledger = treedp.Accountant(treedp.PureDP(5.0))
        gr = _grouped(data, ledger)
        (charge,) = ledger.history
        charged = charge.record.parameters.get("collision_delta_per_person")
        assert _states(gr) == (name in HASHED), name
        assert charged == (COLLISION_DELTA if name in HASHED else None), name
        gr.save(tmp_path / f"{name}.tdpg")
        back = treedp.load_grouped_release(tmp_path / f"{name}.tdpg")
        assert _states(back) == (name in HASHED), name
        assert back.spend() == gr.spend()


def test_person_release_states_delta_in_its_unit(tmp_path: Path) -> None:
    for name, data in _inputs(tmp_path, _frame()).items():
        rel = treedp.release_cdf(
            data,
            column="x",
            privacy_unit=treedp.PrivacyUnit("pid", max_contributions=2),
            rng=InsecureSeededSource(TEST_SEED),
            **OPTS,
        )
        assert rel.unit is not None
        assert rel.unit.collision == (COLLISION if name in HASHED else ""), name
        stated = rel.metadata()["unit"].get("collision")
        assert stated == (COLLISION if name in HASHED else None), name
        rel.save(tmp_path / f"{name}.tdp")
        back = treedp.load_release(tmp_path / f"{name}.tdp")
        assert back.unit == rel.unit


def test_decision_depends_on_schema_not_values(tmp_path: Path) -> None:
    for seed in (1, 2):  # same schema, different values: the same decision
        df = _frame(seed)
        sub = tmp_path / str(seed)
        sub.mkdir()
        got = {
            n: person_ids_hashed(d, "pid") for n, d in _inputs(sub, df).items() if "memory" not in n
        }
        assert got == {"csv": True, "parquet_text": True, "parquet_int": False}
    # integer ids with missing ids stay exact (not read as float64 and hashed)
    ids = pa.array([7, None, 8, 7, 9, 10], type=pa.int64())
    table = pa.table({"x": np.ones(6, dtype=np.int64), "k": ["a"] * 6, "pid": ids})
    pq.write_table(table, tmp_path / "nulls.parquet", row_group_size=3)
    assert not person_ids_hashed(str(tmp_path / "nulls.parquet"), "pid")
    gr = treedp.release_grouped(
        str(tmp_path / "nulls.parquet"),
        column="x",
        by="k",
        keys=["a"],
        privacy_unit="pid",
        max_contributions=1,
        nan="drop",
        rng=InsecureSeededSource(TEST_SEED),
        **OPTS,
    )
    assert gr.collision is None


def test_file_with_other_id_type_than_schema_is_refused(tmp_path: Path) -> None:
    df = _frame()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "a.parquet")
    text = df.assign(pid=df.pid.astype(str))
    pq.write_table(pa.Table.from_pandas(text, preserve_index=False), tmp_path / "b.parquet")
    # never hashed without stating the δ: refused from the schemas, before any value is read
    with pytest.raises(InvalidTypeError, match="same id type"):
        _grouped([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])


def test_a_mutant_dropping_the_statement_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grouped_stage, "_ids_hashed", lambda data, grouping: False)
    with pytest.raises(AssertionError):
        _check_grouped(tmp_path)


def test_a_file_with_a_forged_statement_is_refused(tmp_path: Path) -> None:
    gr = _grouped(_inputs(tmp_path, _frame())["csv"])
    gr.save(tmp_path / "g.tdpg")
    with zipfile.ZipFile(tmp_path / "g.tdpg") as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    doc = json.loads(members["grouped.json"])
    doc["payload"]["metadata"]["collision"] = "no delta"
    members["grouped.json"] = json.dumps(doc).encode()
    with zipfile.ZipFile(tmp_path / "bad.tdpg", "w") as zf:
        for n, b in members.items():
            zf.writestr(n, b)
    with pytest.raises(ReleaseFormatError):
        treedp.load_grouped_release(tmp_path / "bad.tdpg")
