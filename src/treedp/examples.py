"""The input files the README's recipes read, written to a directory (``make examples``).

Every recipe of README.md names its input (``people.csv``, ``flights.parquet``, ...); this
writes one of each, from the vendored Adult columns (:func:`treedp.datasets.load_adult`) and
seeded synthetic data, so a new user can run each recipe as written. They are example data,
not sensitive: the seeds are fixed and the files are the same on every machine. Parquet files
need pyarrow (``treedp[parquet]``); without it they are skipped and named in the result.
"""

from __future__ import annotations

import csv
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from treedp.datasets import load_adult

__all__ = ["CARRIERS", "write_examples"]

#: The public keys of the flights example (``carriers.txt``).
CARRIERS = ("AA", "B6", "DL", "EV", "MQ", "UA", "US", "WN")


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _columns() -> dict[str, dict[str, np.ndarray]]:
    """The example tables as columns: people, flights, data, day17, survey."""
    adult = load_adult()
    rng = np.random.default_rng(2024)
    n = adult["age"].size
    age = adult["age"].astype(np.float64)
    age[rng.random(n) < 0.01] = np.nan  # a few missing ages: the recipes say --nan drop
    income = np.round(rng.lognormal(10.5, 0.8, n), 2)
    m = 20_000
    carrier = np.asarray(CARRIERS)[rng.integers(0, len(CARRIERS), m)]
    tails = np.array([f"N{i:04d}" for i in range(800)])
    start = np.datetime64("2013-01-01T00:00", "m")
    when = start + rng.integers(0, 365 * 24 * 60, m).astype("timedelta64[m]")
    k = 3_000
    states = np.array(["CA", "NY", "TX", "FL", "WA"])
    people = {
        "age": age,
        "income": income,
        "children": np.minimum(rng.poisson(1.1, n), 9),
        "state": states[rng.integers(0, states.size, n)],
        "pid": np.char.add("p", rng.integers(0, n // 3, n).astype("U6")),  # about 3 rows each
    }
    return {
        "people": people,
        "flights": {
            "carrier": carrier,
            "dep_delay": np.round(rng.gamma(0.7, 30.0, m) - 8).astype(np.int64),
            "tailnum": tails[rng.integers(0, tails.size, m)],
            "time_hour": when.astype("datetime64[h]").astype("datetime64[s]"),
        },
        "data": {
            "age": adult["age"][:k],
            "when": np.datetime64("2024-01-01T00:00:00", "s")
            + rng.integers(0, 366 * 86400, k).astype("timedelta64[s]"),
            "income": np.round(rng.lognormal(10.5, 0.8, k), 2),
        },
        "day17": {
            "wait": np.round(rng.exponential(20.0, 300), 1),
            "pid": np.char.add("p", rng.integers(0, 120, 300).astype("U4")),
        },
        "survey": {**{c: adult[c] for c in adult}, "income": income},
    }


def _cell(value: object) -> object:
    """A CSV cell: empty for NaN, ISO text for datetimes, integral floats without ``.0``."""
    if isinstance(value, np.floating):
        return "" if np.isnan(value) else f"{float(value):.10g}"
    if isinstance(value, np.datetime64):
        return str(value)
    return value.item() if isinstance(value, np.generic) else value


#: Columns of UTC instants: written with a ``Z`` offset (CSV) or as UTC timestamps (Parquet),
#: as the README's time-zone recipe reads ``flights``' ``time_hour``.
_UTC = ("time_hour",)


def _table_csv(path: Path, columns: dict[str, np.ndarray]) -> None:
    names = list(columns)
    rows = zip(*(columns[c] for c in names), strict=True)
    utc = [c in _UTC for c in names]

    def cells(row: Sequence[object]) -> list[object]:
        return [f"{_cell(v)}Z" if z else _cell(v) for v, z in zip(row, utc, strict=True)]

    _write_csv(path, names, (cells(row) for row in rows))


def _parquet(path: Path, columns: dict[str, np.ndarray]) -> bool:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    arrays = {
        c: pa.array(v).cast(pa.timestamp("s", tz="UTC")) if c in _UTC else pa.array(v)
        for c, v in columns.items()
    }
    pq.write_table(pa.table(arrays), path)
    return True


def _duckdb(path: Path, csv: Path) -> bool:
    """The people table as a DuckDB file (``treedp[sql]``), from its CSV file: it needs no
    pyarrow (``[sql]`` alone made none, from the Parquet file; an adopter's run)."""
    try:
        import duckdb
    except ImportError:
        return False
    if not csv.exists():
        return False
    path.unlink(missing_ok=True)
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE people AS SELECT * FROM read_csv(?, header = true)", [str(csv)])
    return True


def write_examples(directory: str | os.PathLike[str] = "examples") -> dict[str, list[str]]:
    """Write the README's example inputs into ``directory`` (created if missing).

    Parameters
    ----------
    directory : str or path-like, default="examples"
        Where to write: ``people.csv``, ``people.db`` (SQLite table ``people``: ``age``,
        ``income``, ``children``, ``state``, ``pid``), ``people.parquet``, ``people.duckdb``
        (with duckdb), ``flights.csv``, ``flights.parquet``, ``carriers.txt``,
        ``survey.parquet``, ``data.csv``, ``data.parquet``, ``a.csv``, ``b.csv`` and
        ``day17.csv`` (``wait``, ``pid``).

    Returns
    -------
    dict
        ``{"written": [...], "skipped": [...]}``: file names; Parquet files are skipped
        without pyarrow, the DuckDB file without duckdb.

    Examples
    --------
    >>> import tempfile, treedp.examples
    >>> out = treedp.examples.write_examples(tempfile.mkdtemp())
    >>> "people.csv" in out["written"]
    True
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    tables = _columns()
    written: list[str] = []
    skipped: list[str] = []
    for name in ("people", "flights", "data", "day17"):
        _table_csv(root / f"{name}.csv", tables[name])
        written.append(f"{name}.csv")
    half = tables["data"]["age"].size // 2
    for part, rows in (("a", slice(0, half)), ("b", slice(half, None))):
        _table_csv(root / f"{part}.csv", {"age": tables["data"]["age"][rows]})
        written.append(f"{part}.csv")
    (root / "carriers.txt").write_text("\n".join(CARRIERS) + "\n", encoding="utf-8")
    written.append("carriers.txt")
    db = root / "people.db"
    db.unlink(missing_ok=True)
    with sqlite3.connect(db) as con:
        people = tables["people"]
        con.execute(
            "CREATE TABLE people (age INTEGER, income REAL, children INTEGER, state TEXT, pid TEXT)"
        )
        con.executemany(
            "INSERT INTO people VALUES (?, ?, ?, ?, ?)",
            (
                (None if np.isnan(a) else int(a), float(i), int(c), str(s), str(p))
                for a, i, c, s, p in zip(*(people[k] for k in people), strict=True)
            ),
        )
    con.close()
    written.append("people.db")
    for name in ("people", "flights", "data", "survey"):
        target = written if _parquet(root / f"{name}.parquet", tables[name]) else skipped
        target.append(f"{name}.parquet")
    target = written if _duckdb(root / "people.duckdb", root / "people.csv") else skipped
    target.append("people.duckdb")
    return {"written": written, "skipped": skipped}
