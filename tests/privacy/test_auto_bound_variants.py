"""``"auto"`` bounds under zCDP and per group (issue 29, item 2).

Privacy: the histogram's stated sensitivity ``(Δ1, Δ2²)`` is checked by brute force over every
small table for both variants (persons; (person, key) pairs after the ``max_groups`` draw),
with mutants the check catches (``Δ1 = 1`` and ``Δ2² = g`` where they are ``g`` and ``g²``);
the noise actually added to the histogram by the pipeline is checked against the variance the
test computes from its own formula (false-failure rate below 1e-6 per test), with a mutant
(sensitivity 1 where it is ``max_groups``) it catches; the release states the exact sum of the
choice's budget and the trees', the file keeps it, a file that leaves the choice out is
refused; refusals come before any charge.
"""

from __future__ import annotations

import itertools
import json
import zipfile
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.privacy.auto_bound_tables import zipf_persons
from tests.stats import TEST_SEED, z_two_sided
from treedp import grouped_auto
from treedp.exceptions import InvalidParameterError, ReleaseFormatError
from treedp.noise import InsecureSeededSource
from treedp.noise.discrete_gaussian import discrete_gaussian_variance
from treedp.noise.discrete_laplace import discrete_laplace_variance
from treedp.noise.rational import noise_scale
from treedp.privacy import auto_bound
from treedp.privacy.auto_bound import bucket_counts, candidates, histogram_sensitivity
from treedp.privacy.auto_mass import MASS_CELLS, MASS_UNITS, coarse_of
from treedp.release.format import _checksum

GRID = candidates(16)
SIZES = range(1, 7)


def _change(a: list[int], b: list[int]) -> tuple[int, int]:
    """L1 and squared L2 of the histogram change between two lists of entries' row counts."""
    d = bucket_counts(np.array(a, dtype=np.int64), GRID) - bucket_counts(
        np.array(b, dtype=np.int64), GRID
    )
    return int(np.abs(d).sum()), int((d * d).sum())


def _persons(g: int) -> list[tuple[int, ...]]:
    """Every person after the ``max_groups`` draw: 1..g (person, key) pairs of 1..6 rows."""
    return [p for k in range(1, g + 1) for p in itertools.product(SIZES, repeat=k)]


def _worst(g: int, neighbours: str) -> tuple[int, int]:
    """The largest (L1, L2²) change over tables of <= 1 person and their neighbours (the
    histogram adds over persons, so more persons in the table change nothing)."""
    people, worst = _persons(g), (0, 0)
    for k in range(2):
        for table in itertools.product(people, repeat=k):
            base = [r for p in table for r in p]
            if neighbours == "add_remove":
                others = [base + list(p) for p in people]
            else:
                others = [
                    [r for j, q in enumerate(table) for r in (p if j == i else q)]
                    for i in range(k)
                    for p in people
                ]
            for other in others:
                l1, l2 = _change(other, base)
                worst = (max(worst[0], l1), max(worst[1], l2))
    return worst


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("g", [1, 2, 3])
def test_histogram_sensitivity_is_exact_by_brute_force(g: int, neighbours: str) -> None:
    """``g = 1``: persons (1 / 1 under add/remove, 2 / 2 under replace); ``g > 1``: pairs."""
    assert _worst(g, neighbours) == histogram_sensitivity(neighbours, g)


def test_brute_force_catches_sensitivity_mutants() -> None:
    """Claiming Δ1 = 1 (one bucket per person) or Δ2² = g (√g in L2) for the pairs is wrong:
    ``g`` pairs of equal size move one bucket by ``g``."""
    worst = _worst(3, "add_remove")
    assert worst[0] > 1  # the mutant "sensitivity 1 where it is max_groups"
    assert worst[1] > 3  # the mutant "L2 = √max_groups"


def _frame() -> pd.DataFrame:
    return zipf_persons(300, cap=200, keys="abcd")


COMMON = {"column": "x", "by": "k", "keys": list("abcd"), "privacy_unit": "pid"}
COMMON |= {"bounds": (0, 31), "bins": "integers"}


def _query(neighbours: str = "add_remove", **kwargs):
    unit = treedp.PrivacyUnit("pid", max_groups=3, max_contributions_per_group="auto")
    args = {**COMMON, "privacy_unit": unit, "neighbours": neighbours}
    return treedp.build_query(_frame(), **args, **kwargs)


def _noise_of_choice(monkeypatch, query, runs: int) -> np.ndarray:
    """The noise the pipeline's choice adds to its (mass) histogram, over ``runs`` seeded
    runs: the true histogram replaced by 10^6 per cell, the noisy one captured."""
    captured: list[np.ndarray] = []
    true = 10**6

    def fake(person, group, bins, n_bins, max_groups, source, n_groups, grid):
        n_coarse = int(coarse_of(grid).max()) + 1
        cells = np.full((n_coarse, MASS_CELLS), true, dtype=np.int64)
        return np.zeros(grid.size, dtype=np.int64), cells, None

    def spy(noisy, sd, grid, unit, keys, kind):
        captured.append(np.asarray(noisy).ravel() - true)
        return np.zeros(len(grid))

    monkeypatch.setattr(grouped_auto, "entry_histograms", fake)
    monkeypatch.setattr(auto_bound, "estimated_objective", spy)
    person, group = np.arange(40) // 4, np.arange(40) % 4
    bins = np.zeros(40, dtype=np.int64)
    for s in range(runs):
        source = InsecureSeededSource(TEST_SEED + s)
        grouped_auto.choose_auto(person, group, bins, 32, query.grouping, 1.0, source, 4)
    return np.concatenate(captured)


def _variance_ok(noise: np.ndarray, expected: float) -> bool:
    """Sample variance within the two-sided 1e-6 band of a normal approximation with the
    kurtosis of a Laplace law (6, the larger of the two families')."""
    tol = z_two_sided() * np.sqrt(5.0 / noise.size)
    return abs(float(np.mean(noise.astype(float) ** 2)) / expected - 1.0) < tol


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_pipeline_noise_is_calibrated_to_max_groups_gaussian(monkeypatch, neighbours) -> None:
    """zCDP, g = 3: the mass histogram's discrete Gaussian has σ² = k·g²·Q²/(2ρ_a) (k = 2
    under replace), rounded up as the family rounds; mutants without g (sensitivity Q, the
    entries' own) and without Q (the count histogram's g) are caught."""
    g, rho, q2 = 3, 0.5, MASS_UNITS**2
    query = _query(neighbours, privacy=treedp.ZCDP(rho))
    noise = _noise_of_choice(monkeypatch, query, 60)
    k = 2 if neighbours == "replace" else 1
    rho_a = auto_bound.auto_split(rho, 0.1)[0]
    family = treedp.noise.families.DiscreteGaussian
    sigma2 = family.for_budget(k * g * g * q2, rho_a).sigma2
    assert sigma2 >= Fraction(k * g * g * q2) / (2 * Fraction(rho_a))
    assert _variance_ok(noise, discrete_gaussian_variance(sigma2))
    for mutant in (k * q2, k * g * g):
        assert not _variance_ok(
            noise, discrete_gaussian_variance(family.for_budget(mutant, rho_a).sigma2)
        )


def test_pipeline_noise_is_calibrated_to_max_groups_laplace(monkeypatch) -> None:
    """Pure ε, g = 3: discrete Laplace at scale g·Q/ε_a on the mass histogram; the mutants
    at scale Q/ε_a and g/ε_a are caught."""
    g, eps = 3, 1.0
    query = _query(epsilon=eps)
    noise = _noise_of_choice(monkeypatch, query, 60)
    eps_a = auto_bound.auto_split(eps, 0.1)[0]
    assert _variance_ok(noise, discrete_laplace_variance(noise_scale(g * MASS_UNITS, eps_a)))
    assert not _variance_ok(noise, discrete_laplace_variance(noise_scale(MASS_UNITS, eps_a)))
    assert not _variance_ok(noise, discrete_laplace_variance(noise_scale(g, eps_a)))


def test_the_pairs_are_counted_after_the_max_groups_draw(monkeypatch) -> None:
    """Every person has 5 rows in each of 4 keys; with max_groups=2 the histogram holds 2 pairs
    per person, each of 5 rows (a mutant counting before the draw would see 4 per person)."""
    seen: list[np.ndarray] = []
    real = auto_bound.bucket_counts

    def spy(rows: np.ndarray, grid: np.ndarray) -> np.ndarray:
        seen.append(np.asarray(rows))
        return real(rows, grid)

    monkeypatch.setattr(auto_bound, "bucket_counts", spy)
    pid = np.repeat(np.arange(50), 20).astype(str)
    df = pd.DataFrame({"x": np.zeros(1000, int), "pid": pid, "k": np.tile(list("abcd"), 250)})
    gr = treedp.release_grouped(
        df,
        **{**COMMON, "bounds": (0, 31)},
        max_groups=2,
        max_contributions_per_group="auto",
        epsilon=5.0,
        rng=InsecureSeededSource(TEST_SEED),
    )
    (rows,) = seen
    assert rows.size == 100 and set(rows.tolist()) == {5}
    b = gr.bounds
    assert b.max_groups == 2 and b.max_contributions == 2 * b.max_contributions_per_group


def _exact_sum_holds(gr, kind: str) -> None:
    choice = gr.bound_choice
    assert choice is not None and choice[f"{kind}_spent"] > 0
    tree = gr[gr.keys[0]].mechanism
    if kind == "rho":
        trees = Fraction(gr.bounds.l2_squared(gr.neighbours)) * tree.rho_spent()
        stated = Fraction(gr.guarantee.rho)
    else:
        trees = Fraction(gr.bounds.sensitivity(gr.neighbours)[0]) * tree.epsilon_spent()
        stated = Fraction(gr.guarantee.epsilon)
    assert stated >= trees + Fraction(choice[f"{kind}_spent"])


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("per_group", [False, True])
def test_zcdp_release_states_the_sum_charges_once_and_round_trips(
    tmp_path, neighbours: str, per_group: bool
) -> None:
    ledger = treedp.Accountant(treedp.ZCDP(1.0), neighbours=neighbours)
    bound = {"max_groups": 2, "max_contributions_per_group": "auto"}
    gr = treedp.release_grouped(
        _frame(),
        **COMMON,
        **(bound if per_group else {"max_contributions": "auto"}),
        privacy=treedp.ZCDP(0.5),
        neighbours=neighbours,
        accountant=ledger,
        rng=InsecureSeededSource(TEST_SEED),
    )
    _exact_sum_holds(gr, "rho")
    assert gr.guarantee.rho <= 0.5 and 0 < gr.bound_choice["rho_spent"] <= 0.05
    (charge,) = ledger.history
    assert charge.cost == treedp.ZCDP(0.5)
    gr.save(tmp_path / "g.tdp")
    again = treedp.load_grouped_release(tmp_path / "g.tdp")
    assert again.bound_choice == gr.bound_choice and again.guarantee == gr.guarantee


def test_pure_per_group_states_the_sum() -> None:
    gr = treedp.release_grouped(
        _frame(),
        **COMMON,
        max_groups=3,
        max_contributions_per_group=treedp.AutoBound(share=0.2),
        epsilon=1.0,
        rng=InsecureSeededSource(TEST_SEED),
    )
    _exact_sum_holds(gr, "epsilon")
    assert gr.guarantee.epsilon <= 1.0 and gr.bound_choice["epsilon_spent"] <= 0.2


def test_approx_target_goes_through_zcdp() -> None:
    gr = treedp.release_grouped(
        _frame(),
        **COMMON,
        max_contributions="auto",
        privacy=treedp.ApproxDP(1.0, 1e-6),
        rng=InsecureSeededSource(TEST_SEED),
    )
    _exact_sum_holds(gr, "rho")
    assert gr.approx_target == treedp.ApproxDP(1.0, 1e-6)


def test_a_file_leaving_out_the_choice_is_refused(tmp_path) -> None:
    """The loader checks the stated ρ covers the trees and the choice: a file whose guarantee
    is the trees' alone (the choice's ρ not added) is refused."""
    gr = treedp.release_grouped(
        _frame(),
        **COMMON,
        max_contributions="auto",
        privacy=treedp.ZCDP(0.5),
        rng=InsecureSeededSource(TEST_SEED),
    )
    path, bad = tmp_path / "g.tdp", tmp_path / "bad.tdp"
    gr.save(path)
    tree = gr[gr.keys[0]].mechanism
    trees_only = float(Fraction(gr.bounds.l2_squared(gr.neighbours)) * tree.rho_spent())
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "grouped.json":
                doc = json.loads(data)
                doc["payload"]["metadata"]["guarantee"]["rho"] = trees_only * (1 + 1e-6)
                doc["checksum"] = _checksum(doc["payload"])
                data = json.dumps(doc).encode()
            zout.writestr(item, data)
    with pytest.raises(ReleaseFormatError, match="does not match the noise scales"):
        treedp.load_grouped_release(bad)


def test_per_person_zcdp_states_the_sum_and_round_trips(tmp_path) -> None:
    rel = treedp.release_cdf(
        _frame(),
        column="x",
        privacy_unit=treedp.PrivacyUnit("pid", max_contributions="auto"),
        bounds=(0, 31),
        bins="integers",
        privacy=treedp.ZCDP(0.5),
        rng=InsecureSeededSource(TEST_SEED),
    )
    unit = rel.unit
    assert unit is not None and 0 < unit.bound_rho <= 0.05 and unit.bound_epsilon == 0
    trees = Fraction(unit.factor(rel.mechanism)) * rel.mechanism.rho_spent()
    assert Fraction(rel.guarantee.rho) >= trees + Fraction(unit.bound_rho)
    assert rel.guarantee.rho <= 0.5
    rel.save(tmp_path / "r.json")
    assert treedp.load_release(tmp_path / "r.json").guarantee == rel.guarantee


@pytest.mark.parametrize(
    ("bounds", "match"),
    [
        ({"max_contributions_per_group": "auto"}, "max_groups"),
        ({"max_groups": 2, "max_contributions_per_group": "auto", "max_contributions": 9}, "no"),
        ({"max_groups": "auto", "max_contributions_per_group": 2}, "max_groups"),
        ({"max_contributions": "auto", "max_contributions_per_group": "auto"}, "auto"),
        ({"max_groups": 2, "max_contributions_per_group": "often"}, "max_contributions_per_group"),
    ],
)
def test_refused_before_anything_is_charged(bounds: dict, match: str) -> None:
    ledger = treedp.Accountant(treedp.ZCDP(1.0))
    with pytest.raises(InvalidParameterError, match=match):
        treedp.release_grouped(
            _frame(), **COMMON, **bounds, privacy=treedp.ZCDP(0.5), accountant=ledger
        )
    assert len(ledger.history) == 0


def test_per_group_auto_needs_by_and_public_keys() -> None:
    ledger = treedp.Accountant(treedp.PureDP(1.0))
    unit = treedp.PrivacyUnit("pid", max_groups=2, max_contributions_per_group="auto")
    with pytest.raises(InvalidParameterError):  # without by
        treedp.release_cdf(
            _frame(), column="x", privacy_unit=unit, bounds=(0, 31), bins="integers",
            epsilon=1.0, accountant=ledger,
        )  # fmt: skip
    with pytest.raises(InvalidParameterError, match="public 'keys'"):
        treedp.release_grouped(
            _frame(), **{**COMMON, "keys": None}, max_groups=2,
            max_contributions_per_group="auto", epsilon=1.0, delta=1e-6, accountant=ledger,
        )  # fmt: skip
    assert len(ledger.history) == 0
