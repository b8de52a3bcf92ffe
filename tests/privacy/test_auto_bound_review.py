"""Regression tests of the R1 privacy review of ``"auto"`` bounds: the (person, key) pairing
is injective for any person identity (huge ids, the extreme int64/uint64 bit patterns, two
64-bit words), the observed histogram sensitivity on neighbouring tables with such ids is
exactly ``(g, g²)``, and each person's keys are drawn uniformly from their own keys.

Statistical checks use the fixed seed ``TEST_SEED`` at false-failure rate ``ALPHA`` (1e-6).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp.engines.auto_pass import AutoPass
from treedp.noise import InsecureSeededSource
from treedp.privacy.auto_bound import bucket_counts, candidates, entry_codes, person_codes
from treedp.privacy.auto_mass import MASS_UNITS


def entry_counts(person, group, max_groups, source, n_groups):  # type: ignore[no-untyped-def]
    """Each entry's rows (``np.bincount`` of :func:`entry_codes`) and the rows kept."""
    codes, rows = entry_codes(person, group, max_groups, source, n_groups)
    return np.bincount(codes), rows


I64 = np.iinfo(np.int64)
#: Pairs of distinct person values that an int64 ``person·G + key`` merges for some ``G``.
COLLIDING = [
    ([10, 10 + 2**62], 4),  # the hashes of ids 5 and 5 + 2**61 (the review's reproduction)
    ([I64.max, -1], 2),  # 2**63-1 and the uint64 maximum's bit pattern: both ·2 → -2
    ([I64.min, 0], 2),  # 2**63 (uint64) and 0: both ·2 → 0
]


@pytest.mark.parametrize(("ids", "n_groups"), COLLIDING)
@pytest.mark.parametrize("view", ["int64", "uint64"])
def test_pairs_are_injective_for_extreme_ids(ids: list[int], n_groups: int, view: str) -> None:
    person = np.repeat(np.array(ids, dtype=np.int64), 3)
    if view == "uint64":
        person = person.view(np.uint64)
    group = np.zeros(6, dtype=np.int64)
    counts, rows = entry_counts(person, group, 1, InsecureSeededSource(TEST_SEED), n_groups)
    assert rows is not None and rows.size == 6
    assert sorted(counts.tolist()) == [3, 3]
    persons, _ = entry_counts(person, None, None, InsecureSeededSource(TEST_SEED), n_groups)
    assert sorted(persons.tolist()) == [3, 3]


def test_two_word_identities_are_persons() -> None:
    """A 128-bit identity as two int64 words: rows equal in both words are one person."""
    words = np.array([[0, 1], [1, 0], [0, 0], [I64.max, -1], [-1, I64.max]], dtype=np.int64)
    person = np.repeat(words, [1, 2, 3, 4, 5], axis=0)
    assert sorted(np.bincount(person_codes(person)).tolist()) == [1, 2, 3, 4, 5]
    group = np.zeros(len(person), dtype=np.int64)
    counts, _ = entry_counts(person, group, 1, InsecureSeededSource(TEST_SEED), 1)
    assert sorted(counts.tolist()) == [1, 2, 3, 4, 5]
    auto = AutoPass(candidates(8), 1, lambda h, m: None, 4)  # type: ignore[arg-type,return-value]
    bins = np.zeros(len(person), dtype=np.int64)
    hist, mass, rows = auto.histogram(person, group, bins, InsecureSeededSource(TEST_SEED), 1)
    assert hist.sum() == 5 and rows is not None and rows.size == len(person)
    assert mass is not None and mass.sum() == 5 * MASS_UNITS  # five entries of Q units


def _table(rng: np.random.Generator, n: int, n_groups: int, g: int) -> tuple[np.ndarray, ...]:
    """Persons with huge random ids (colliding under ``·n_groups`` in int64 pairs) and at most
    ``g`` keys each (so that the draw keeps them all and neighbours differ by one person)."""
    base = rng.integers(I64.min, I64.max, n, dtype=np.int64)
    ids = np.concatenate([base, base ^ np.int64(I64.min)])  # x and x + 2**63: equal ·2, ·4, ...
    keys = np.stack([rng.choice(n_groups, g, replace=False) for _ in ids])
    rows = rng.integers(1, 40, (ids.size, g))
    person = np.repeat(np.repeat(ids, g), rows.ravel())
    group = np.repeat(keys.ravel(), rows.ravel())
    return person, group


@pytest.mark.parametrize("g", [1, 2, 3])
def test_neighbouring_tables_move_the_histogram_by_the_stated_sensitivity(g: int) -> None:
    """Add/remove one person with ``g`` keys of equal rows (all in one bucket): the pair
    histogram moves by exactly ``Δ1 = g``, ``Δ2² = g²``; replacing them by a person in
    another bucket moves it by ``2g``, ``2g²`` (histogram_sensitivity's values)."""
    rng = np.random.default_rng(TEST_SEED)
    n_groups, grid = 4, candidates(64)
    person, group = _table(rng, 50, n_groups, g)

    def hist(p: np.ndarray, k: np.ndarray) -> np.ndarray:
        counts, _ = entry_counts(p, k, g, InsecureSeededSource(TEST_SEED), n_groups)
        return bucket_counts(counts, grid)

    base = hist(person, group)
    assert base.sum() == np.unique(np.stack([person, group]), axis=1).shape[1]
    extra_id = np.int64(person[0]) ^ np.int64(I64.min)  # a new person, ·G-colliding with one
    extra_id = extra_id if extra_id not in person else np.int64(I64.max)
    assert extra_id not in person
    for other, r in ((extra_id, 5), (I64.min + 7, 30)):
        add_p = np.concatenate([person, np.full(g * r, other, dtype=np.int64)])
        add_k = np.concatenate([group, np.repeat(np.arange(g), r)])
        diff = hist(add_p, add_k) - base
        assert (np.abs(diff).sum(), (diff**2).sum()) == (g, g * g)
    first = person != person[0]
    dropped = hist(person[first], group[first])
    added = hist(
        np.concatenate([person[first], np.full(g * 30, extra_id)]),
        np.concatenate([group[first], np.repeat(np.arange(g), 30)]),
    )
    diff = added - hist(
        np.concatenate([person[first], np.full(g * 1, extra_id)]),
        np.concatenate([group[first], np.arange(g)]),
    )
    assert (np.abs(diff).sum(), (diff**2).sum()) == (2 * g, 2 * g * g)
    assert dropped.sum() == base.sum() - np.unique(group[~first]).size


def test_each_person_draws_uniformly_among_their_own_keys() -> None:
    """max_groups = 1 among 4 own keys of unequal rows, while key 0 is the most popular over
    all persons: the key kept is uniform over the person's keys (chi-square, ALPHA). A draw
    that prefers keys popular across persons (the review's ``global_draw``) fails."""
    rng = np.random.default_rng(TEST_SEED)
    n, own = 4000, 4
    ids = rng.integers(I64.min, I64.max, n, dtype=np.int64)
    rows = rng.integers(1, 4, (n, own))  # unequal rows: the draw is per key, not per row
    person = np.repeat(np.repeat(ids, own), rows.ravel())
    group = np.repeat(np.tile(np.arange(own), n), rows.ravel())
    crowd = np.arange(3 * n, dtype=np.int64) + 7  # persons only in key 0 (key 0 popular)
    person = np.concatenate([person, crowd])
    group = np.concatenate([group, np.zeros(crowd.size, dtype=np.int64)])
    _, kept = entry_counts(person, group, 1, InsecureSeededSource(TEST_SEED), own)
    assert kept is not None
    drawn = kept[np.isin(person[kept], ids)]
    pairs = np.unique(np.stack([person[drawn], group[drawn]]), axis=1)
    assert pairs.shape[1] == n  # each person kept exactly one key, all its rows
    observed = np.bincount(pairs[1], minlength=own)
    assert stats.chisquare(observed).pvalue > ALPHA


def _events(monkeypatch, data: object, **bounds: object) -> list[str]:
    """The order of the charge, the choice and every exact noise draw of one release."""
    import treedp
    from treedp import grouped_auto
    from treedp.noise.families import DiscreteGaussian, DiscreteLaplace
    from treedp.privacy.accountant import Accountant

    events: list[str] = []
    real_choose, real_charge = grouped_auto.choose_from_histogram, Accountant.charge

    def choose(*args: object, **kwargs: object) -> object:
        events.append("choose")
        return real_choose(*args, **kwargs)  # type: ignore[arg-type]

    def charge(self: Accountant, record: object) -> object:
        events.append("charge")
        return real_charge(self, record)  # type: ignore[arg-type]

    monkeypatch.setattr(grouped_auto, "choose_from_histogram", choose)
    monkeypatch.setattr(Accountant, "charge", charge)
    for family in (DiscreteGaussian, DiscreteLaplace):
        real_sample = family.sample

        def sample(self: object, *args: object, _real: object = real_sample) -> object:
            events.append("noise")
            return _real(self, *args)  # type: ignore[operator]

        monkeypatch.setattr(family, "sample", sample)
    treedp.release_grouped(
        data,
        column="x",
        by="k",
        keys=list("abcd"),
        privacy_unit="pid",
        bounds=(0, 31),
        bins="integers",
        privacy=treedp.ZCDP(0.5),
        accountant=treedp.Accountant(treedp.ZCDP(1.0)),
        rng=InsecureSeededSource(TEST_SEED),
        **bounds,
    )
    return events


def _placed(df: Any, where: str, tmp_path: Path) -> Any:
    """The table itself ("memory") or the path of a Parquet file of it ("parquet")."""
    if where != "parquet":
        return df
    df.to_parquet(tmp_path / "t.parquet")
    return str(tmp_path / "t.parquet")


@pytest.mark.parametrize("where", ["memory", "parquet"])
@pytest.mark.parametrize(
    "bounds",
    [{"max_contributions": "auto"}, {"max_groups": 2, "max_contributions_per_group": "auto"}],
)
def test_the_charge_comes_before_the_choice_and_any_noise(
    tmp_path, monkeypatch, where: str, bounds: dict
) -> None:
    """A spy on the accountant, the choice and the exact samplers: one charge, first; then
    the choice and its noise (the review's ``charge_after_noise`` and ``memory_charge_after``
    mutants put the choice first)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(TEST_SEED)
    n = 600
    df = pd.DataFrame(
        {
            "x": rng.integers(0, 32, n),
            "pid": rng.integers(0, 80, n).astype(str),
            "k": rng.choice(np.array(list("abcd")), n),
        }
    )
    events = _events(monkeypatch, _placed(df, where, tmp_path), **bounds)
    assert events.count("charge") == 1 and events.count("choose") == 1
    assert events[0] == "charge" and events.index("choose") < events.index("noise")


@pytest.mark.parametrize("where", ["memory", "parquet"])
@pytest.mark.parametrize(
    "bounds",
    [{"max_contributions": "auto"}, {"max_groups": 1, "max_contributions_per_group": "auto"}],
)
def test_the_domain_is_checked_before_the_charge(
    tmp_path, monkeypatch, where: str, bounds: dict
) -> None:
    """With "auto" the mechanism's domain is checked on each key's rows before bounding (a
    public-free upper bound of the bounded totals), before the charge: a table outside it is
    refused with nothing charged (before the fix: refused after the charge and the choice)."""
    import treedp
    from treedp.exceptions import DataError
    from treedp.mechanisms.base import Mechanism

    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(TEST_SEED)
    n = 400  # every key holds more than 50 rows before bounding
    df = pd.DataFrame(
        {
            "x": rng.integers(0, 32, n),
            "pid": rng.integers(0, 40, n).astype(str),
            "k": np.tile(np.array(list("abcd")), n // 4),
        }
    )
    data = _placed(df, where, tmp_path)
    checked: list[int] = []
    real = Mechanism.check_domain

    def check_domain(self: Mechanism, total: int) -> None:
        checked.append(total)
        if total > 50:
            raise DataError("outside the (test's) domain")
        real(self, total)

    monkeypatch.setattr(Mechanism, "check_domain", check_domain)
    ledger = treedp.Accountant(treedp.ZCDP(1.0))
    common = dict(column="x", by="k", keys=list("abcd"), privacy_unit="pid", bounds=(0, 31))
    with pytest.raises(DataError, match="domain"):
        treedp.release_grouped(
            data,
            **common,
            bins="integers",
            privacy=treedp.ZCDP(0.5),
            accountant=ledger,
            rng=InsecureSeededSource(TEST_SEED),
            **bounds,
        )
    assert checked and checked[0] == n // 4 and not ledger.history


def test_the_candidates_stop_at_the_largest_bound_the_trees_can_take(monkeypatch) -> None:
    """At a small ρ the trees' per-record budget ``rest/Δ2²(m)`` leaves the valid range for
    large ``m``: every candidate handed to the choice keeps it valid (the review's
    ``no_largest`` mutant offers the whole grid up to the cap), and heavy persons with
    heterogeneity 1 still get a release, not a refusal after the charge."""
    import treedp
    from treedp import grouped_auto
    from treedp.noise.families import MIN_RHO
    from treedp.privacy.contribution import ContributionBounds, scaled_budget
    from treedp.release.unit import loss_factor

    pd = pytest.importorskip("pandas")
    grids: list[np.ndarray] = []
    real = grouped_auto.choose_from_histogram

    def spy(hist: np.ndarray, grid: np.ndarray, *args: object, **kwargs: object) -> object:
        grids.append(np.asarray(grid).copy())
        return real(hist, grid, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(grouped_auto, "choose_from_histogram", spy)
    n = 30 * 400
    df = pd.DataFrame({"x": np.arange(n) % 32, "pid": np.repeat(np.arange(30), 400)})
    rho = 0.01
    rel = treedp.release_cdf(
        df,
        column="x",
        privacy_unit=treedp.PrivacyUnit(
            "pid", max_contributions=treedp.AutoBound(heterogeneity=1.0)
        ),
        bounds=(0, 31),
        bins="integers",
        privacy=treedp.ZCDP(rho),
        rng=InsecureSeededSource(TEST_SEED),
    )
    (grid,) = grids
    rest = rho - rho * 0.1  # the trees' share (AutoBound's default share 0.1)
    assert grid[-1] < 2**16 and rel.guarantee.rho <= rho
    for m in grid:
        bounds = ContributionBounds.from_parameters("pid", int(m), None, None, grouped=False)
        factor = loss_factor(bounds, "add_remove", True)
        assert scaled_budget(rest, factor) >= MIN_RHO * (1 - 1e-9), m


def test_the_files_second_pass_sees_only_the_drawn_keys(tmp_path, monkeypatch) -> None:
    """Per group on files: the spill is cut to each person's drawn keys before pass 2, so the
    trees' bounding sees at most ``max_groups`` keys per person, the very pairs the histogram
    counted (the review's ``files_no_rewrite`` mutant hands pass 2 every key's rows)."""
    import treedp
    from treedp.engines.files import grouped as files_grouped

    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    pid = np.repeat(np.arange(60), 20)
    df = pd.DataFrame({"x": np.zeros(1200, int), "pid": pid, "k": np.tile(list("abcd"), 300)})
    df.to_parquet(tmp_path / "t.parquet")
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    real = files_grouped.bound_contributions

    def spy(person: np.ndarray, group: np.ndarray, *args: object, **kwargs: object) -> object:
        seen.append((np.asarray(person).copy(), np.asarray(group).copy()))
        return real(person, group, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(files_grouped, "bound_contributions", spy)
    treedp.release_grouped(
        str(tmp_path / "t.parquet"),
        column="x",
        by="k",
        keys=list("abcd"),
        privacy_unit="pid",
        max_groups=2,
        max_contributions_per_group="auto",
        bounds=(0, 31),
        bins="integers",
        privacy=treedp.ZCDP(0.5),
        rng=InsecureSeededSource(TEST_SEED),
    )
    person = np.concatenate([p for p, _ in seen])
    group = np.concatenate([g for _, g in seen])
    pairs = np.unique(np.stack([person, group]), axis=1)
    assert person.size == 60 * 2 * 5  # the drawn keys' rows only (5 rows per key)
    assert np.bincount(np.unique(pairs[0], return_inverse=True)[1]).max() == 2


def test_a_choice_spend_in_another_unit_is_refused(tmp_path) -> None:
    """A zCDP file whose bound choice states ``epsilon_spent`` (not ``rho_spent``) is refused
    (the review's ``loader_unit`` mutant loads it)."""
    import json
    import zipfile

    import treedp
    from treedp.exceptions import ReleaseFormatError
    from treedp.release.format import _checksum

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(TEST_SEED)
    df = pd.DataFrame({"x": rng.integers(0, 32, 500), "pid": rng.integers(0, 60, 500), "k": "a"})
    gr = treedp.release_grouped(
        df,
        column="x",
        by="k",
        keys=["a"],
        privacy_unit="pid",
        max_contributions="auto",
        bounds=(0, 31),
        bins="integers",
        privacy=treedp.ZCDP(0.5),
        rng=InsecureSeededSource(TEST_SEED),
    )
    path, bad = tmp_path / "g.tdp", tmp_path / "bad.tdp"
    gr.save(path)
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "grouped.json":
                doc = json.loads(data)
                choice = doc["payload"]["metadata"]["bound_choice"]
                choice["epsilon_spent"] = choice.pop("rho_spent")
                doc["checksum"] = _checksum(doc["payload"])
                data = json.dumps(doc).encode()
            zout.writestr(item, data)
    treedp.load_grouped_release(path)
    with pytest.raises(ReleaseFormatError, match="unit"):
        treedp.load_grouped_release(bad)


def _forge_grouped(path, bad, edit) -> None:
    """Copy a grouped release file, editing its metadata (checksum recomputed)."""
    import json
    import zipfile

    from treedp.release.format import _checksum

    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "grouped.json":
                doc = json.loads(data)
                edit(doc["payload"]["metadata"])
                doc["checksum"] = _checksum(doc["payload"])
                data = json.dumps(doc).encode()
            zout.writestr(item, data)


def _understate(meta: dict) -> None:
    """Claim a hundredth of the choice's ρ, and lower the guarantee by the difference."""
    choice = meta["bound_choice"]
    meta["guarantee"]["rho"] -= choice["rho_spent"] * 0.99
    choice["rho_spent"] *= 0.01


@pytest.mark.parametrize(
    "edit",
    [
        _understate,
        lambda meta: (_understate(meta), meta["bound_choice"].update(sensitivity=[1, 1])),
        lambda meta: (_understate(meta), meta["bound_choice"].pop("noise_parameter")),
    ],
    ids=["spend", "spend_and_sensitivity", "no_parameter"],
)
def test_a_file_understating_the_choice_is_refused(tmp_path, edit) -> None:
    """The choice's noise parameter and sensitivity are stored and its loss recomputed on
    load: a file claiming less (with a guarantee lowered to match) is refused (before: it
    loaded, stating a guarantee below what was spent)."""
    import treedp
    from treedp.exceptions import ReleaseFormatError

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(TEST_SEED)
    n = 800
    df = pd.DataFrame(
        {"x": rng.integers(0, 32, n), "pid": rng.integers(0, 90, n), "k": rng.choice(["a", "b"], n)}
    )
    gr = treedp.release_grouped(
        df,
        column="x",
        by="k",
        keys=["a", "b"],
        privacy_unit="pid",
        max_groups=2,
        max_contributions_per_group="auto",
        bounds=(0, 31),
        bins="integers",
        privacy=treedp.ZCDP(0.5),
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert gr.bound_choice["sensitivity"] == [2 * MASS_UNITS, 4 * MASS_UNITS**2]  # g = 2
    path, bad = tmp_path / "g.tdp", tmp_path / "bad.tdp"
    gr.save(path)
    assert treedp.load_grouped_release(path).guarantee == gr.guarantee
    _forge_grouped(path, bad, edit)
    with pytest.raises(ReleaseFormatError, match="bound choice"):
        treedp.load_grouped_release(bad)


def test_a_per_person_file_understating_the_choice_is_refused(tmp_path) -> None:
    """The same for a per-person release: its unit stores the choice's σ² (``bound_noise``)."""
    import json

    import treedp
    from treedp.exceptions import ReleaseFormatError
    from treedp.release.format import _checksum

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(TEST_SEED)
    df = pd.DataFrame({"x": rng.integers(0, 32, 500), "pid": rng.integers(0, 60, 500)})
    rel = treedp.release_cdf(
        df,
        column="x",
        privacy_unit=treedp.PrivacyUnit("pid", max_contributions="auto"),
        bounds=(0, 31),
        bins="integers",
        privacy=treedp.ZCDP(0.5),
        rng=InsecureSeededSource(TEST_SEED),
    )
    path, bad = tmp_path / "r.json", tmp_path / "bad.json"
    rel.save(path)
    assert treedp.load_release(path).guarantee == rel.guarantee
    doc = json.loads(path.read_text())
    unit = doc["payload"]["metadata"]["unit"]
    noise = Fraction(unit["bound_noise"])  # σ² = Δ2²/(2·ρ_a) = Q²/(2·0.05), rounded up
    assert (
        unit["bound_histogram"] == "mass" and 10 * MASS_UNITS**2 <= noise < 10 * MASS_UNITS**2 + 1
    )
    unit["rho"] -= unit["bound_rho"] * 0.99
    unit["bound_rho"] *= 0.01
    doc["checksum"] = _checksum(doc["payload"])
    bad.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="bound choice"):
        treedp.load_release(bad)
