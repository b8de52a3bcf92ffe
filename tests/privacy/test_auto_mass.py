"""The mass histogram of ``"auto"`` (the bias of a bound estimated privately, issue 29 item 2).

Privacy: the stated sensitivity ``(Δ1, Δ2²)`` is checked by brute force over small tables for
persons and (person, key) pairs, with mutants the check catches (the count histogram's
``(w, w²)``, and ``Δ2² = w·Q²``); the quantisation is exact (integers summing to ``Q``, a
function of the entry's rows only). Files written before the mass histogram (by main at
b1d9d4d, ``tests/data/auto_bound_main_*``) still load and still refuse a forged spend; new
files state ``histogram: "mass"``. Utility: with the bias known, the objective keeps more
rows when heavy persons differ and few when they do not.
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.privacy.test_auto_bound_review import _forge_grouped as _forge
from tests.stats import TEST_SEED
from treedp.exceptions import ReleaseFormatError
from treedp.noise import InsecureSeededSource
from treedp.privacy.auto_bound import (
    AutoBound,
    candidates,
    choose_from_histogram,
    histogram_sensitivity,
)
from treedp.privacy.auto_mass import (
    MASS_CELLS,
    MASS_UNITS,
    coarse_of,
    estimated_objective,
    mass_counts,
    mass_sensitivity,
    quantised_shares,
    value_cells,
)
from treedp.release.format import _checksum

DATA = Path(__file__).resolve().parents[1] / "data"
GRID = candidates(16)
CELLS = (0, 5, 15)


def _hist(entries: list[tuple[int, ...]]) -> np.ndarray:
    """The mass histogram of entries given as their rows' cells."""
    if not entries:
        return mass_counts(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), GRID)
    code = np.repeat(np.arange(len(entries)), [len(e) for e in entries])
    cell = np.array([c for e in entries for c in e], dtype=np.int64)
    return mass_counts(code, cell, GRID)


def _entries() -> list[tuple[int, ...]]:
    """Every entry of 1..2 rows over three cells, and of 5 rows in one cell (2 and 5 rows fall
    in different buckets of the grid, 1 and 2 in the same coarse one)."""
    small = [c for n in range(1, 3) for c in itertools.combinations_with_replacement(CELLS, n)]
    return small + [(c,) * 5 for c in CELLS]


@functools.cache
def _worst(g: int, neighbours: str) -> tuple[int, int]:
    """The largest (L1, L2²) change between a table of <= 1 person (of <= g entries) and its
    neighbours (the histogram adds over persons: more persons change nothing)."""
    entries = _entries()
    persons = [p for k in range(1, g + 1) for p in itertools.product(entries, repeat=k)]
    worst = (0, 0)
    for table in [[]] + [list(p) for p in persons]:
        base = _hist(table)
        if neighbours == "add_remove":
            others = [table + list(p) for p in persons]
        else:
            others = [list(p) for p in persons] if table else []
        for other in others:
            d = _hist(other) - base
            worst = (max(worst[0], int(np.abs(d).sum())), max(worst[1], int((d * d).sum())))
    return worst


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("g", [1, 2])
def test_mass_sensitivity_is_exact_by_brute_force(g: int, neighbours: str) -> None:
    assert _worst(g, neighbours) == mass_sensitivity(neighbours, g)


def test_brute_force_catches_mass_sensitivity_mutants() -> None:
    """The count histogram's sensitivity (one unit per entry), and ``Δ2² = g·Q²`` (entries in
    different cells), are below what the brute force finds."""
    worst = _worst(2, "add_remove")
    assert worst[0] > histogram_sensitivity("add_remove", 2)[0]
    assert worst[1] > histogram_sensitivity("add_remove", 2)[1]
    assert worst[1] > 2 * MASS_UNITS**2


def test_brute_force_catches_a_histogram_of_rows_not_shares(monkeypatch) -> None:
    """A mutant adding each entry's rows per cell times ``Q`` (not its share: heavy persons
    weigh more) breaks the stated sensitivity, and the brute force sees it."""
    from treedp.privacy import auto_mass

    monkeypatch.setattr(auto_mass, "_sparse_shares", lambda who, count, rows: count * MASS_UNITS)
    _worst.cache_clear()
    try:
        assert _worst(1, "add_remove")[0] > mass_sensitivity("add_remove")[0]
    finally:
        _worst.cache_clear()


def test_quantised_shares_are_exact_and_sum_to_q() -> None:
    rng = np.random.default_rng(TEST_SEED)
    cells = rng.integers(0, 50, (500, MASS_CELLS))
    cells[:, ::3] = 0
    rows = cells.sum(axis=1)
    keep = rows > 0
    shares = quantised_shares(cells[keep], rows[keep])
    assert shares.dtype.kind == "i" and (shares >= 0).all()
    assert (shares.sum(axis=1) == MASS_UNITS).all()
    # each cell and each cumulative share within one unit of the exact one (cumulative rounding)
    exact = cells[keep] * MASS_UNITS / rows[keep][:, None]
    assert (np.abs(shares - exact) < 1).all()
    gap = np.cumsum(exact, axis=1) - np.cumsum(shares, axis=1)
    assert ((gap > -1e-9) & (gap < 1)).all()
    third = quantised_shares(np.array([[1, 1, 1] + [0] * (MASS_CELLS - 3)]), np.array([3]))
    q = MASS_UNITS
    assert third[0, :3].tolist() == [q // 3, 2 * q // 3 - q // 3, q - 2 * q // 3]


@pytest.mark.parametrize("block", [1, 7, 64])
def test_mass_counts_do_not_depend_on_the_block(block: int) -> None:
    """Entries taken a block at a time (the sparse shares) give the dense sum exactly."""
    rng = np.random.default_rng(TEST_SEED)
    code = np.unique(rng.integers(0, 300, 4000), return_inverse=True)[1].ravel()
    cell = rng.integers(0, MASS_CELLS, code.size) * (rng.random(code.size) < 0.6)
    rows = np.bincount(code)
    per = np.zeros((rows.size, MASS_CELLS), dtype=np.int64)
    np.add.at(per, (code, cell), 1)
    shares = quantised_shares(per, rows)
    bucket = coarse_of(GRID)[np.maximum(np.searchsorted(GRID, rows, side="right") - 1, 0)]
    dense = np.zeros((int(coarse_of(GRID).max()) + 1, MASS_CELLS), dtype=np.int64)
    np.add.at(dense, bucket, shares)
    assert np.array_equal(mass_counts(code, cell, GRID, block=block), dense)


def _persons(heavy_differ: bool) -> tuple[np.ndarray, np.ndarray]:
    """2,000 persons of 2 rows (values in cell 0 or 8) and 200 of 200 rows (in cell 8 when
    ``heavy_differ``, else like the others): a tenth of the persons hold 90% of the rows."""
    rng = np.random.default_rng(TEST_SEED)
    rows = np.r_[np.full(2000, 2), np.full(200, 200)]
    code = np.repeat(np.arange(rows.size), rows)
    cell = np.where(rng.random(code.size) < 0.5, 0, 8)
    if heavy_differ:
        cell[code >= 2000] = 8
    return code, cell


def test_the_objective_keeps_rows_only_when_heavy_persons_differ() -> None:
    grid = candidates(1024)
    chosen = {}
    for differ in (False, True):
        hist = mass_counts(*_persons(differ), grid)
        score = estimated_objective(hist, 1.0, grid, noise_unit=50.0, keys=4)
        chosen[differ] = int(grid[np.argmin(score)])
    assert chosen[False] < 20 and chosen[True] >= 50


def _release_grouped(**auto):
    rng = np.random.default_rng(TEST_SEED)
    n = 800
    df = pd.DataFrame(
        {"x": rng.integers(0, 32, n), "pid": rng.integers(0, 90, n), "k": rng.choice(["a", "b"], n)}
    )
    return treedp.release_grouped(
        df,
        column="x",
        by="k",
        keys=["a", "b"],
        privacy_unit="pid",
        bounds=(0, 31),
        bins="integers",
        epsilon=1.0,
        rng=InsecureSeededSource(TEST_SEED),
        **auto,
    )


def test_new_files_state_the_mass_histogram_and_old_rule_files_do_not(tmp_path) -> None:
    new = _release_grouped(max_contributions="auto")
    assert new.bound_choice["histogram"] == "mass"
    assert new.bound_choice["sensitivity"] == list(mass_sensitivity("add_remove"))
    old = _release_grouped(max_contributions=AutoBound(heterogeneity=0.1))
    assert "histogram" not in old.bound_choice and old.bound_choice["sensitivity"] == [1, 1]
    for gr in (new, old):
        gr.save(tmp_path / "g.tdp")
        assert treedp.load_grouped_release(tmp_path / "g.tdp").guarantee == gr.guarantee


def _understate(meta: dict) -> None:
    choice = meta["bound_choice"]
    meta["guarantee"]["epsilon"] -= choice["epsilon_spent"] * 0.99
    choice["epsilon_spent"] *= 0.01


def test_files_written_by_main_still_load_and_refuse_a_forged_spend(tmp_path) -> None:
    """Grouped (per group, pure ε) and per-person (zCDP) files of the one-histogram rule."""
    gr = treedp.load_grouped_release(DATA / "auto_bound_main_grouped.tdp")
    assert gr.bound_choice is not None and "histogram" not in gr.bound_choice
    bad = tmp_path / "bad.tdp"
    _forge(DATA / "auto_bound_main_grouped.tdp", bad, _understate)
    with pytest.raises(ReleaseFormatError, match="bound choice"):
        treedp.load_grouped_release(bad)
    rel = treedp.load_release(DATA / "auto_bound_main_person.json")
    assert rel.unit is not None and rel.unit.bound_noise == "10" and not rel.unit.bound_histogram
    doc = json.loads((DATA / "auto_bound_main_person.json").read_text())
    unit = doc["payload"]["metadata"]["unit"]
    unit["rho"] -= unit["bound_rho"] * 0.99
    unit["bound_rho"] *= 0.01
    doc["checksum"] = _checksum(doc["payload"])
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="bound choice"):
        treedp.load_release(tmp_path / "bad.json")


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c.update(sensitivity=[1, 1]),  # the count histogram's, under a mass one
        lambda c: c.update(histogram="counts?"),
    ],
    ids=["count_sensitivity", "unknown_histogram"],
)
def test_a_mass_choice_claiming_a_count_sensitivity_is_refused(tmp_path, edit) -> None:
    gr = _release_grouped(max_contributions="auto")
    gr.save(tmp_path / "g.tdp")
    _forge(tmp_path / "g.tdp", tmp_path / "bad.tdp", lambda meta: edit(meta["bound_choice"]))
    with pytest.raises(ReleaseFormatError, match="bound choice"):
        treedp.load_grouped_release(tmp_path / "bad.tdp")


def _few_persons_choices(runs: int) -> list[int]:
    """The bound chosen for 40 persons of 3 rows (all in one cell) on the whole grid."""
    grid = candidates(2**16)
    code = np.repeat(np.arange(40), 3)
    mass = mass_counts(code, np.zeros(code.size, dtype=np.int64), grid)
    hist = np.zeros(grid.size, dtype=np.int64)
    return [
        choose_from_histogram(
            hist, grid, AutoBound(), 10.0, 0.1, "add_remove", InsecureSeededSource(s), mass=mass
        )[0]
        for s in range(runs)
    ]


def test_few_persons_do_not_pull_the_bound_to_the_cap(monkeypatch) -> None:
    """Privacy review F7 for the mass histogram: noise in the many empty high buckets
    (weighted by their row counts) must not look like heavy persons; with the buckets' floor
    the bound stays small, and without it (the mutant) it does not."""
    from treedp.privacy import auto_mass

    assert sum(m <= 8 for m in _few_persons_choices(20)) >= 18
    monkeypatch.setattr(auto_mass, "floor_sds", lambda buckets: -np.inf)
    assert sum(m <= 8 for m in _few_persons_choices(20)) < 18


def _claiming(sensitivity: list[int]):  # type: ignore[no-untyped-def]
    """An edit that states a smaller sensitivity and lowers the guarantee to match."""

    def edit(meta: dict) -> None:
        choice = meta["bound_choice"]
        ratio = sensitivity[0] / choice["sensitivity"][0]
        meta["guarantee"]["epsilon"] -= choice["epsilon_spent"] * (1 - ratio)
        choice["epsilon_spent"] *= ratio
        choice["sensitivity"] = sensitivity

    return edit


@pytest.mark.parametrize(
    ("auto", "stated"),
    [
        (dict(max_groups=2, max_contributions_per_group="auto"), [2, 4]),
        (dict(max_contributions="auto", neighbours="replace"), [2, 2]),
    ],
    ids=["per_group_g2", "replace"],
)
def test_a_mass_choice_claiming_one_pair_under_add_remove_is_refused(
    tmp_path, auto, stated
) -> None:  # type: ignore[no-untyped-def]
    """Privacy review R7, F3: a per-group file (``g = 2``: ``(2Q, 4Q²)``) or a ``replace`` file
    (a person moves bucket and cells at once: ``(2Q, 2Q²)``) whose choice claims one pair
    under add/remove, ``(Q, Q²)``, with its spend and guarantee lowered to match, is refused:
    the loader recomputes the sensitivity from ``g`` and the relation (a loader that took
    ``g = 1`` or ignored the relation would accept it)."""
    gr = _release_grouped(**auto)
    assert gr.bound_choice["sensitivity"] == [stated[0] * MASS_UNITS, stated[1] * MASS_UNITS**2]
    gr.save(tmp_path / "g.tdp")
    _forge(tmp_path / "g.tdp", tmp_path / "bad.tdp", _claiming([MASS_UNITS, MASS_UNITS**2]))
    with pytest.raises(ReleaseFormatError, match="bound choice"):
        treedp.load_grouped_release(tmp_path / "bad.tdp")


def test_value_cells_come_from_the_public_bins_only(monkeypatch) -> None:
    """Privacy review R7, F2: each row's value cell is its bin's place among the release's
    public bins, ``b·k // B``, never scaled by the data. Data in bins 0..3 of 64 fall in
    cells 0 and 1 (a mutant scaling by the largest bin seen spreads them over all 32 cells,
    and its neighbour audit measured Δ1 = 9,466 for a stated 128)."""
    from treedp.privacy import auto_bound

    assert value_cells(np.arange(64), 64).tolist() == [b * MASS_CELLS // 64 for b in range(64)]
    seen: list[np.ndarray] = []
    real = auto_bound.mass_counts

    def spy(codes, cells, grid):  # type: ignore[no-untyped-def]
        seen.append(np.asarray(cells).copy())
        return real(codes, cells, grid)

    monkeypatch.setattr(auto_bound, "mass_counts", spy)
    rng = np.random.default_rng(TEST_SEED)
    df = pd.DataFrame({"x": rng.integers(0, 4, 600), "pid": rng.integers(0, 80, 600)})
    treedp.release_grouped(
        df.assign(k="a"),
        column="x",
        by="k",
        keys=["a"],
        privacy_unit="pid",
        max_contributions="auto",
        bounds=(0, 63),
        bins="integers",
        epsilon=1.0,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert seen and set(np.concatenate(seen).tolist()) <= {0, 1}
