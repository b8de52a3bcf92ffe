"""``tree_full``: the k-ary tree decoded by full least squares with all noise drawn up front.

Its variances against dense weighted least squares; its answers as the dense linear map of the
node noise plus the exact count, exactly the running count on noiseless node values (so the
answers are post-processing of the noisy node release); its stated loss against an exact audit
that catches a mutant charging a level less than its noise implies; Monte Carlo (fixed seed,
``ALPHA`` per check) for the variances and a privacy audit; the planner's choice."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from tests.continual.test_statistics import RUNS, audit_ratio, run_copies
from tests.stats import ALPHA, TEST_SEED, z_two_sided
from treedp.continual import continual
from treedp.continual.full_tree import FULL_LIMIT, FullTreeCounter, full_tree
from treedp.continual.mechanisms import choose
from treedp.continual.planner import mean_variance
from treedp.exceptions import InvalidParameterError
from treedp.noise import InsecureSeededSource

F = Fraction
CASES = [
    FullTreeCounter(16, 2, (F(3), F(5), F(2), F(7), F(4))),
    FullTreeCounter(13, 3, (F(9, 2), F(3), F(11))),  # padded to 18
    FullTreeCounter(21, 4, (F(2), None, F(5))),  # level 1 off, padded to 32
    FullTreeCounter(30, 5, (F(3), F(4)), 2),
]


def incidence(c: FullTreeCounter) -> tuple[np.ndarray, list[int]]:
    """The node-by-step matrix of the padded tree (rows: levels in order) and each row's level."""
    rows, levels = [], []
    for level in range(len(c.scales)):
        size = c.k**level
        for j in range(c.padded // size):
            row = np.zeros(c.padded)
            row[j * size : (j + 1) * size] = 1.0
            rows.append(row)
            levels.append(level)
    return np.array(rows), levels


def dense_decoder(c: FullTreeCounter) -> np.ndarray:
    """``A·(MᵀWM)⁻¹MᵀW`` (steps 1..T x nodes), the weights of the running count's noise."""
    m, levels = incidence(c)
    w = np.array([c.weights[lv] for lv in levels], dtype=np.float64)
    on = w > 0
    g = m[on].T @ (w[on, None] * m[on])
    a = np.tril(np.ones((c.padded, c.padded)))[: c.horizon]
    dec = np.zeros((c.horizon, len(levels)))
    dec[:, on] = a @ np.linalg.solve(g, m[on].T * w[on])
    return dec


def state_from(c: FullTreeCounter, z_flat: np.ndarray) -> dict[str, np.ndarray]:
    _, levels = incidence(c)
    z = [z_flat[np.array(levels) == lv].reshape(-1, 1) for lv in range(len(c.scales))]
    return {"prefix": c.prefix_sums(z), "count": np.zeros(1, dtype=np.int64)}


@pytest.mark.parametrize("c", CASES)
def test_variances_are_the_dense_weighted_least_squares(c: FullTreeCounter) -> None:
    dec = dense_decoder(c)
    _, levels = incidence(c)
    v = np.array([c.node_variances()[lv] if c.weights[lv] else 0.0 for lv in levels])
    t = np.arange(1, c.horizon + 1)
    np.testing.assert_allclose(c.variances(t), (dec**2 * v).sum(axis=1), rtol=1e-10)
    assert mean_variance(c) == pytest.approx(float(np.mean((dec**2 * v).sum(axis=1))), rel=1e-10)


@pytest.mark.parametrize("c", CASES)
def test_answers_are_the_count_plus_the_dense_map_of_the_noise(c: FullTreeCounter) -> None:
    m, levels = incidence(c)
    rng = np.random.default_rng(5)
    z = rng.integers(-40, 41, len(levels))
    on = np.array([c.weights[lv] > 0 for lv in levels])
    z[~on] = 0
    x = rng.integers(0, 9, c.horizon)
    dec = dense_decoder(c)
    state = state_from(c, z)
    for t in range(1, c.horizon + 1):
        state, y = c.step(state, t, np.array([x[t - 1]]), InsecureSeededSource(0))
        assert y[0] == pytest.approx(x[:t].sum() + dec[t - 1] @ z, abs=1e-9)
    # exact on noiseless node values: fed z = Mx, the decoded noise is the exact running count,
    # so S_t + e_t(z) = (A·x̂(Mx + z))_t is post-processing of the noisy node release
    xp = np.concatenate([x, np.zeros(c.padded - c.horizon, dtype=np.int64)])
    exact = state_from(c, (m @ xp).astype(np.int64))["prefix"]
    for t in range(1, c.horizon + 1):
        assert c.noise_at(exact, t) == [Fraction(int(x[:t].sum()))]


def audited_loss(c: FullTreeCounter) -> Fraction:
    """Worst over steps i of the exact loss of the node release, from the dense matrix: ``m``
    records at step i move each released node holding i by ``m``."""
    m, levels = incidence(c)
    fams = c.families
    worst = Fraction(0)
    for i in range(c.horizon):
        loss = sum(
            (
                fams[lv].loss(c.contributions, 0)
                for r, lv in zip(m[:, i], levels, strict=True)
                if r and fams[lv] is not None
            ),
            Fraction(0),
        )
        worst = max(worst, loss)
    return worst


@dataclass(frozen=True)
class _ChargesLeavesHalf(FullTreeCounter):
    """Mutant: charges the leaf level half of what its noise implies."""

    def loss(self) -> Fraction:
        fams = [f for f in self.families if f]
        return fams[0].loss(1, 1) / 2 + sum((f.loss(1, 1) for f in fams[1:]), Fraction(0))


@pytest.mark.parametrize("horizon", [1, 7, 16, 27])
def test_stated_loss_is_the_audited_loss_within_budget(horizon: int) -> None:
    for m in (1, 3):
        c = full_tree(horizon, 0.8, m)
        assert c is not None
        assert audited_loss(c) == c.loss() <= Fraction(0.8)
        assert c.sensitivity()["per_level_l1"] == m
    for c in CASES:
        assert audited_loss(c) == c.loss()
    honest = full_tree(16, 1.0)
    assert honest is not None
    mutant = _ChargesLeavesHalf(honest.horizon, honest.k, honest.scales)
    assert audited_loss(mutant) > mutant.loss()


def test_empirical_variance_matches_expected_variance() -> None:
    c = full_tree(12, 1.0)
    assert c is not None
    x = np.random.default_rng(TEST_SEED).integers(0, 5, (12, RUNS))
    err = run_copies(c, x, TEST_SEED) - np.cumsum(x, axis=0)  # type: ignore[arg-type]
    expected = c.variances(np.arange(1, 13))
    z = z_two_sided(ALPHA / 12)
    for t in range(12):
        e = err[t]
        assert abs(e.mean()) <= z * math.sqrt(expected[t] / RUNS)
        s2, m4 = e.var(ddof=1), np.mean((e - e.mean()) ** 4)
        assert abs(s2 - expected[t]) <= z * math.sqrt(m4 - s2 * s2) / math.sqrt(RUNS)


@dataclass(frozen=True)
class _QuarterNoise(FullTreeCounter):
    """Mutant: its noise is calibrated to four times the budget it claims."""

    claimed: Fraction = Fraction(1)

    def loss(self) -> Fraction:
        return self.claimed


def test_privacy_audit_passes_the_mechanism_and_catches_the_mutant() -> None:
    honest = full_tree(2, 1.0)
    assert honest is not None
    gap, se, _ = audit_ratio(honest, TEST_SEED)  # type: ignore[arg-type]
    assert gap <= z_two_sided(ALPHA) * se
    loud = full_tree(2, 4.0)
    assert loud is not None
    mutant = _QuarterNoise(2, loud.k, loud.scales, 1, honest.loss())
    gap, se, _ = audit_ratio(mutant, TEST_SEED)  # type: ignore[arg-type]
    assert gap > z_two_sided(ALPHA) * se


def test_auto_picks_it_only_where_it_applies_and_wins() -> None:
    name, c = choose("auto", 1024, "laplace", 1.0, 1, 1)
    _, tree = choose("tree", 1024, "laplace", 1.0, 1, 1)
    assert name == "tree_full" and mean_variance(c) < mean_variance(tree)
    name, _ = choose("auto", 2**20, "laplace", 1.0, 1, 4)  # padded T x bins > FULL_LIMIT
    assert name == "tree"
    name, _ = choose("auto", 64, "gaussian", 0.5, 1, 1)
    assert name != "tree_full"
    with pytest.raises(InvalidParameterError, match="padded"):
        continual(horizon=2**20, epsilon=1.0, bins=64, bounds=(0, 1), mechanism="tree_full")
    assert FULL_LIMIT == 2**21


def test_auto_takes_the_full_tree_only_while_its_state_is_small() -> None:
    """``auto`` considers ``tree_full`` up to ``T·B = AUTO_FULL_LIMIT`` (its state is rewritten
    after every step); by name it goes further."""
    from treedp.continual.mechanisms import AUTO_FULL_LIMIT, choose

    assert choose("auto", 1024, "laplace", 1.0, 1, 1)[0] == "tree_full"
    assert choose("auto", 1024, "laplace", 1.0, 1, 2 * AUTO_FULL_LIMIT // 1024)[0] == "tree"
    assert choose("tree_full", 1024, "laplace", 1.0, 1, 2 * AUTO_FULL_LIMIT // 1024)[0] == (
        "tree_full"
    )


@pytest.mark.parametrize("c", CASES[:3])
def test_every_level_draws_its_own_familys_noise(
    c: FullTreeCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``initial_state`` samples each level from ``families[l]`` (its scale), one draw per
    node and bin: a mutant that under-noises the upper levels (privacy review of tree_full,
    F2; the audits' planned trees were leaves only) changes the recorded scales."""
    from treedp.noise.families import DiscreteLaplace

    seen: list[tuple[Fraction, int]] = []
    real = DiscreteLaplace.sample

    def spy(self: DiscreteLaplace, n: int, source: Any) -> np.ndarray:
        seen.append((Fraction(self.scale), n))
        return real(self, n, source)

    monkeypatch.setattr(DiscreteLaplace, "sample", spy)
    c.initial_state(3, InsecureSeededSource(1))
    on = [(lv, s) for lv, s in enumerate(c.scales) if s is not None]
    assert seen == [(s, 3 * c.padded // c.k**lv) for lv, s in on]


def test_a_step_count_is_capped_publicly_so_the_total_never_wraps() -> None:
    """Privacy review of tree_full, F1: the running count is exact int64; a count per step
    is capped at ``2**62 // horizon`` (a public rule). Clamped, not refused (an independent
    review, session 26: a refusal told a count above the cap from one at it, and printed it):
    the neighbours ``cap`` and ``cap + 1`` give the same answer."""
    from treedp.continual.stream import count_limit

    assert count_limit(8) == 2**50 and count_limit(2**20) == 2**42
    answers = []
    for count in (2**50, 2**50 + 1):
        s = continual(horizon=8, epsilon=1.0, mechanism="tree_full", rng=InsecureSeededSource(2))
        answers.append(s.step(count).count)
    assert answers[0] == answers[1]
    s = continual(horizon=8, epsilon=1.0, mechanism="tree_full", rng=InsecureSeededSource(2))
    with pytest.raises(InvalidParameterError, match="'batch'") as info:
        s.step(-3)  # not a count: refused, without its value
    assert "-3" not in str(info.value) and s.t == 0


def test_a_state_with_wrong_shapes_is_refused_on_load(tmp_path: Any) -> None:
    """Privacy review of tree_full, F5: a re-checksummed state with a short prefix is refused
    when loaded, not at a later step."""
    import json

    from treedp.continual import load_continual
    from treedp.continual.state import encode_arrays
    from treedp.release.format import ReleaseFormatError

    path = tmp_path / "s.json"
    continual(horizon=8, epsilon=1.0, mechanism="tree_full", path=path, rng=InsecureSeededSource(3))
    doc = json.loads(path.read_text())
    arrays = {k: np.zeros(2, dtype=np.int64) for k in ("prefix", "count")}
    arrays["floor"] = np.zeros(1)
    doc["payload"]["arrays"] = encode_arrays(arrays)
    from treedp.continual import state as state_mod

    doc["sha256"] = state_mod._digest(doc["payload"])
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError):
        load_continual(path)
