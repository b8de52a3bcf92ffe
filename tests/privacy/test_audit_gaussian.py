"""Audits of the discrete Gaussian tree (ρ-zCDP) on worst-case neighbours, and mutants.

Every audit's false-failure rate is AUDIT_ALPHA = 1e-6 (Clopper–Pearson on 10^6 runs per
dataset; see ``auditor.audit_zcdp``). The power: for the exact Gaussian privacy loss at the
claimed ρ = 1 the expected lower bound is about 0.71ρ (the Rényi event bound is not tight),
and for a mechanism whose true loss is 2ρ about 1.42ρ, so the real mechanism passes and a
factor-2 mutant is flagged with a wide margin (measured: 0.70-0.71 and 1.30-1.46).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.privacy.auditor import audit_zcdp, rho_lower_bound
from tests.stats import TEST_SEED
from treedp.mechanisms import TreeMechanism
from treedp.noise import InsecureSeededSource
from treedp.tree import TreeShape

RUNS = 1_000_000
RHO = 1.0


def _tree(neighbours: str, rho: float = RHO) -> TreeMechanism:
    n = 13 if neighbours == "replace" else None
    return TreeMechanism(TreeShape(4, (2, 2)), rho=rho, neighbours=neighbours, n=n)


def _pair(neighbours: str) -> tuple[np.ndarray, np.ndarray]:
    """Worst case: add a record to bin 0, or move one from bin 0 to the last bin (the two
    leaves differ at every level below the root)."""
    base = np.array([3, 4, 3, 3], dtype=np.int64)
    other = base.copy()
    if neighbours == "add_remove":
        other[0] += 1
    else:
        other[0] -= 1
        other[-1] += 1
    return base, other


def _with_sigma2(mech: TreeMechanism, sigma2: list[Fraction | None]) -> TreeMechanism:
    mech.sigma2 = tuple(sigma2)
    return mech


def test_rho_lower_bound_is_valid_for_the_exact_gaussian_loss() -> None:
    """With the exact event probabilities of a ρ-zCDP Gaussian mechanism the bound is ≤ ρ."""
    from scipy import stats

    for rho in (0.1, 1.0, 4.0):
        sd = np.sqrt(2 * rho)
        for tau in np.linspace(-2, 12, 29):
            p = stats.norm.sf((tau - rho) / sd)
            q = stats.norm.sf((tau + rho) / sd)
            assert rho_lower_bound(p, q) <= rho * (1 + 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_gaussian_tree_passes(neighbours: str) -> None:
    mech = _tree(neighbours)
    d, d2 = _pair(neighbours)
    result = audit_zcdp(mech, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED))
    assert result.passes, result
    assert result.rho_low > 0.5 * result.claimed, result  # the audit has power here


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_sigma_too_small_is_flagged(neighbours: str) -> None:
    """Half the variance the budget needs: the true loss is 2ρ."""
    real = _tree(neighbours)
    mutant = _with_sigma2(_tree(neighbours), [None if s is None else s / 2 for s in real.sigma2])
    d, d2 = _pair(neighbours)
    result = audit_zcdp(
        mutant, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED + 1), claimed=real
    )
    assert result.flagged, result


@pytest.mark.slow
def test_per_count_sensitivity_map_is_flagged() -> None:
    """Under replace a level changes at two nodes (L2² = 2); a map that takes the per-count
    change (1) as the level's L2 sensitivity gives half the variance needed."""
    real = _tree("replace")
    wrong = [None] + [Fraction(1) / (2 * Fraction(b)) for b in real.block_rhos[1:]]  # type: ignore[index]
    mutant = _with_sigma2(_tree("replace"), wrong)
    d, d2 = _pair("replace")
    result = audit_zcdp(
        mutant, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED + 2), claimed=real
    )
    assert result.flagged, result


@pytest.mark.slow
def test_l1_map_in_place_of_l2_is_conservative() -> None:
    """The L1 norm in place of the L2 norm is never unsafe (``‖v‖₁ >= ‖v‖₂``): under replace it
    gives ``σ² = 2²/(2ρ_l)``, twice the variance needed, so the audit must not flag it, and
    its exact loss is half the claim. (Under add_remove the two maps coincide: one node per
    level changes by 1.) The unsafe confusions are the ones flagged above."""
    real = _tree("replace")
    l1 = real.block_sensitivity
    wrong = [None] + [
        Fraction(d * d) / (2 * Fraction(b))
        for d, b in zip(l1[1:], real.block_rhos[1:], strict=True)  # type: ignore[index]
    ]
    mutant = _with_sigma2(_tree("replace"), wrong)
    assert mutant.rho_spent() <= real.rho_spent() / 2 * (1 + Fraction(1, 10**6))
    d, d2 = _pair("replace")
    result = audit_zcdp(
        mutant, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED + 3), claimed=real
    )
    assert result.passes, result
