"""The file engine tells persons apart exactly (integer ids) or by a keyed 128-bit hash (text).

Each person keeps at most ``m`` rows; a test that counts the kept rows sees two persons merged
as fewer rows kept. Deterministic tests (no statistical claim): no false failures.
The mutants (the old 63-bit mask on integers; persons told apart by one word) are caught.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from treedp import InsecureSeededSource, make_bins
from treedp.engines.files import person_words
from treedp.engines.files.grouped import SPILL_DTYPE, count_grouped_files, key_counts_files
from treedp.engines.files.person_words import KEY_BYTES, PersonWords, person_codes
from treedp.engines.grouped import GroupedJob
from treedp.noise import SystemRandomSource
from treedp.privacy.contribution import ContributionBounds

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

EDGES = [-1, 0, 1, 2**62, 2**62 + 1, 2**63 - 1, -(2**63), -(2**62), 5, 5 + 2**62, -5 - 2**62]


def _job(m: int) -> GroupedJob:
    bins = make_bins(bounds=(0, 3), bins="integers")
    return GroupedJob(
        "v", ("g",), ("a",), "p", ContributionBounds.from_parameters("p", m), bins, "error"
    )


def _write(tmp: Path, ids: Any, name: str = "t.parquet", row_group_size: int = 3) -> Path:
    n = len(ids)
    table = pa.table({"v": np.ones(n), "g": ["a"] * n, "p": ids})
    pq.write_table(table, tmp / name, row_group_size=row_group_size)
    return tmp / name


def _kept(path: Any, m: int = 1, seed: int = 1) -> int:
    got = count_grouped_files(path, _job(m), InsecureSeededSource(seed), partitions=4)
    return int(got.counts.sum())


def _masked(ids: np.ndarray) -> np.ndarray:  # the old map: zigzag masked to 63 bits
    x = ids.astype(np.int64)
    out: np.ndarray = np.where(x >= 0, 2 * x, -2 * x - 1) & np.int64(2**63 - 1)
    return out


def test_integer_ids_far_apart_are_distinct_persons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = pa.array(EDGES + EDGES, type=pa.int64())  # each person twice, in other row groups
    path = _write(tmp_path, ids)
    assert _kept(path, m=1) == len(EDGES)
    assert _kept(path, m=2) == 2 * len(EDGES)
    unsigned = pa.array([0, 2**63, 2**64 - 1, 2**63 - 1, 1] * 2, type=pa.uint64())
    assert _kept(_write(tmp_path, unsigned, "u.parquet"), m=1) == 5
    small = pa.array([-1, 0, 1, 127, -128] * 2, type=pa.int8())
    assert _kept(_write(tmp_path, small, "s.parquet"), m=1) == 5
    monkeypatch.setattr(person_words, "zigzag", _masked)  # the mutant merges x and x + 2**62
    assert _kept(path, m=1) < len(EDGES)


def test_integer_ids_draw_no_key(tmp_path: Path) -> None:
    words = PersonWords(_Spy())
    p, q = words(np.array(EDGES))
    assert not words.hashed and not np.any(q)
    assert len(set(p.tolist())) == len(EDGES)


def test_text_ids_across_batches_row_groups_and_files_are_one_person(tmp_path: Path) -> None:
    ids = ["alice", "bob", "alice", "carol", "alice", "bob", "alice"] * 3
    one = _write(tmp_path, ids, row_group_size=2)
    assert _kept(one, m=2) == 6  # alice, bob, carol: two rows each
    assert _kept(one, m=100) == len(ids)
    second = _write(tmp_path, ["alice", "dave", "bob"], "u.parquet", row_group_size=1)
    assert _kept([str(one), str(second)], m=2) == 7  # dave is new; alice and bob already full
    csv = tmp_path / "t.csv"
    csv.write_text("v,g,p\n" + "".join(f"1,a,{i}\n" for i in ids))
    assert _kept(str(csv), m=2) == 6
    cat = pa.array(ids).dictionary_encode()  # dictionary columns: the same persons
    assert _kept(_write(tmp_path, cat, "d.parquet", row_group_size=2), m=2) == 6


def test_selection_counts_one_person_per_text_id(tmp_path: Path) -> None:
    ids = ["x", "y", "x", "x", "y"] * 4
    path = _write(tmp_path, ids, row_group_size=3)
    got = key_counts_files(path, _job(1), InsecureSeededSource(3), partitions=4)
    assert dict(zip(got.keys, got.counts.tolist(), strict=True)) == {"a": 2}


class _Spy:
    """A seeded source that records each request."""

    seeded = True

    def __init__(self, seed: int = 0) -> None:
        self.inner = InsecureSeededSource(seed)
        self.calls: list[int] = []

    def random_bytes(self, n: int) -> bytes:
        self.calls.append(n)
        return self.inner.random_bytes(n)

    def describe(self) -> dict[str, object]:
        return self.inner.describe()


def test_key_is_drawn_from_the_source_once_per_release(tmp_path: Path) -> None:
    ids = np.array(["p1", "p2", "p3", "p1"], dtype=object)
    spy = _Spy(4)
    words = PersonWords(spy)
    first = words(ids)
    again = words(ids[::-1])
    assert words.hashed and spy.calls == [KEY_BYTES]  # one key, drawn at the first text id
    assert np.array_equal(first[0][::-1], again[0]) and np.array_equal(first[1][::-1], again[1])
    same_seed = PersonWords(InsecureSeededSource(4))(ids)
    assert np.array_equal(same_seed[0], first[0]) and np.array_equal(same_seed[1], first[1])
    other_seed = PersonWords(InsecureSeededSource(5))(ids)
    assert not np.any(other_seed[0] == first[0])
    system = SystemRandomSource()
    a, b = PersonWords(system)(ids), PersonWords(system)(ids)  # two releases: two keys
    assert not np.any(a[0] == b[0]) and not np.any(a[1] == b[1])
    path = _write(tmp_path, ids.tolist())
    spy = _Spy(6)
    count_grouped_files(path, _job(1), spy, partitions=4)
    assert spy.calls[0] == KEY_BYTES  # the file path draws the key first, then samples
    spy = _Spy(6)
    count_grouped_files(_write(tmp_path, [1, 2, 3], "i.parquet"), _job(1), spy, partitions=4)
    assert KEY_BYTES not in spy.calls[:1]  # integer ids: no key drawn


def test_person_codes_compare_both_words() -> None:
    rows = np.zeros(5, dtype=SPILL_DTYPE)
    rows["p"] = [7, 7, 7, -3, -3]
    rows["q"] = [1, 2, 1, 9, 9]
    codes = person_codes(rows, hashed=True)
    assert codes[0] == codes[2] and codes[3] == codes[4]
    assert len({codes[0], codes[1], codes[3]}) == 3
    assert codes.min() >= 0 and codes.max() < rows.size
    mutant = person_codes(rows, hashed=False)  # by the first word only: merges rows 0 and 1
    assert mutant[0] == mutant[1]
    rows["q"] = [1, 1, 1, 9, 9]  # first words tell persons apart: the fast path, same codes
    fast = person_codes(rows, hashed=True)
    assert fast[0] == fast[1] == fast[2] and fast[3] == fast[4] and fast[0] != fast[3]
    rows["p"] = [7, 7, 8, -3, -3]
    rows["q"] = [1, 5, 1, 9, 9]  # a conflict in one run only
    codes = person_codes(rows, hashed=True)
    assert len(set(codes.tolist())) == 4 and codes[3] == codes[4]


def test_signed_zero_float_ids_across_row_groups_are_one_person(tmp_path: Path) -> None:
    """``0.0 == -0.0`` in Python and in memory; hashed by their text they were two persons
    (an independent review: 2m rows kept, twice the stated loss)."""
    ids = pa.array([0.0, 0.0, -0.0, -0.0, 1.5, -1.5], type=pa.float64())
    path = _write(tmp_path, ids, row_group_size=2)
    assert _kept(path, m=2) == 4  # 0.0 keeps 2 rows; 1.5 and -1.5 one each
    ipc = tmp_path / "z.arrow"
    table = pa.table({"v": np.ones(4), "g": ["a"] * 4, "p": pa.array([0.0, 0.0, -0.0, -0.0])})
    with pa.ipc.new_file(ipc, table.schema) as writer:  # two record batches
        for batch in table.to_batches(max_chunksize=2):
            writer.write_batch(batch)
    assert _kept(str(ipc), m=2) == 2


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (pa.array([5.0, 5.0, None], pa.float64()), pa.array([5, 5], pa.int64())),  # pandas' NaN
        (pa.array([5, 5], pa.int64()), pa.array([5.0, 5.0], pa.float64())),
        (pa.array([14, 14], pa.uint64()), pa.array([7, 7], pa.int64())),  # zigzag(7) == 14
        (pa.array([1, 2], pa.int32()), pa.array([1, 2], pa.int64())),  # a scanner casts by value
        (pa.array(["a", "b"]), pa.array([1, 2], pa.int64())),
    ],
)
def test_files_with_other_id_types_are_refused_before_any_value(
    tmp_path: Path, first: Any, second: Any
) -> None:
    """Each Parquet file was read in its own id type, so a float ``5.0`` and an int ``5`` were
    two persons and a uint64 ``14`` and an int64 ``7`` one (an independent review: both beyond
    the stated sensitivity, with no δ). Every file must have the first one's id type: refused
    from the schemas, in the same words whatever the values, for the grouped pass, selection
    and the hashing decision alike."""
    from treedp.engines.files.grouped import person_ids_hashed
    from treedp.exceptions import InvalidTypeError

    (tmp_path / "d").mkdir()
    paths = [
        _write(tmp_path / "d", first, "m1.parquet"),
        _write(tmp_path / "d", second, "m2.parquet"),
    ]
    for call in (
        lambda: person_ids_hashed([str(p) for p in paths], "p"),
        lambda: _kept([str(p) for p in paths], m=2),
        lambda: _kept(str(tmp_path / "d"), m=2),
        lambda: key_counts_files(str(tmp_path / "d"), _job(1), InsecureSeededSource(3)),
    ):
        with pytest.raises(InvalidTypeError, match=r"person-id column 'p' is .* in .*m2.parquet"):
            call()


def test_equal_id_types_up_to_storage_are_accepted(tmp_path: Path) -> None:
    """Dictionary encoding and large text are how ids are stored, not what they are."""
    (tmp_path / "d").mkdir()
    _write(tmp_path / "d", pa.array(["a", "b", "a"]), "m1.parquet")
    _write(tmp_path / "d", pa.array(["a", "c"]).dictionary_encode(), "m2.parquet")
    _write(tmp_path / "d", pa.array(["b"], pa.large_string()), "m3.parquet")
    assert _kept(str(tmp_path / "d"), m=1) == 3


def test_arrow_files_read_through_one_schema_agree_on_dictionary_ids(tmp_path: Path) -> None:
    """Arrow IPC files are scanned through the first file's schema, which cannot cast plain
    integer ids to a dictionary type: refused in treedp's words before any value is read (a
    raw Arrow error was reported as a malformed file; a re-review). Text ids cast: accepted."""
    from treedp.exceptions import InvalidTypeError

    def ipc(folder: Path, ids: Any, name: str) -> None:
        folder.mkdir(exist_ok=True)
        table = pa.table({"v": np.ones(len(ids)), "g": ["a"] * len(ids), "p": ids})
        with pa.ipc.new_file(folder / name, table.schema) as writer:
            writer.write_table(table)

    ints = tmp_path / "ints"
    ipc(ints, pa.array([1, 2]).dictionary_encode(), "f0.arrow")
    ipc(ints, pa.array([1, 3]), "f1.arrow")
    with pytest.raises(InvalidTypeError, match="dictionary-encoded in some files"):
        _kept(str(ints), m=1)
    text = tmp_path / "text"
    ipc(text, pa.array(["x", "y"]).dictionary_encode(), "f0.arrow")
    ipc(text, pa.array(["x", "z"]), "f1.arrow")
    assert _kept(str(text), m=1) == 3


def test_a_partition_type_against_a_files_column_is_one_clear_error(tmp_path: Path) -> None:
    from treedp.exceptions import DataError

    _write(tmp_path, pa.array([5, 5], pa.int64()), "a.parquet")
    (tmp_path / "p=5").mkdir()
    pq.write_table(pa.table({"v": np.ones(2), "g": ["a"] * 2}), tmp_path / "p=5" / "b.parquet")
    with pytest.raises(DataError, match="partition directories give a column different types"):
        _kept(str(tmp_path), m=2)
