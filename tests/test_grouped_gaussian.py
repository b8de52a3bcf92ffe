"""Grouped releases with Gaussian noise (zCDP): the L2² factor, checked by brute force over
small datasets with several rows per person in several groups; the contract, the accountant,
the file, bad input."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import ZCDP, ApproxDP, InsecureSeededSource, PureDP
from treedp.exceptions import InvalidParameterError
from treedp.privacy.contribution import ContributionBounds


def _data(n: int = 2000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(TEST_SEED)
    return {
        "v": rng.uniform(0, 10, n),
        "s": rng.choice(np.array(["a", "b", "c"], dtype=object), n),
        "p": rng.integers(0, 400, n),
    }


def _configurations(n_groups: int, n_bins: int, b: ContributionBounds):
    """Every multiset of (group, bin) rows one bounded person can hold."""
    cells = [(g, j) for g in range(n_groups) for j in range(n_bins)]
    for size in range(1, b.max_contributions + 1):
        for rows in itertools.combinations_with_replacement(cells, size):
            per_group = np.bincount([g for g, _ in rows], minlength=n_groups)
            if per_group.max() > b.max_contributions_per_group:
                continue
            if (per_group > 0).sum() > b.max_groups:
                continue
            yield rows


def _worst_loss(m, g, c, neighbours):
    """The release's stated guarantee, its tree mechanism, and the worst zCDP loss
    ``Σ_l ‖Δ_l‖²/(2σ_l²)`` of its noise over every neighbouring pair of small datasets."""
    n_groups, n_bins = 3, 4
    b = ContributionBounds.from_parameters("p", m, g, c)
    # a release over these bins and bounds: its mechanism and the stated guarantee
    values = np.arange(8, dtype=float) % n_bins
    table = {
        "v": values,
        "s": np.array(["k0", "k1", "k2", "k0"] * 2, dtype=object),
        "p": np.arange(8),
    }
    gr = treedp.release_grouped(
        table,
        column="v",
        by="s",
        keys=["k0", "k1", "k2"],
        privacy_unit="p",
        max_contributions=m,
        max_groups=g,
        max_contributions_per_group=c,
        privacy=ZCDP(0.5),
        neighbours=neighbours,
        bounds=(0, n_bins),
        bins=n_bins,
        mechanism=treedp.MechanismOptions("tree", branching=2),
        rng=InsecureSeededSource(1),
    )
    mech = gr["k0"].mechanism
    sigma2 = mech.sigma2
    base = np.random.default_rng(TEST_SEED + 4).integers(0, 3, (n_groups, n_bins))

    def levels(counts):
        per_group = [mech.true_blocks(row) for row in counts]
        return [np.concatenate([lv[i] for lv in per_group]) for i in range(len(per_group[0]))]

    def with_rows(rows):
        out = base.copy()
        for gg, j in rows:
            out[gg, j] += 1
        return out

    def loss(x, y) -> Fraction:
        total = Fraction(0)
        for a, a2, s in zip(x, y, sigma2, strict=True):
            if s is not None:
                d = (a2 - a).astype(np.int64)
                total += Fraction(int((d * d).sum())) / (2 * s)
        return total

    configs = list(_configurations(n_groups, n_bins, b))
    ref = levels(base)
    if neighbours == "add_remove":
        worst = max(loss(ref, levels(with_rows(r))) for r in configs)
    else:
        sample = configs if len(configs) < 40 else configs[:: len(configs) // 40]
        worst = max(
            loss(levels(with_rows(o)), levels(with_rows(n))) for o in sample for n in sample
        )
    return gr.guarantee, mech, worst, b


@pytest.mark.parametrize(("m", "g", "c"), [(3, None, None), (4, 2, 3), (3, 3, 1), (5, 2, 2)])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.slow
def test_brute_force_zcdp_loss_of_the_grouped_gaussian_release(m, g, c, neighbours) -> None:
    """The zCDP loss of the actual release over every neighbouring pair of small datasets
    never exceeds the stated guarantee (and attains it for add/remove: L2² is exact)."""
    stated, mech, worst, b = _worst_loss(m, g, c, neighbours)
    assert isinstance(stated, ZCDP)
    assert float(worst) <= stated.rho * (1 + 1e-12) and stated.rho <= 0.5
    expected = Fraction(b.l2_squared(neighbours)) * mech.rho_spent()
    if neighbours == "add_remove":  # attained: the L2² factor is not loose
        assert worst == expected
    assert math.isclose(stated.rho, float(expected), rel_tol=1e-12)


def test_the_brute_force_catches_a_mutant_without_the_contribution_factor(monkeypatch) -> None:
    """A release that forgets the L2² factor (noise for one row per person) states a loss
    its noise exceeds: the brute force above flags it."""
    monkeypatch.setattr(ContributionBounds, "l2_squared", lambda self, neighbours="": 1)
    stated, _, worst, _ = _worst_loss(4, 2, 3, "add_remove")
    assert float(worst) > stated.rho * 1.5


def test_l2_squared_is_the_square_of_l2() -> None:
    for m, g, c in itertools.product(range(1, 7), [None, 1, 2, 3], [None, 1, 2, 4]):
        b = ContributionBounds.from_parameters("p", m, g, c)
        assert b.l2_squared() == round(b.l2**2)
        assert b.l2_squared("replace") == 2 * b.l2_squared()


def test_gaussian_grouped_contract_accountant_and_file(tmp_path) -> None:
    from treedp.privacy.accountant import Accountant

    acc = Accountant(ZCDP(1.0))
    d = _data()
    kwargs = dict(
        column="v",
        by="s",
        keys=["a", "b", "c", "d"],
        privacy_unit="p",
        max_contributions=4,
        max_groups=2,
        max_contributions_per_group=2,
        bounds=(0, 10),
        bins=64,
        rng=InsecureSeededSource(2),
    )
    gr = treedp.release_grouped(d, privacy=ZCDP(0.5), accountant=acc, **kwargs)
    assert isinstance(gr.guarantee, ZCDP) and gr.guarantee.rho <= 0.5
    b = gr.bounds
    assert gr.contribution_factor == b.l2_squared() == 8  # q = 2 groups of c = 2: 2·2²
    mech = gr["a"].mechanism
    assert mech.noise == "gaussian"
    assert float(mech.rho_spent()) * 8 <= 0.5
    assert gr.spend().measure == gr.guarantee
    charged = acc.history[-1]
    assert "ZCDP" in repr(charged) and "person:p" in repr(charged)  # the target, for the unit
    assert sum(gr.n().values()) == pytest.approx(min(len(d["v"]), 400 * 4), rel=0.5)
    path = tmp_path / "g.tdp"
    gr.save(path)
    back = treedp.load_grouped_release(path)
    assert back.guarantee == gr.guarantee and back.contribution_factor == 8
    assert np.array_equal(back["b"].noisy_levels[0], gr["b"].noisy_levels[0])
    # ApproxDP: the largest rho whose tight conversion is (epsilon, delta)
    ga = treedp.release_grouped(d, privacy=ApproxDP(1.0, 1e-6), **kwargs)
    assert isinstance(ga.guarantee, ZCDP)
    assert ga.guarantee.to_approx(1e-6).epsilon <= 1.0 + 1e-9
    # PureDP is epsilon (Laplace)
    gp = treedp.release_grouped(d, privacy=PureDP(1.0), **kwargs)
    assert isinstance(gp.guarantee, PureDP)


def test_gaussian_bad_input() -> None:
    d = _data(100)
    common = dict(column="v", by="s", privacy_unit="p", max_contributions=2, bounds=(0, 10))
    with pytest.raises(InvalidParameterError):  # no public keys
        treedp.release_grouped(d, privacy=ZCDP(0.5), delta=1e-6, **common)
    with pytest.raises(InvalidParameterError):  # the budget twice
        treedp.release_grouped(d, epsilon=1.0, privacy=ZCDP(0.5), keys=["a"], **common)
    with pytest.raises(InvalidParameterError):  # no budget
        treedp.release_grouped(d, keys=["a"], **common)
