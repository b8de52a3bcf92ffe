"""Reading CSV datetimes with and without a UTC offset (``treedp.read_column``).

10^6 hourly times of 2013 written three ways: naive (``2013-07-01T10:00:00``, the baseline),
UTC (``…Z``) and New York offsets (``…-04:00`` / ``…-05:00``, as pandas writes a tz-aware
column), read with pyarrow (the default reader) and, on 10^5 rows, with Python's csv module.
A column with offsets first fails the naive cast, then is cast as UTC instants. Best of three.

Run: ``PYTHONPATH=src python benchmarks/csv_timezones.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from _common import best_of, machine
from treedp.engines.files import iter_path_chunks

N = 1_000_000


def _write(folder: Path, n: int) -> dict[str, Path]:
    hours = np.datetime64("2013-01-01T00:00") + np.arange(n) % 8760 * np.timedelta64(1, "h")
    naive = np.datetime_as_string(hours.astype("datetime64[s]"))
    month = hours.astype("datetime64[M]").astype(int) % 12
    summer = (month >= 2) & (month <= 9)  # near enough to New York's daylight-saving months
    offsets = np.where(summer, "-04:00", "-05:00")
    cells = {
        "naive": naive,
        "utc": np.char.add(naive, "Z"),
        "new_york": np.char.add(naive, offsets),
    }
    paths = {}
    for name, column in cells.items():
        path = folder / f"{name}_{n}.csv"
        path.write_text("t\n" + "\n".join(column.tolist()) + "\n")
        paths[name] = path
    return paths


def _read(path: Path, use_pyarrow: bool) -> int:
    chunks = iter_path_chunks(str(path), None, "t", use_pyarrow=use_pyarrow)
    return sum(c.size for c in chunks)


def main() -> None:
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        for reader, n in (("pyarrow", N), ("python csv", N // 10)):
            paths = _write(Path(tmp), n)
            arrow = reader == "pyarrow"
            base = best_of(lambda p=paths["naive"], a=arrow: _read(p, a), repeats=3)
            for name, path in paths.items():
                t = best_of(lambda p=path, a=arrow: _read(p, a), repeats=3)
                print(f"{reader:10s} {n:>9,d} rows  {name:9s} {t:7.3f} s  ({t / base:4.2f}x naive)")


if __name__ == "__main__":
    main()
