"""The row-scaled buffered Toeplitz counter: variances and outputs against dense algebra, the
fixed-point encoder against exact rationals, its stated sensitivity against a brute force over
neighbouring streams (one record and ``k = 2``) with a mutant that forgets the rounding term
and, on a greedily adversarial base stream at small lattice scales, one that counts it once,
the ratio to the lower bound, and save / load / resume and refusals."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy.linalg import toeplitz

from tests.stats import ALPHA, TEST_SEED, z_two_sided
from treedp.continual import continual, load_continual
from treedp.continual.blt import BltCounter, deviation_bound
from treedp.continual.blt_design import (
    FRACTION_BITS,
    Q,
    R,
    W,
    base_column_bound,
    column_bound,
    encoder_taps,
    row_integers,
)
from treedp.continual.blt_digits import release_digits, to_floats, to_ints
from treedp.continual.stream import count_limit
from treedp.exceptions import InvalidParameterError, InvalidTypeError, ReleaseFormatError
from treedp.noise import InsecureSeededSource
from treedp.noise.families import DiscreteGaussian
from treedp.privacy.measures import ZCDP


def dense(counter: BltCounter) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``e`` (floats), the encoder ``diag(e)·Toep(h)`` and the decoder ``A·(diag(e)Toep(h))⁻¹``."""
    t = counter.horizon
    h = encoder_taps(t, counter.decays, counter.weights, counter.scale_bits)
    e = row_integers(t, counter.decays, counter.weights) / 2**R
    enc = e[:, None] * np.tril(toeplitz(h))
    return e, enc, np.tril(np.ones((t, t))) @ np.linalg.inv(enc)


def encodings(counter: BltCounter, x: np.ndarray) -> list[int]:
    """The noiseless releases ``round(m_t·Σ A_i V_i(t)/2**P)`` of the counts ``x`` (one bin)."""
    state = counter.initial_state(1, InsecureSeededSource(0))
    out = []
    for t in range(1, x.size + 1):
        hi, lo, enc = counter.encode(state, t, np.array([x[t - 1]]))
        state = {**state, "hi": hi, "lo": lo}
        out.append(int(enc[0]))
    return out


@pytest.mark.parametrize("horizon", [64, 256])
def test_variances_and_outputs_match_dense_algebra(horizon: int) -> None:
    counter = BltCounter.for_budget(horizon, 0.5, 1)
    _, enc, decoder = dense(counter)
    var_z = DiscreteGaussian(counter.sigma2).variance()
    t = np.arange(1, horizon + 1)
    np.testing.assert_allclose(counter.variances(t), var_z * (decoder**2).sum(axis=1), rtol=1e-10)
    x = np.random.default_rng(5).integers(0, 50, horizon)
    state = counter.initial_state(1, InsecureSeededSource(2))
    ys = []
    for step in t:
        _, _, noiseless = counter.encode(state, int(step), np.array([x[step - 1]]))
        z = DiscreteGaussian(counter.sigma2).sample(1, InsecureSeededSource(int(step)))
        ys.append(int(noiseless[0]) + int(z[0]))
        state, est = counter.step(
            state, int(step), np.array([x[step - 1]]), InsecureSeededSource(int(step))
        )
        y = np.array(ys, dtype=np.float64)
        assert est[0] == pytest.approx(decoder[step - 1, :step] @ y, rel=1e-9, abs=1e-6)
    # unbiased up to the fixed point: the decoder of the noiseless release is the count
    np.testing.assert_allclose(decoder @ (enc @ x), np.cumsum(x), rtol=1e-9)


def exact_release(counter: BltCounter, u: list[Fraction], t: int) -> Fraction:
    """``e_t·(h*x)_t`` from ``u_i(t) = Σ_{j<=t} λ_i**(t−j)·x_j`` (exact; ``t`` 0-based)."""
    e_t = Fraction(int(row_integers(counter.horizon, counter.decays, counter.weights)[t]), 2**R)
    inner = sum(Fraction(a, 2**W) * ui for a, ui in zip(counter.weights, u, strict=True))
    return e_t * 2**counter.scale_bits * inner


def advance_exact(counter: BltCounter, u: list[Fraction], x: int) -> list[Fraction]:
    """``u_i ← λ_i·u_i + x``."""
    return [Fraction(p, 2**Q) * ui + x for p, ui in zip(counter.decays, u, strict=True)]


def greedy_deviations(counter: BltCounter, candidates: np.ndarray) -> list[Fraction]:
    """``|y_t − e_t·(h*x)_t|`` along counts chosen greedily: at each step the candidate count
    whose release deviates most from the exact rational (review F2)."""
    n = candidates.size
    state = counter.initial_state(n, InsecureSeededSource(0))
    u = [Fraction(0)] * len(counter.decays)
    out = []
    for t in range(counter.horizon):
        hi, lo, enc = counter.encode(state, t + 1, candidates)
        base = exact_release(counter, advance_exact(counter, u, 0), t)
        slope = exact_release(counter, [Fraction(1)] * len(u), t)  # the release of one count
        devs = [abs(enc[b] - base - slope * int(c)) for b, c in enumerate(candidates)]
        best = max(range(n), key=devs.__getitem__)
        out.append(devs[best])
        u = advance_exact(counter, u, int(candidates[best]))
        cols = np.full(n, best)  # every copy continues from the chosen count's buffers
        state = {**state, "hi": hi[:, cols], "lo": lo[:, cols]}
    return out


def test_the_fixed_point_encoder_stays_within_its_stated_deviation() -> None:
    """Random counts, counts near the step cap and greedily adversarial counts: the release
    stays within ``E_t = 1/2 + e_t·K`` of the exact rational, and the adversarial counts push it
    past ``1/2`` (a mutant with ``K = 0`` states too little; review F2)."""
    horizon = 48
    counter = BltCounter.for_budget(horizon, 0.5, 1)
    m = row_integers(horizon, counter.decays, counter.weights)
    k = deviation_bound(counter.decays, counter.weights, counter.scale_bits)
    rng = np.random.default_rng(3)
    cap = count_limit(horizon)
    streams = (rng.integers(0, 1000, horizon), rng.integers(cap - 2**20, cap + 1, horizon))
    state = counter.initial_state(2, InsecureSeededSource(0))
    both = []  # the two streams as two bins of one state
    for t in range(1, horizon + 1):
        hi, lo, enc = counter.encode(state, t, np.array([streams[0][t - 1], streams[1][t - 1]]))
        state = {**state, "hi": hi, "lo": lo}
        both.append(enc)
    stated = [Fraction(1, 2) + Fraction(int(v), 2**R) * k for v in m]
    for b, x in enumerate(streams):
        got = encodings(counter, x)
        assert got == [enc[b] for enc in both]
        u = [Fraction(0)] * len(counter.decays)
        for t in range(horizon):
            u = advance_exact(counter, u, int(x[t]))
            assert abs(got[t] - exact_release(counter, u, t)) <= stated[t]
    candidates = np.concatenate([np.arange(200), rng.integers(0, cap, 300)])
    greedy = greedy_deviations(counter, candidates)
    assert all(d <= e for d, e in zip(greedy, stated, strict=True))
    assert max(greedy) > Fraction(1, 2)


def brute_force(counter: BltCounter, bases: list[np.ndarray], k: int) -> int:
    """The largest ``‖enc(x) − enc(x')‖²`` over the base streams ``x`` and every placement of
    ``k`` added records (one bin; removal is the same pair read the other way)."""
    worst = 0
    for x in bases:
        base = encodings(counter, x)
        for steps in itertools.combinations_with_replacement(range(counter.horizon), k):
            moved = x.copy()
            for s in steps:
                moved[s] += 1
            diff = [a - b for a, b in zip(encodings(counter, moved), base, strict=True)]
            worst = max(worst, sum(d * d for d in diff))
    return worst


@dataclass(frozen=True)
class _NoRounding(BltCounter):
    """Mutant: it states the linear encoder's column norm only, without the rounding term."""

    def sensitivity(self) -> dict[str, Any]:
        h = encoder_taps(self.horizon, self.decays, self.weights, self.scale_bits)
        n = column_bound(h, row_integers(self.horizon, self.decays, self.weights))
        return {"l2_squared": self.contributions**2 * math.ceil(n)}


@pytest.mark.parametrize("k", [1, 2])
def test_stated_sensitivity_covers_the_brute_force(k: int) -> None:
    counter = BltCounter.for_budget(10, 0.5, k)
    rng = np.random.default_rng(11)
    bases = [np.zeros(10, dtype=np.int64), *(rng.integers(0, 10**6, 10) for _ in range(3))]
    worst = brute_force(counter, bases, k)
    stated = counter.sensitivity()["l2_squared"]
    assert worst <= stated
    assert worst >= 0.999 * stated  # the rounding term costs almost nothing at scale 2**24


def test_the_brute_force_catches_the_mutant_without_the_rounding_term() -> None:
    """At lattice scale 1 the rounding dominates: some neighbours differ by more than the
    linear encoder's column norm, which the honest bound covers and the mutant does not."""
    plain = BltCounter.for_budget(12, 0.5, 1)
    honest = BltCounter(12, Fraction(1), plain.decays, plain.weights, 0, 1)
    mutant = _NoRounding(12, Fraction(1), plain.decays, plain.weights, 0, 1)
    rng = np.random.default_rng(4)
    bases = [rng.integers(0, 50, 12) for _ in range(40)]
    worst = brute_force(honest, bases, 1)
    assert worst <= honest.sensitivity()["l2_squared"]
    assert worst > mutant.sensitivity()["l2_squared"]


@dataclass(frozen=True)
class _RoundingOnce(BltCounter):
    """Mutant: it counts the rounding term once, ``k²·(√N⁺ + √S_E)²``, not twice (review F1)."""

    def sensitivity(self) -> dict[str, Any]:
        m = row_integers(self.horizon, self.decays, self.weights)
        n = base_column_bound(self.horizon, self.decays, self.weights) * 4**self.scale_bits
        k = deviation_bound(self.decays, self.weights, self.scale_bits)
        s_e = sum((Fraction(1, 2) + Fraction(int(v), 2**R) * k) ** 2 for v in m)
        n_int, s_int = math.ceil(n), math.ceil(s_e)
        once = n_int + 2 * (math.isqrt(n_int * s_int) + 1) + s_int
        return {"l2_squared": self.contributions**2 * once}


def adversarial_base(counter: BltCounter, candidates: np.ndarray) -> np.ndarray:
    """A base stream ``x`` chosen greedily against the neighbour ``x'`` with one record more at
    the first step: at each step the candidate count whose release differs most between
    ``x`` and ``x'`` (both continue from the chosen count's buffers), so that their roundings
    fall in opposite directions as often as the encoder allows (review F1)."""
    n = candidates.size
    state = counter.initial_state(2 * n, InsecureSeededSource(0))
    chosen = []
    for t in range(1, counter.horizon + 1):
        counts = np.concatenate([candidates, candidates + (1 if t == 1 else 0)])
        hi, lo, enc = counter.encode(state, t, counts)
        best = max(range(n), key=lambda b: (enc[n + b] - enc[b]) ** 2)
        chosen.append(int(candidates[best]))
        cols = np.repeat([best, n + best], n)  # every copy continues from the chosen pair
        state = {**state, "hi": hi[:, cols], "lo": lo[:, cols]}
    return np.array(chosen, dtype=np.int64)


def test_small_lattice_scales_occur() -> None:
    """A small budget with many contributions leaves the sampler only ``S = 3``."""
    assert BltCounter.for_budget(1024, 1e-6, 4096).scale_bits == 3


@pytest.mark.parametrize(("horizon", "scale_bits"), [(64, 0), (16, 3)])
def test_an_adversarial_base_catches_the_rounding_counted_once(
    horizon: int, scale_bits: int
) -> None:
    """At small lattice scales the roundings of neighbours can disagree at every step
    (``‖Δy‖² = T`` at ``S = 0``): the honest bound covers the brute force over every placement
    of the added record on the adversarial base, the mutant counting the rounding once does not
    (nor the one without it)."""
    plain = BltCounter.for_budget(horizon, 0.5, 1)
    args = (horizon, Fraction(1), plain.decays, plain.weights, scale_bits, 1)
    honest, once, none = BltCounter(*args), _RoundingOnce(*args), _NoRounding(*args)
    rng = np.random.default_rng(6)
    candidates = np.concatenate([np.arange(512), rng.integers(0, count_limit(horizon), 512)])
    worst = brute_force(honest, [adversarial_base(honest, candidates)], 1)
    assert worst <= honest.sensitivity()["l2_squared"]
    assert worst > once.sensitivity()["l2_squared"] > none.sensitivity()["l2_squared"]


def test_the_column_bound_is_rigorous_and_tight() -> None:
    counter = BltCounter.for_budget(200, 0.5, 1)
    _, enc, _ = dense(counter)
    exact = (enc**2).sum(axis=0).max()
    h = encoder_taps(200, counter.decays, counter.weights, counter.scale_bits)
    bound = float(column_bound(h, row_integers(200, counter.decays, counter.weights)))
    assert exact <= bound <= exact * (1 + 1e-8)


def test_near_the_lower_bound_with_a_small_state() -> None:
    horizon = 2**14
    counter = BltCounter.for_budget(horizon, 0.5, 1)
    mean = float(np.mean(counter.variances(np.arange(1, horizon + 1))))
    lower = (0.701 + math.log(horizon) / math.pi) ** 2 / (2 * 0.5)
    assert mean / lower <= 1.05
    assert sum(math.prod(s) for s in counter.state_shapes(1).values()) <= 3 * 20 + 1
    assert counter.loss() <= Fraction(1, 2)


def test_the_decoder_is_stable_at_2_to_the_20() -> None:
    """The decoder's recursion ``B ← (Λ − 1·(β∘λ)ᵀ/h_0)B + w/h_0`` has spectral radius < 1,
    and its own steps decode the exact-linear release of 2**14 steps to the running count."""
    horizon = 2**20
    counter = BltCounter.for_budget(horizon, 0.5, 1)
    h = encoder_taps(horizon, counter.decays, counter.weights, counter.scale_bits)
    lam = np.asarray(counter.decays, dtype=np.float64) / 2**Q
    beta = np.asarray(counter.weights, dtype=np.float64) * 2.0 ** (counter.scale_bits - W)
    assert h[0] == pytest.approx(beta.sum(), rel=1e-15)
    step_matrix = np.diag(lam) - np.outer(np.ones_like(lam), beta * lam) / h[0]
    assert np.abs(np.linalg.eigvals(step_matrix)).max() < 1
    n = 2**14
    x = np.random.default_rng(0).integers(0, 100, n).astype(np.float64)
    w = np.convolve(h[:n], x)[:n]  # y_t / e_t without noise or rounding
    dec = np.zeros((lam.size, 1))
    total = np.zeros(1)
    worst = 0.0
    for t in range(n):
        dec, total = counter.decode(dec, total, w[t : t + 1])
        if t % 1024 == 1023:
            worst = max(worst, abs(total[0] - x[: t + 1].sum()) / x[: t + 1].sum())
    assert worst < 1e-9


def test_save_load_resume_and_refusals(tmp_path) -> None:
    path = tmp_path / "s.json"
    s = continual(
        horizon=40,
        privacy=ZCDP(0.5),
        bins=3,
        bounds=(0, 3),
        mechanism="blt",
        rng=InsecureSeededSource(1),
        path=path,
    )
    data = [np.random.default_rng(i).uniform(0, 3, 10) for i in range(8)]
    first = [s.step(d).raw_histogram for d in data[:4]]
    loaded = load_continual(path, rng=InsecureSeededSource(99))
    assert loaded.mechanism == "blt" and loaded.t == 4
    for key, v in s._arrays.items():
        np.testing.assert_array_equal(loaded._arrays[key], v)  # nothing redrawn
    same = [s.step(d).raw_histogram for d in data[4:]]
    again = load_continual(path, rng=InsecureSeededSource(99), autosave=False)
    assert again.t == 8 and len(first) + len(same) == 8
    before = {k: v.copy() for k, v in again._arrays.items()}
    with pytest.raises(InvalidTypeError):
        again.step(5)  # a bare count for a stream with bins: refused, nothing drawn
    assert again.t == 8
    for key, v in before.items():
        np.testing.assert_array_equal(again._arrays[key], v)
    with pytest.raises(InvalidParameterError):
        continual(horizon=2**21, privacy=ZCDP(0.5), mechanism="blt")


def test_a_state_of_other_shapes_or_rows_is_refused(tmp_path) -> None:
    import json

    from treedp.continual.state import _digest, encode_arrays

    path = tmp_path / "s.json"
    s = continual(horizon=30, privacy=ZCDP(0.5), mechanism="blt", rng=InsecureSeededSource(3))
    s.step(4)
    s.save(path)
    doc = json.loads(path.read_text())
    good = json.dumps(doc)
    d = len(s._counter.decays)  # type: ignore[union-attr]
    doc["payload"]["arrays"]["hi"] = encode_arrays({"hi": np.zeros((d - 1, 1), np.int64)})["hi"]
    doc["sha256"] = _digest(doc["payload"])
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError):
        load_continual(path)
    doc = json.loads(good)
    doc["payload"]["mechanism_parameters"]["rows_sha256"] = "0" * 64
    doc["sha256"] = _digest(doc["payload"])
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError):
        load_continual(path)
    assert FRACTION_BITS + Q <= 61


@dataclass(frozen=True)
class _LoudClaim(BltCounter):
    """Mutant: its ``σ²`` is calibrated for four times the budget it claims."""

    claimed: Fraction = Fraction(1, 2)

    def loss(self) -> Fraction:
        return self.claimed


def noise_audit(counter: BltCounter, runs: int = 20_000) -> tuple[float, float]:
    """The empirical variance of the first answer over ``runs`` independent copies (bins) fed
    nothing, and the least variance the claimed loss allows there: ``Var(Z) >= Δ2²/(2ρ)`` (the
    discrete Gaussian's variance is within ``10**-12`` of ``σ²`` here) over ``(e_1·h_0)²``."""
    state = counter.initial_state(runs, InsecureSeededSource(TEST_SEED))
    _, est = counter.step(state, 1, np.zeros(runs, dtype=np.int64), InsecureSeededSource(TEST_SEED))
    h0 = encoder_taps(counter.horizon, counter.decays, counter.weights, counter.scale_bits)[0]
    e1 = row_integers(counter.horizon, counter.decays, counter.weights)[0] / 2**R
    least = counter.sensitivity()["l2_squared"] / (2 * float(counter.loss())) / (e1 * h0) ** 2
    return float(np.var(est, ddof=1)), least


def test_the_noise_audit_passes_the_counter_and_catches_a_loud_claim() -> None:
    """One-sided: ``s² >= least·(1 − z·sqrt(2/(n − 1)))`` (normal approximation of the sample
    variance of Gaussian-like draws), false-failure rate ``ALPHA``."""
    z = z_two_sided(2 * ALPHA)
    honest = BltCounter.for_budget(16, 0.5, 1)
    var, least = noise_audit(honest)
    assert var >= least * (1 - z * math.sqrt(2 / 19_999))
    loud = BltCounter.for_budget(16, 2.0, 1)
    mutant = _LoudClaim(16, loud.sigma2, loud.decays, loud.weights, loud.scale_bits, 1)
    var, least = noise_audit(mutant)
    assert var < least * (1 - z * math.sqrt(2 / 19_999))


def test_the_digit_arithmetic_is_exact() -> None:
    """``release_digits`` against Python ints, at the edges of its stated ranges too."""
    rng = np.random.default_rng(8)
    for trial in range(120):
        d, n_bins = int(rng.integers(1, 64)), 4
        hi = rng.integers(0, 2 ** int(rng.integers(1, 63)), (d, n_bins))
        if trial % 3 == 0:
            hi[:] = 2**62
        lo = rng.integers(0, 2**36, (d, n_bins))
        a = rng.integers(1, 2**42, d)
        m, shift = int(rng.integers(1, 2**16 + 1)), int(rng.integers(1, 93))
        z = rng.integers(-(2**62), 2**62, n_bins) if trial % 2 else rng.integers(-9, 9, n_bins)
        digits = release_digits(a, hi, lo, m, shift, z)
        exact = []
        for b in range(n_bins):
            total = sum(int(a[i]) * ((int(hi[i, b]) << 36) + int(lo[i, b])) for i in range(d))
            exact.append(((m * total + (1 << (shift - 1))) >> shift) + int(z[b]))
        assert to_ints(digits) == exact
        np.testing.assert_allclose(to_floats(digits), [float(v) for v in exact], rtol=1e-14)


def test_auto_picks_blt_where_it_has_the_least_variance() -> None:
    s = continual(horizon=2**14, privacy=ZCDP(0.5), rng=InsecureSeededSource(4))
    assert s.mechanism == "blt"
    assert continual(horizon=2**14, epsilon=1.0).mechanism != "blt"  # zCDP only
