"""Private key selection is (ε_s, δ)-DP under both neighbour relations, checked exhaustively.

The selection keeps each candidate key independently when ``count + Z >= τ`` (``Z`` discrete
Laplace of scale ``t``), so the law of the kept set is exact in closed form. For every pair of
neighbouring count vectors on three keys (entries ``0..τ+1``, 0 meaning the key is absent) and
``g`` in {1, 2}, the smallest δ for which ``P_D(E) <= e^ε_s·P_D'(E) + δ`` holds for every event
``E`` is ``Σ_o max(0, P_D(o) − e^ε_s·P_D'(o))`` over the eight kept sets ``o``. The test reads the
scale and threshold from :func:`treedp.api_grouped.choose_keys` itself and checks that sum is
at most the requested δ. The mutant — the add/remove calibration used for a replace release,
the bug fixed in round 4 — is caught by the same check.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import treedp
from treedp.api_grouped import choose_keys
from treedp.engines.grouped import KeyCounts
from treedp.noise import InsecureSeededSource
from treedp.release.grouped import GroupedRelease

EPS_S = 0.7
DELTA = 1e-3
KEYS = ("a", "b", "c")


def _calibration(g: int, neighbours: str) -> tuple[Fraction, int]:
    """The (noise scale, threshold) ``choose_keys`` uses, read from its selection record."""
    counts = KeyCounts(keys=KEYS, counts=np.array([10**6] * 3, dtype=np.int64))
    _, record = choose_keys(counts, g, EPS_S, DELTA, InsecureSeededSource(0), neighbours)
    return Fraction(*record["noise_scale"]), int(record["threshold"])


def _p_at_least(k: int, p: float) -> float:
    """``P(Z >= k)`` for discrete Laplace ``Z`` with ``P(Z = z) ∝ p^|z|``."""
    return p**k / (1 + p) if k >= 1 else 1 - p ** (1 - k) / (1 + p)


def _law(counts: tuple[int, ...], scale: Fraction, tau: int) -> np.ndarray:
    """The probability of each kept set (bit i: key i kept); absent keys are never kept."""
    p = math.exp(-1 / float(scale))
    keep = [0.0 if c == 0 else _p_at_least(tau - c, p) for c in counts]
    law = np.ones(8)
    for o in range(8):
        for i, k in enumerate(keep):
            law[o] *= k if o >> i & 1 else 1 - k
    return law


def _steps(g: int, relation: str) -> list[tuple[int, ...]]:
    """Every change of the three counts that one person can make under the relation."""
    out = []
    for s in itertools.product((-1, 0, 1), repeat=3):
        ups, downs = sum(x > 0 for x in s), sum(x < 0 for x in s)
        if not any(s):
            continue
        if relation == "add_remove" and (min(ups, downs) > 0 or max(ups, downs) > g):
            continue  # one person added: +1 on at most g keys (or removed: −1)
        if relation == "replace" and (ups > g or downs > g):
            continue  # one person's keys lose one, another person's gain one
        out.append(s)
    return out


def _worst_delta(g: int, relation: str, scale: Fraction, tau: int) -> float:
    """The largest δ needed over all neighbour pairs with counts in ``0..τ+1``."""
    top = tau + 1
    grid = list(itertools.product(range(top + 1), repeat=3))
    laws = np.array([_law(d, scale, tau) for d in grid]).reshape((top + 1,) * 3 + (8,))
    worst = 0.0
    for s in _steps(g, relation):
        src = tuple(slice(max(0, -x), top + 1 - max(0, x)) for x in s)
        dst = tuple(slice(max(0, x), top + 1 - max(0, -x)) for x in s)
        gap = laws[src] - math.exp(EPS_S) * laws[dst]
        worst = max(worst, float(np.clip(gap, 0, None).sum(axis=-1).max()))
    return worst


@pytest.mark.parametrize("g", [1, 2])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_selection_meets_epsilon_delta_on_every_neighbour_pair(g: int, relation: str) -> None:
    scale, tau = _calibration(g, relation)
    assert _worst_delta(g, relation, scale, tau) <= DELTA * (1 + 1e-9)


@pytest.mark.parametrize("g", [1, 2])
def test_the_add_remove_calibration_under_replace_is_caught(g: int) -> None:
    """The mutant (round 3's bug): scale g/ε_s and the add/remove δ for a replace release."""
    scale, tau = _calibration(g, "add_remove")
    assert _worst_delta(g, "replace", scale, tau) > 10 * DELTA


@pytest.mark.parametrize("g", [1, 3])
def test_replace_doubles_the_selection_scale(g: int) -> None:
    scale_ar, tau_ar = _calibration(g, "add_remove")
    scale_r, tau_r = _calibration(g, "replace")
    assert scale_ar == Fraction(g) / Fraction(EPS_S) or scale_ar >= Fraction(g) / Fraction(EPS_S)
    assert scale_r >= Fraction(2 * g) / Fraction(EPS_S)
    assert tau_r > tau_ar


def test_a_replace_release_records_the_replace_calibration() -> None:
    """A real release under replace: the selection record states sensitivity 2g and its scale."""

    k = [0] * 28 + [1] * 28 + [2] * 200
    table = {"v": [0.3] * len(k), "k": k}
    common = {
        "column": "v",
        "by": "k",
        "delta": 1e-6,
        "epsilon": 1.0,
        "bounds": (0, 1),
        "bins": 4,
        "mechanism": "histogram",
        "rng": InsecureSeededSource(1),
    }
    rel = treedp.release_grouped(table, neighbours="replace", **common)
    assert isinstance(rel, GroupedRelease)
    sel = rel.selection
    assert sel is not None
    assert sel["sensitivity"] == 2
    assert Fraction(*sel["noise_scale"]) >= Fraction(2) / Fraction(sel["epsilon"])
    rel_ar = treedp.release_grouped(table, **common)
    assert rel_ar.selection is not None and rel_ar.selection["sensitivity"] == 1


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_keys_whose_pairs_were_all_dropped_are_no_candidates(
    relation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 4's review: one person holding K >> g keys nobody else holds made all K keys
    candidates (count 0 after bounding, noised and kept with probability p·q each), so the
    chance of releasing one of them grew with K far past the stated delta (114-158x at K = 500).
    Only keys a kept (person, key) pair counts are candidates: at most g of that person's."""
    import treedp.noise.families as families

    sizes: list[int] = []
    real = families.sample_discrete_laplace

    def spy(scale: Fraction, size: int, source: object) -> np.ndarray:
        sizes.append(size)
        return real(scale, size, source)

    monkeypatch.setattr(families, "sample_discrete_laplace", spy)
    k = ["common"] * 400 + [f"x{i}" for i in range(500)]
    p = [f"p{i}" for i in range(400)] + ["x"] * 500
    table = {"v": [0.3] * len(k), "k": k, "p": p}
    treedp.release_grouped(
        table,
        column="v",
        by="k",
        privacy_unit="p",
        max_groups=1,
        max_contributions=1,
        delta=1e-3,
        epsilon=1.0,
        bounds=(0, 1),
        bins=4,
        neighbours=relation,
        rng=InsecureSeededSource(3),
    )
    assert sizes[0] == 2  # "common" and the one key of x that x's bounding kept


def test_the_stated_guarantee_fits_the_charge_exactly() -> None:
    """The trees' budget is what selection leaves, rounded down: ``1.7544 - 0.63`` rounds up
    by an ulp in floats, and the release stated 1.7544000000000002 for a charge of 1.7544
    (an accountant of exactly the charge could not take the release's own spend; an
    independent budget review)."""
    from treedp.budget import rest_below

    g = np.random.default_rng(1)
    df = pd.DataFrame({"v": g.normal(50, 10, 3000), "k": g.choice(list("abcde"), 3000)})
    acct = treedp.Accountant(treedp.ApproxDP(1.7544, 1e-6), neighbours="replace")
    rel = treedp.release_grouped(df, column="v", by="k", bounds=(0, 100), bins=8,
                                 epsilon=1.7544, delta=1e-6, selection_epsilon=0.63,
                                 neighbours="replace", accountant=acct,
                                 rng=treedp.InsecureSeededSource(3))  # fmt: skip
    assert rel.guarantee.epsilon <= 1.7544
    assert treedp.Accountant(treedp.ApproxDP(1.7544, 1e-6), neighbours="replace").can_afford(
        rel.spend()
    )
    pairs = np.random.default_rng(2).uniform(0, 3, (2000, 2))
    for total, first in pairs[pairs[:, 0] > pairs[:, 1]]:
        rest = rest_below(float(total), float(first))
        assert Fraction(float(first)) + Fraction(rest) <= Fraction(float(total))
        assert rest >= math.nextafter(float(total) - float(first), 0.0)
