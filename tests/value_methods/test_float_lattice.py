"""The public lattice of every float: order, floors, spread interleaving."""

from __future__ import annotations

import itertools

import numpy as np

from treedp.value_methods import float_lattice as fl
from treedp.value_methods.float_lattice import (
    SUB_BITS,
    TOTAL_CELLS,
    TOTAL_UNITS,
    UnitGrid,
    cell_of,
    cell_value,
    positions,
)

TEST_SEED = 20261126


def test_cells_are_floors_in_order() -> None:
    rng = np.random.default_rng(TEST_SEED)
    mags = 10.0 ** rng.uniform(-300, 300, 20_000)
    xs = np.sort(np.r_[rng.standard_normal(20_000) * mags, 0.0, -0.0, np.inf, -np.inf])
    cells = cell_of(xs)
    assert (np.diff(cells) >= 0).all() and cells.min() >= 0 and cells.max() < TOTAL_CELLS
    values = cell_value(cells)
    finite = np.isfinite(xs) & (xs >= cell_value(np.array([0]))[0])
    assert (values[finite] <= xs[finite]).all()
    nxt = cell_value(np.minimum(cells + 1, TOTAL_CELLS - 1))
    inner = finite & (cells < TOTAL_CELLS - 1) & (values != 0)
    assert (xs[inner] < nxt[inner]).all()
    points = cell_value(np.arange(0, TOTAL_CELLS, 9973))
    assert (np.diff(points) >= 0).all()
    assert TOTAL_UNITS == TOTAL_CELLS << SUB_BITS and TOTAL_UNITS < 2**53


def test_integers_and_zero_are_lattice_points() -> None:
    ints = np.arange(-(2**17) + 1, 2**17, 37, dtype=np.float64)
    assert (cell_value(cell_of(ints)) == ints).all()
    assert cell_value(cell_of(np.array([0.0, -0.0, 5e-324]))).tolist() == [0.0, 0.0, 0.0]


def test_spread_interleaves_when_a_record_is_added() -> None:
    """Adding one record moves #{positions < u} by 0 or 1 at every unit (the sensitivity
    argument of the module docstring), for ties, the zero block and distinct values."""
    rng = np.random.default_rng(TEST_SEED)
    base = np.sort(np.r_[np.zeros(7), np.full(5, 3.0), rng.normal(0, 10, 20)])
    grid = UnitGrid()
    for extra in (0.0, 3.0, -1e-300, 1e200, float(base[10])):
        more = np.sort(np.r_[base, extra])
        p, q = positions(base), positions(more)
        points = np.unique(np.r_[grid.count_at_most(p), grid.count_at_most(q)])
        rank_p = np.searchsorted(p, points, side="left")
        rank_q = np.searchsorted(q, points, side="left")
        diff = rank_q - rank_p
        assert diff.min() >= 0 and diff.max() <= 1


def test_split_keeps_groups_whole() -> None:
    """The recursion's split boundary is a group boundary: the zero block and every cell
    stay in one node."""
    grid = UnitGrid()
    zero_first = int(cell_of(np.array([0.0]))[0]) << SUB_BITS
    size = fl.ZERO_CELLS << SUB_BITS
    units = np.array([zero_first, zero_first + size // 2 - 1, zero_first + size // 2])
    assert grid.values(units).tolist() == [zero_first, zero_first, zero_first + size]
    one = int(cell_of(np.array([1.0]))[0]) << SUB_BITS
    half = 1 << (SUB_BITS - 1)
    assert grid.values(np.array([one + half - 1, one + half])).tolist() == [
        one,
        one + (1 << SUB_BITS),
    ]


def _units_at(first: int, width: int, i: np.ndarray, k: int) -> np.ndarray:
    same = np.ones(i.size, dtype=np.int64)
    return fl._units(first * same, width * same, i, k * same)


def test_positions_are_exact_unit_indices_strictly_inside_their_group() -> None:
    """Privacy review F2: positions were computed in float64, and above cell ``2**23`` (units
    ``>= 2**51``, floats 0.5 apart) the last of more than ``2**29`` records of one cell
    landed on the cell's end, where the recursion's split cut the cell. Each record's unit is
    now ``c·2**S + (W (2i + 1)) // (2k)`` (``W = width·2**S``) in integers: checked against
    Python's exact integers at the edge, without building ``k`` records."""
    one = int(cell_of(np.array([1.0]))[0])
    cells = [(one, 1), (2**23, 1), (TOTAL_CELLS - 1, 1), (fl._ZERO, fl.ZERO_CELLS), (0, 1)]
    for (first, width), k in itertools.product(cells, (1, 3, 2**29 + 1, 2**30, 2**32 - 1)):
        i = np.unique(np.array([0, 1, k // 2, k - 2, k - 1]).clip(0, k - 1))
        got = _units_at(first, width, i, k)
        start, size = first << SUB_BITS, width << SUB_BITS
        exact = [start + (size * (2 * int(j) + 1)) // (2 * k) for j in i]
        assert all(start <= u < start + size for u in got.tolist()), (first, width, k)
        assert [int(u) for u in got.tolist()] == exact, (first, width, k)
        if k > 1:  # k - 1 and k records interleave: p'_i <= p_i <= p'_{i+1}
            j = i[i < k - 1]
            fewer, more, nxt = (_units_at(first, width, j, k - 1), _units_at(first, width, j, k),
                                _units_at(first, width, j + 1, k))  # fmt: skip
            assert (more <= fewer).all() and (fewer <= nxt).all()
    assert np.issubdtype(fl.positions(np.array([1.0, 1.0])).dtype, np.integer)


def test_integer_groups_partition_the_line() -> None:
    """Integer mode's groups (``_group(..., integers=True)``): consecutive cells holding
    ``[v, v + 1)``, each cell in exactly one (the first and last cell of a group name the same
    group, the next group starts where it ends), the integer 0's holding the zero block and
    the positive cells below 1; every unit of a group answers its integer."""
    rng = np.random.default_rng(TEST_SEED)
    near = cell_of(np.arange(-70_000, 70_000, 7, dtype=np.float64))
    special = cell_of(np.array([1.0, -1.0, 0.5, -0.5, 2.0**52, -(2.0**52), 2.0**17, 1e300]))
    cells = np.unique(np.r_[np.arange(2000), np.arange(TOTAL_CELLS - 2000, TOTAL_CELLS),
                            rng.integers(0, TOTAL_CELLS, 100_000), near, near - 1,
                            (special[:, None] + np.arange(-3, 4)).ravel(),
                            np.arange(fl._ZERO - 3000, fl._ZERO + 3000)])  # fmt: skip
    cells = cells[(cells >= 0) & (cells < TOTAL_CELLS)]
    first, width = fl._group(cells, integers=True)
    assert ((first <= cells) & (cells < first + width)).all()
    for probe in (first, first + width - 1):
        again = fl._group(probe, integers=True)
        assert (again[0] == first).all() and (again[1] == width).all()
    nxt = (first + width)[first + width < TOTAL_CELLS]
    assert (fl._group(nxt, integers=True)[0] == nxt).all()
    zero = fl._group(np.array([fl._ZERO]), integers=True)
    assert zero[0][0] == fl._ZERO and zero[0][0] + zero[1][0] == cell_of(np.array([1.0]))[0]
    values = np.floor(cell_value(cells))
    assert (fl.answer_of(cells << SUB_BITS, integers=True) == values).all()
    units = (first << SUB_BITS) + ((width << SUB_BITS) - 1)  # a group's last unit
    assert (fl.answer_of(units, integers=True) == values).all()


def test_integer_spread_interleaves_and_answers_each_record() -> None:
    """Integer mode: one added record moves ``#{positions < u}`` by 0 or 1 at every unit, and
    each record's own position answers its value (below ``2**17`` in magnitude; further out a
    cell holds several integers and answers its lattice point, at most the value)."""
    rng = np.random.default_rng(TEST_SEED)
    base = np.sort(np.r_[np.zeros(7), np.full(5, 3.0), np.full(3, -1.0),
                         rng.integers(-50, 100_000, 20).astype(np.float64)])  # fmt: skip
    grid = UnitGrid(integers=True)
    for extra in (0.0, 3.0, -1.0, 1e12, 70_001.0, float(base[10])):
        more = np.sort(np.r_[base, extra])
        p, q = positions(base, True), positions(more, True)
        answers = fl.answer_of(q, integers=True)
        small = np.abs(more) < 2**17
        assert (answers[small] == more[small]).all() and (answers <= more).all()
        points = np.unique(np.r_[grid.count_at_most(p), grid.count_at_most(q)])
        diff = np.searchsorted(q, points, side="left") - np.searchsorted(p, points, side="left")
        assert diff.min() >= 0 and diff.max() <= 1


def test_side_units_are_the_groups_at_the_public_bounds() -> None:
    """A public side leaves the units from the group holding it on (to its end); the edge
    groups are the zones where a recursion node is forced."""
    first, last, zones = fl.side_units((0.0, None))
    assert first == fl._ZERO << SUB_BITS and last == TOTAL_UNITS - 1
    assert zones == ((fl._ZERO + fl.ZERO_CELLS) << SUB_BITS, TOTAL_UNITS)
    first, last, zones = fl.side_units((0.0, None), integers=True)
    assert zones[0] == int(cell_of(np.array([1.0]))[0]) << SUB_BITS  # the integer 0's group
    first, last, zones = fl.side_units((None, 3.0), integers=True)
    assert first == 0 and zones[0] == 0
    assert zones[1] == int(cell_of(np.array([3.0]))[0]) << SUB_BITS
    assert last == (int(cell_of(np.array([4.0]))[0]) << SUB_BITS) - 1
    assert fl.side_units((None, None)) == (0, TOTAL_UNITS - 1, (0, TOTAL_UNITS))
    from treedp.value_methods.recursion_forced import forced_sides

    grid = UnitGrid(zones=fl.side_units((0.0, None))[2])
    low_end = grid.zones[0] if grid.zones else 0
    assert forced_sides(grid, low_end - 1) == (True, False)
    assert forced_sides(grid, low_end) == (False, False)
    assert forced_sides(UnitGrid(), 0) == (False, False)
