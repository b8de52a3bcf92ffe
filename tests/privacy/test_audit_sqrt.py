"""Audits of the square-root factorisation on a lattice (ρ-zCDP), and mutants.

Same auditor and error rates as ``test_audit_gaussian.py`` (AUDIT_ALPHA = 1e-6, Clopper–Pearson
on 10^6 runs per dataset). Worst-case neighbours: a record added to bin 0 (the column of
largest norm) or moved from bin 0 to the last bin (``i = 0`` is worst; the derivation is in
:mod:`treedp.mechanisms.sqrt_factorization`). Mutants: the sensitivity of the un-scaled,
un-rounded factor ``C`` (``Σ c_k²``, forgetting the lattice scale ``s``), half the variance the
budget needs — each must be flagged. (The one-column sensitivity used under replace is only
about 1.25× too small at ``B = 4``, below the audit's power — the expected lower bound of a
ρ-zCDP Gaussian is about 0.71ρ — so that confusion is caught by the exact brute-force
sensitivity check of ``tests/mechanisms/test_sqrt_factorization.py`` instead.)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.privacy.auditor import audit_zcdp
from tests.stats import TEST_SEED
from treedp.mechanisms.sqrt_factorization import (
    SqrtFactorizationMechanism,
    sqrt_coefficients,
)
from treedp.noise import InsecureSeededSource

RUNS = 1_000_000
RHO = 1.0
BINS = 4


def _mech(neighbours: str, equalise: bool | None = None) -> SqrtFactorizationMechanism:
    """The default is the equalised release under add_remove (``(Ĉ x, ê ∘ x)`` + noise)."""
    n = 13 if neighbours == "replace" else None
    return SqrtFactorizationMechanism(BINS, rho=RHO, neighbours=neighbours, n=n, equalise=equalise)


def _pair(neighbours: str) -> tuple[np.ndarray, np.ndarray]:
    base = np.array([3, 4, 3, 3], dtype=np.int64)
    other = base.copy()
    if neighbours == "add_remove":
        other[0] += 1
    else:
        other[0] -= 1
        other[-1] += 1
    return base, other


def _with_sigma2(mech: SqrtFactorizationMechanism, sigma2: Fraction) -> SqrtFactorizationMechanism:
    mech.sigma2 = (sigma2,)
    return mech


@pytest.mark.slow
@pytest.mark.parametrize(
    ("neighbours", "equalise"), [("add_remove", True), ("add_remove", False), ("replace", False)]
)
def test_sqrt_factorization_passes(neighbours: str, equalise: bool) -> None:
    mech = _mech(neighbours, equalise)
    assert mech.equalise == equalise
    d, d2 = _pair(neighbours)
    result = audit_zcdp(mech, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED))
    assert result.passes, result
    assert result.rho_low > 0.5 * result.claimed, result  # the audit has power here


@pytest.mark.slow
def test_unrounded_unscaled_sensitivity_is_flagged() -> None:
    """``σ²`` from ``Σ c_k²`` (the real factor's sensitivity) instead of ``Σ ĉ_k²``."""
    real = _mech("add_remove")
    wrong = Fraction(float(np.sum(sqrt_coefficients(BINS) ** 2))) / (2 * Fraction(RHO))
    mutant = _with_sigma2(_mech("add_remove"), wrong)
    d, d2 = _pair("add_remove")
    result = audit_zcdp(  # σ² is s² ≈ 10^7 times too small: fewer runs suffice
        mutant, d, d2, runs=RUNS // 10, source=InsecureSeededSource(TEST_SEED + 1), claimed=real
    )
    assert result.flagged, result


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_sigma_too_small_is_flagged(neighbours: str) -> None:
    real = _mech(neighbours)
    mutant = _with_sigma2(_mech(neighbours), real.sigma2[0] / 2)
    d, d2 = _pair(neighbours)
    result = audit_zcdp(
        mutant, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED + 2), claimed=real
    )
    assert result.flagged, result


def _variant(monkeypatch: pytest.MonkeyPatch, kind: str) -> SqrtFactorizationMechanism:
    """Normalised columns, scaled rows, or rows and columns at ``B = 4`` (each is the default
    only at larger ``B``; the limits are lifted here so the audit can enumerate a small
    release)."""
    from treedp.mechanisms import sqrt_both, sqrt_lattice, sqrt_rows

    if kind == "both":
        monkeypatch.setattr(sqrt_both, "both_apply", lambda n_bins, nb: nb == "add_remove")
        return SqrtFactorizationMechanism(BINS, rho=RHO, both=True)
    if kind == "normalise":
        monkeypatch.setattr(sqrt_lattice, "normalises", lambda n_bins, nb: nb == "add_remove")
        return SqrtFactorizationMechanism(BINS, rho=RHO, normalise=True)
    monkeypatch.setattr(sqrt_rows, "rows_apply", lambda n_bins, nb: nb == "add_remove")
    return SqrtFactorizationMechanism(BINS, rho=RHO, rows=True)


def _worst_pair(mech: SqrtFactorizationMechanism) -> tuple[np.ndarray, np.ndarray]:
    """A record added to the bin whose column of the released matrix is the longest."""
    base = np.array([3, 4, 3, 3], dtype=np.int64)
    norms = [
        int(np.sum(mech.true_blocks(np.eye(BINS, dtype=np.int64)[j])[0].astype(object) ** 2))
        for j in range(BINS)
    ]
    assert max(norms) == mech.block_l2_squared[0]
    other = base.copy()
    other[int(np.argmax(norms))] += 1
    return base, other


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["normalise", "rows", "both"])
def test_normalised_and_row_scaled_pass(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    mech = _variant(monkeypatch, kind)
    d, d2 = _worst_pair(mech)
    result = audit_zcdp(mech, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED + 3))
    assert result.passes, result
    assert result.rho_low > 0.5 * result.claimed, result


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["normalise", "rows", "both"])
def test_plain_sensitivity_for_the_scaled_release_is_flagged(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Noise calibrated to the plain factor's ``Σ ĉ_k²`` (forgetting the multipliers, ``R²``
    times too little variance at the same claimed ρ) is flagged."""
    real = _variant(monkeypatch, kind)
    plain = int(np.sum(real.coefficients.astype(object) ** 2))
    mutant = _with_sigma2(_variant(monkeypatch, kind), Fraction(plain) / (2 * Fraction(RHO)))
    d, d2 = _worst_pair(real)
    result = audit_zcdp(
        mutant, d, d2, runs=RUNS // 10, source=InsecureSeededSource(TEST_SEED + 4), claimed=real
    )
    assert result.flagged, result
