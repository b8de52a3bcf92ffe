"""What a charge records it paid for (treedp.subject): the column, the source as given, the
public bounds, the levels and the caller's note, for every front door; never a value of the
data; the note checked before anything is read or charged."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.privacy.spend import SUBJECT_KEY, SpendRecord, described, releasing
from treedp.subject import MAX_NOTE

pytestmark = pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # small private data
SEED = treedp.InsecureSeededSource
#: Values no public parameter below holds: found in a record only if data leaked into it.
SECRET = 31337.4242


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    age = rng.integers(18, 90, 400)
    income = rng.uniform(0, 1000, 400)
    income[[0, -1]] = SECRET  # where a repr would show it
    return pd.DataFrame(
        {
            "age": age,
            "income": income,
            "region": np.where(age > 50, "north", "south"),
            "pid": rng.integers(0, 150, 400),
        }
    )


def _ledger(tmp_path: Path, epsilon: float = 50.0) -> treedp.Ledger:
    return treedp.init_ledger(tmp_path / "l.db", "t", treedp.PureDP(epsilon))


def _subjects(tmp_path: Path) -> list[dict[str, Any]]:
    """The subjects as a fresh process reads them back (the chain re-verified on open)."""
    with treedp.open_ledger(tmp_path / "l.db", "t") as led:
        return [dict(c.record.parameters.get(SUBJECT_KEY) or {}) for c in led.history]


def test_every_front_door_records_what_it_released(tmp_path: Path) -> None:
    df = _table()
    csv = tmp_path / "people.csv"
    df.to_csv(csv, index=False)
    with _ledger(tmp_path) as led:
        common: dict[str, Any] = {"accountant": led, "rng": SEED(1)}
        with treedp.noting("T1"):
            treedp.release_cdf(df, column="income", bounds=(0, 1000), bins=16, epsilon=1, **common)
        treedp.release_cdf(df, column="age", bounds="private", bins="integers", epsilon=1, **common)
        with treedp.noting("counts made elsewhere"):
            treedp.release_counts([3, 1, 4], bins=3, epsilon=1, **common)
        with treedp.noting("T2"):
            treedp.release_grouped(
                str(csv), column="age", by="region", keys=["north", "south"], bounds=(18, 89),
                bins="integers", epsilon=1, **common,
            )  # fmt: skip
        treedp.quantiles(df, [0.25, 0.75], column="income", bounds=(0, 1000), epsilon=1, **common)
        with treedp.noting("M"):
            treedp.median(df["age"].to_numpy(), bounds=(18, 89), epsilon=1, **common)
        with treedp.noting("P"):
            treedp.profile(df[["age", "income"]], epsilon=1, bounds={"age": (18, 89)}, **common)
        with treedp.noting("S"):
            treedp.continual(horizon=4, epsilon=1, bins=4, bounds=(0, 8), **common)
    got = _subjects(tmp_path)
    assert got[0] == {"column": "income", "source": "pandas.DataFrame", "bounds": [0.0, 1000.0],
                      "note": "T1"}  # fmt: skip
    assert got[1] == {"column": "age", "source": "pandas.DataFrame",
                      "bounds": ["private", "private"]}  # fmt: skip
    assert got[2] == {"source": "counts", "bounds": [0.0, 3.0], "note": "counts made elsewhere"}
    assert got[3] == {"column": "age", "source": str(csv), "by": ["region"], "bounds": [18, 89],
                      "note": "T2"}  # fmt: skip
    assert got[4] == {"column": "income", "source": "pandas.DataFrame", "bounds": [0, 1000],
                      "levels": [0.25, 0.75]}  # fmt: skip
    assert got[5] == {"source": "numpy.ndarray", "bounds": [18, 89], "levels": [0.5], "note": "M"}
    assert got[6] == {"source": "pandas.DataFrame", "note": "P",
                      "bounds": {"age": [18, 89], "income": ["private", "private"]}}  # fmt: skip
    assert got[7] == {"source": "stream", "bounds": [0.0, 8.0], "note": "S"}


def test_a_per_person_release_and_a_database_query(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    df = _table()
    con = duckdb.connect()
    con.execute("CREATE TABLE people (age INTEGER)")
    con.executemany("INSERT INTO people VALUES (?)", [[int(a)] for a in df["age"]])
    with _ledger(tmp_path) as led:
        treedp.release_grouped(
            df, column="age", privacy_unit="pid", max_contributions=3, bounds=(18, 89),
            bins="integers", epsilon=1, accountant=led, rng=SEED(2),
        )  # fmt: skip
    with treedp.init_ledger(tmp_path / "l.db", "records", treedp.PureDP(5)) as led:
        treedp.release_cdf(
            treedp.SqlSource(con, "SELECT age FROM people WHERE age > 20"), column="age",
            bounds=(18, 89), bins="integers", epsilon=1, accountant=led, rng=SEED(3),
        )  # fmt: skip
    assert _subjects(tmp_path) == [
        {"column": "age", "source": "pandas.DataFrame", "bounds": [18, 89]}
    ]
    with treedp.open_ledger(tmp_path / "l.db", "records") as led:
        subject = led.history[0].record.parameters[SUBJECT_KEY]
    assert subject["source"] == "duckdb query: SELECT age FROM people WHERE age > 20"


def test_no_value_of_the_data_is_recorded(tmp_path: Path) -> None:
    """The subject holds public inputs only: the secret value, present in the data, is in no
    charge (nor any count or length of the data)."""
    df = _table()
    with _ledger(tmp_path) as led:
        for data in (df, df["income"].to_numpy(), list(df["income"])):
            column = "income" if isinstance(data, pd.DataFrame) else None
            treedp.release_cdf(data, column=column, bounds="private", bins=64, epsilon=1,
                               accountant=led, rng=SEED(4))  # fmt: skip
            treedp.quantiles(data, 0.5, column=column, bounds="private", epsilon=1,
                             accountant=led, rng=SEED(5))  # fmt: skip
    text = json.dumps(_subjects(tmp_path))
    assert "31337" not in text and "400" not in text


def test_noting_labels_every_charge_in_its_block_and_nests(tmp_path: Path) -> None:
    x = np.linspace(0, 10, 50)
    with _ledger(tmp_path) as led:
        with treedp.noting("outer"):
            treedp.quantile_exponential(x, 0.5, bounds=(0, 10), epsilon=1, accountant=led,
                                        rng=SEED(6))  # fmt: skip
            with treedp.noting("inner"):
                treedp.release_cdf(x, bounds=(0, 10), bins=4, epsilon=1, accountant=led,
                                   rng=SEED(7))  # fmt: skip
            treedp.release_cdf(x, bounds=(0, 10), bins=4, epsilon=1, accountant=led, rng=SEED(8))
        treedp.release_cdf(x, bounds=(0, 10), bins=4, epsilon=1, accountant=led, rng=SEED(9))
    got = _subjects(tmp_path)
    assert got[0] == {"note": "outer"}  # a building block: the note only
    assert got[1]["note"] == "inner" and got[2]["note"] == "outer"
    assert "note" not in got[3] and got[3]["source"] == "numpy.ndarray"


def test_each_thread_records_its_own_subject() -> None:
    acct = treedp.Accountant(treedp.PureDP(10))
    barrier = threading.Barrier(2)

    def work(name: str) -> None:
        with releasing({"column": name}):
            barrier.wait()
            acct.charge(SpendRecord("m", treedp.PureDP(1), "add_remove"))

    threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(c.record.parameters[SUBJECT_KEY]["column"] for c in acct.history) == ["a", "b"]
    record = SpendRecord("m", treedp.PureDP(1), "add_remove")
    assert described(record) is record  # outside every block: unchanged


@pytest.mark.parametrize(
    ("note", "error"),
    [(3, InvalidTypeError), (None, InvalidTypeError), ("", InvalidParameterError),
     ("  ", InvalidParameterError), ("x" * (MAX_NOTE + 1), InvalidParameterError)],
)  # fmt: skip
def test_a_bad_note_is_refused_before_anything_is_read_or_charged(
    tmp_path: Path, note: Any, error: type[Exception]
) -> None:
    class Unreadable:  # a source whose read would fail the test
        def __array__(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("read")

    with _ledger(tmp_path) as led:
        with pytest.raises(error, match="'note'"), treedp.noting(note):
            treedp.release_cdf(Unreadable(), bounds=(0, 1), bins=2, epsilon=1, accountant=led)
        assert list(led.history) == []


def test_the_subject_is_worked_out_at_the_charge_after_the_read() -> None:
    """Describing an input may touch it (a list's length), which nothing may do before the
    accountant's check: the subject is resolved when the charge is made, not before."""
    order: list[str] = []

    class Watched(list):  # type: ignore[type-arg]
        def __len__(self) -> int:
            order.append("read")
            return super().__len__()

    class Acct(treedp.Accountant):
        def check(self, record: SpendRecord) -> None:
            order.append("check")
            super().check(record)

    acct = Acct(treedp.PureDP(1.0))
    treedp.release_cdf(Watched([1.0, 2.0]), bounds=(0, 4), bins=2, epsilon=1, accountant=acct,
                       rng=SEED(1))  # fmt: skip
    assert order[0] == "check" and "read" in order
    assert acct.history[0].record.parameters[SUBJECT_KEY]["source"] == "tests.Watched"
    # a profile's one record names each column's bounds from public parameters only
    order.clear()
    profiled = Acct(treedp.PureDP(1.0))
    treedp.profile({"x": Watched([1.0, 2.0, 3.0] * 20)}, epsilon=1, bounds={"x": (0, 4)},
                   types={"x": "float"}, accountant=profiled, rng=SEED(2))  # fmt: skip
    assert order[0] == "check" and "read" in order
    assert profiled.history[0].record.parameters[SUBJECT_KEY]["bounds"] == {"x": [0.0, 4.0]}


def test_the_cli_reads_the_subject_where_the_library_writes_it() -> None:
    """treedp budget history imports only public names, so it keeps the key as its own
    constant: it must be the library's."""
    from treedp.cli.budget import SUBJECT_KEY as CLI_KEY

    assert CLI_KEY == SUBJECT_KEY
