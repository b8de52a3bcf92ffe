"""The front door and the stream: public checks before the charge, one charge, steps, bins."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import treedp
from treedp.continual import continual
from treedp.exceptions import BudgetExceededError, InvalidParameterError, InvalidTypeError
from treedp.noise import InsecureSeededSource
from treedp.privacy.accountant import Accountant

SEED = InsecureSeededSource


def test_counts_step_by_step_with_exact_stated_variance() -> None:
    s = continual(horizon=30, epsilon=1.0, rng=SEED(1))
    before = s.expected_variance(np.arange(1, 31))  # no data seen yet
    assert s.t == 0 and s.mechanism == "tree_full"  # auto: its exact variance wins here
    for t in range(1, 31):
        a = s.step(3)
        assert a.t == t
        assert a.stderr**2 == pytest.approx(before[t - 1])
        lo, hi = a.interval(0.9)
        assert lo < a.count < hi
    g = s.guarantee
    assert g["measure"] == treedp.PureDP(float(g["loss"])) or g["measure"].epsilon >= float(
        g["loss"]
    )
    assert g["neighbours"] == "add_remove" and g["unit"] == "record"
    assert g["loss"] <= Fraction(1.0)
    assert g["sensitivity"]["per_level_l1"] == 1


def test_zcdp_picks_the_best_mechanism_and_approx_targets_convert() -> None:
    s = continual(horizon=64, privacy=treedp.ZCDP(0.5), rng=SEED(2))
    assert s.mechanism in {"tree", "sqrt", "sqrt_norm", "opt"}
    scores = {}
    for name in ("tree", "sqrt", "sqrt_norm", "opt", "binary"):
        other = continual(horizon=64, privacy=treedp.ZCDP(0.5), mechanism=name, rng=SEED(2))
        scores[name] = float(np.mean(other.expected_variance(np.arange(1, 65))))
    assert scores[s.mechanism] == min(scores[n] for n in ("tree", "sqrt", "sqrt_norm", "opt"))
    assert s.mechanism == "opt"
    a = continual(horizon=8, privacy=treedp.ApproxDP(1.0, 1e-6), rng=SEED(3))
    rho = a.spend.measure.rho
    assert treedp.privacy.measures.zcdp_to_epsilon(rho, 1e-6) <= 1.0 + 1e-9


def test_accountant_is_charged_once_at_creation_and_refusal_draws_nothing() -> None:
    acct = Accountant(treedp.PureDP(1.0))
    s = continual(horizon=10, epsilon=0.6, accountant=acct, rng=SEED(4))
    assert len(acct.history) == 1
    assert acct.history[0].record.mechanism == "continual_tree"
    assert acct.history[0].record.parameters["horizon"] == 10
    for _ in range(10):
        s.step(1)
    assert len(acct.history) == 1
    with pytest.raises(BudgetExceededError):
        continual(horizon=10, epsilon=0.6, accountant=acct, rng=SEED(4))
    assert len(acct.history) == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"horizon": 0, "epsilon": 1.0}, InvalidParameterError, "horizon"),
        ({"horizon": 1.5, "epsilon": 1.0}, InvalidTypeError, "horizon"),
        ({"horizon": 10}, InvalidParameterError, "epsilon"),
        (
            {"horizon": 10, "epsilon": 1.0, "privacy": treedp.ZCDP(1.0)},
            InvalidParameterError,
            "epsilon",
        ),
        ({"horizon": 10, "epsilon": float("inf")}, InvalidParameterError, "epsilon"),
        ({"horizon": 10, "privacy": 0.5}, InvalidTypeError, "privacy"),
        ({"horizon": 10, "epsilon": 1.0, "mechanism": "sqrt"}, InvalidParameterError, "mechanism"),
        ({"horizon": 10, "epsilon": 1.0, "mechanism": "magic"}, InvalidParameterError, "mechanism"),
        ({"horizon": 10, "epsilon": 1.0, "rng": 7}, InvalidTypeError, "rng"),
        (
            {
                "horizon": 2**20,
                "privacy": treedp.ZCDP(1.0),
                "mechanism": "sqrt",
                "bins": 4,
                "bounds": (0, 1),
            },
            InvalidParameterError,
            "mechanism",
        ),
    ],
)
def test_bad_parameters_are_refused_before_any_charge(kwargs, error, names) -> None:
    acct = Accountant(treedp.ZCDP(10.0)) if "privacy" in kwargs else Accountant(treedp.PureDP(10.0))
    with pytest.raises(error, match=names):
        continual(accountant=acct, **kwargs)
    assert acct.history == ()


def test_after_the_horizon_and_wrong_batches_are_refused_with_the_state_unchanged() -> None:
    s = continual(horizon=2, epsilon=1.0, rng=SEED(5))
    with pytest.raises(InvalidTypeError, match="batch"):
        s.step(True)
    with pytest.raises(InvalidParameterError, match="batch"):
        s.step(-1)
    assert s.t == 0
    s.step(4)
    s.step([1.0, 2.0])  # values: their number is the count
    acc = {k: v.copy() for k, v in s._arrays.items()}
    with pytest.raises(InvalidParameterError, match="horizon"):
        s.step(1)
    assert s.t == 2
    for k, v in acc.items():
        np.testing.assert_array_equal(s._arrays[k], v)
    b = continual(horizon=3, epsilon=1.0, bins=4, bounds=(0, 4), rng=SEED(5))
    with pytest.raises(InvalidTypeError, match="batch"):
        b.step(12)
    with pytest.raises(InvalidParameterError, match="t"):
        b.expected_variance(0)
    assert b.t == 0


def test_running_distribution_is_consistent_within_each_step() -> None:
    """Each step's consistent histogram is non-negative and sums to the unbiased count (the
    least-squares monotone fit of the running CDF); across steps a bin may go down by noise
    (a running maximum of each bin, the former rule, piled its noise up: see
    test_the_consistent_view_is_not_biased)."""
    rng = np.random.default_rng(7)
    s = continual(horizon=20, epsilon=0.5, bins=16, bounds=(0, 100), rng=SEED(6))
    for t in range(20):
        batch = pd.Series(rng.normal(50, 15, 40))
        a = s.step(batch, nan="drop")
        assert np.all(a.histogram >= 0)
        assert a.histogram.sum() == pytest.approx(max(a.count, 0.0))
        grid = np.linspace(-10, 110, 61)
        cdf = a.cdf(grid)
        assert np.all(np.diff(cdf) >= 0) and cdf[0] == 0 and cdf[-1] == pytest.approx(1.0)
        q = a.quantile([0.1, 0.5, 0.9])
        assert np.all(np.diff(q) >= 0)
        assert a.range_count(0, 100) == pytest.approx(a.histogram.sum())
        assert a.stderr**2 == pytest.approx(s.expected_variance(t + 1))
    assert 35 < a.quantile(0.5) < 65


def test_the_consistent_view_is_not_biased() -> None:
    """200 steps of 20 exponential(20) values on 32 bins over (0, 120), ε = 1, 12 streams:
    the last step's consistent histogram sums to the records within a few standard errors of
    the count, and its 90th percentile lies within 3 of the truth. The former rule (each bin
    clipped at 0 and at its previous answer), a mutant here, piles the noise of the empty
    upper bins up: its total is off by hundreds and the 90th percentile by more than 5."""
    data = np.random.default_rng(3).exponential(20.0, (200, 20))
    truth = float(np.quantile(data, 0.9))

    def last(mutant: bool) -> tuple[float, float, float]:
        totals, p90 = [], []
        for seed in range(12):
            s = continual(horizon=200, epsilon=1.0, bins=32, bounds=(0, 120),
                          mechanism="binary", rng=SEED(seed))  # fmt: skip
            floor = np.zeros(32)
            for batch in data:
                a = s.step(batch)
                if mutant:  # max(raw, 0, previous answer), per bin
                    floor = np.maximum(np.maximum(a.raw_histogram, 0.0), floor)
                    a = replace(a, histogram=floor)
            totals.append(a.histogram.sum() - data.size)
            p90.append(float(a.quantile(0.9)) - truth)
        return float(np.mean(totals)), float(np.mean(p90)), a.stderr

    bias_total, bias_p90, se = last(False)
    assert abs(bias_total) < 4 * se / math.sqrt(12) + 1 and abs(bias_p90) < 3
    mutant_total, mutant_p90, _ = last(True)
    assert mutant_total > 200 and mutant_p90 > 5


def test_a_stream_without_bins_refuses_distribution_queries() -> None:
    a = continual(horizon=2, epsilon=1.0, rng=SEED(8)).step(5)
    with pytest.raises(InvalidParameterError, match="bins"):
        a.cdf(1.0)


def test_batches_from_files(tmp_path) -> None:
    f = tmp_path / "day1.csv"
    f.write_text("x\n1\n2\n3\n")
    s = continual(horizon=2, epsilon=1.0, bins=3, bounds=(0, 3), rng=SEED(9))
    with pytest.raises(InvalidParameterError, match="column"):
        s.step(f)
    a = s.step(str(f), column="x")
    assert a.t == 1


def test_treedp_continual_is_callable_even_after_its_package_was_imported() -> None:
    import treedp.continual.stream  # Python then binds treedp.continual to the package

    s = treedp.continual(horizon=2, epsilon=1.0, rng=SEED(10))
    assert isinstance(s, treedp.ContinualStream)


@pytest.mark.parametrize(
    "target",
    [
        treedp.ZCDP(0.0),
        treedp.ZCDP(1e-9),
        treedp.ZCDP(5000.0),
        treedp.PureDP(0.0),
        treedp.ApproxDP(0.0, 1e-6),
        treedp.ApproxDP(1.0, 0.0),
        treedp.ApproxDP(1.0, 0.01),
        treedp.ApproxDP(1e-3, 1e-6),  # its rho is below MIN_RHO
    ],
    ids=[
        "rho0", "rho-tiny", "rho-huge", "pure0", "approx-eps0", "approx-delta0",
        "approx-delta-big", "approx-rho-tiny",
    ],
)  # fmt: skip
def test_a_bad_target_is_named_as_release_cdf_names_it(target) -> None:
    """``privacy=`` out of range names the field ('rho', 'epsilon', 'delta') in
    ``release_cdf``'s own words (it named 'privacy'; ``ApproxDP(ε, 0)`` divided by zero), before
    any charge."""
    with pytest.raises(InvalidParameterError) as release:
        treedp.release_cdf([0.5], bounds=(0, 1), bins=4, privacy=target)
    acct = Accountant(treedp.ZCDP(10.0))
    with pytest.raises(InvalidParameterError) as stream:
        continual(horizon=4, bins=4, bounds=(0, 1), privacy=target, accountant=acct)
    # the same words up to the value (each converts an ApproxDP to its rho by its own bisection)
    assert str(stream.value).split(" Got ")[0] == str(release.value).split(" Got ")[0]
    assert "'privacy'" not in str(stream.value)
    assert acct.history == ()


@pytest.mark.parametrize("bound", ["auto", treedp.AutoBound()])
def test_an_auto_bound_is_refused_saying_why(bound) -> None:
    """A stream's bound is fixed before any step's records exist: 'auto' cannot choose it."""
    for kwargs in (
        {"privacy_unit": "pid", "max_contributions": bound},
        {"privacy_unit": treedp.PrivacyUnit("pid", max_contributions=bound)},
    ):
        with pytest.raises(InvalidParameterError, match="before any step's records exist"):
            continual(horizon=4, epsilon=1.0, **kwargs)


def test_running_quantile_answers_a_block_of_zeros() -> None:
    """A stream of amounts, 70% zeros, on bounds (-10, 1000): the running median is 0 (the
    zeros' bin answers its round number, as a release's quantile does); before, interpolated
    inside the bin."""
    rng = np.random.default_rng(3)
    s = continual(horizon=5, epsilon=1.0, bins=256, bounds=(-10.0, 1000.0), rng=SEED(4))
    for _ in range(5):
        batch = np.where(rng.random(2000) < 0.7, 0.0, rng.lognormal(3, 1, 2000))
        a = s.step(batch)
    assert a.quantile(0.5) == 0.0 and np.all(a.quantile([0.1, 0.3, 0.6]) == 0.0)
    assert a.quantile(0.9) > 0


def _step_one_coverage(stream: object, levels: tuple[float, ...], normal_only: bool) -> list[float]:
    """Exact coverage of the count interval at step 1, where the count's error is one leaf's
    integer noise (discrete Laplace or Gaussian): its pmf summed over the lattice inside."""
    from scipy.stats import norm

    family = stream._counter.families[0]  # type: ignore[attr-defined]
    answer = stream.step(5)  # type: ignore[attr-defined]
    z = np.arange(-4000, 4001)
    scale = float(family.parameter)
    laplace = type(family).__name__ == "DiscreteLaplace"
    w = np.exp(-np.abs(z) / scale) if laplace else np.exp(-(z.astype(float) ** 2) / (2 * scale))
    p = w / w.sum()
    out = []
    for level in levels:
        if normal_only:  # the former interval, a mutant here
            half = float(norm.ppf(0.5 + level / 2)) * answer.stderr
            covered = p[np.abs(z) <= half].sum()
        else:  # the half-width (the upper end is never clipped); the interval of the
            # answer 5 + e covers 5 when |e| <= half (clipping at 0 only widens it)
            half = answer.interval(level)[1] - answer.count
            covered = p[np.abs(z) <= half].sum()
        out.append(float(covered))
    return out


@pytest.mark.parametrize(
    ("mechanism", "budget"),
    [("tree", {"epsilon": 1.0}), ("binary", {"epsilon": 1.0}),
     ("tree", {"privacy": treedp.ZCDP(2.0)}), ("binary", {"privacy": treedp.ZCDP(0.5)})],
)  # fmt: skip
def test_the_count_interval_covers_exactly_at_step_one(mechanism: str, budget: dict) -> None:
    """At step 1 the count's error is one integer noise: the interval covers at least its
    level at 0.9, 0.95, 0.99 and 0.999 (exact sums of the pmf), with a release's Laplace-aware
    factor and half a record of continuity correction. The normal quantile alone, the former
    interval, falls short at one of them at least (0.931 at 95% on the pure-ε tree, 0.862 at
    90% with ρ = 2, an independent review)."""
    levels = (0.9, 0.95, 0.99, 0.999)
    made = {"horizon": 365, "mechanism": mechanism, "rng": SEED(0), **budget}
    shipped = _step_one_coverage(continual(**made), levels, normal_only=False)
    assert all(c >= level - 1e-12 for c, level in zip(shipped, levels, strict=True))
    former = _step_one_coverage(continual(**made), levels, normal_only=True)
    assert any(c < level for c, level in zip(former, levels, strict=True))


def test_the_count_interval_is_clipped_at_zero_and_takes_any_level() -> None:
    s = continual(horizon=8, epsilon=1.0, rng=SEED(1))
    low, high = s.step(0).interval(0.3)
    assert low >= 0.0 and high >= low


def test_which_records_a_person_keeps_does_not_depend_on_row_order() -> None:
    """400 persons with 6 uniform(0, 100) records each, 2 kept per person: with the file
    sorted by value the median of the kept records was 18.3 (each person's two smallest), the
    records are now offered in a random order within the step. Mean over 5 seeds within 5 of
    the data's median (49.4 for this draw)."""
    r = np.random.default_rng(3)
    values = r.uniform(0, 100, 2400)
    ids = np.repeat(np.arange(400), 6)
    order = np.argsort(values)
    medians = []
    for seed in range(5):
        s = continual(horizon=4, epsilon=1.0, bins=20, bounds=(0, 100), privacy_unit="pid",
                      max_contributions=2, rng=SEED(seed))  # fmt: skip
        medians.append(float(s.step(values[order], ids=ids[order]).quantile(0.5)))
    assert abs(np.mean(medians) - np.median(values)) < 5


def test_a_stream_resumed_with_a_seeded_source_says_so(tmp_path) -> None:
    """Loaded with a seeded source, a stream made with the OS's randomness answers with
    reproducible noise from then on: its answers, and the state after, are marked."""
    path = tmp_path / "s.json"
    s = continual(horizon=8, epsilon=1.0, path=path)
    assert not s.step(5).seeded
    resumed = treedp.load_continual(path, rng=SEED(42))
    assert resumed.seeded and resumed.step(5).seeded
    assert treedp.load_continual(path).seeded  # the state remembers the seeded step


def _clamped_stream_counts(tmp_path, hold: bool) -> list[float]:  # type: ignore[no-untyped-def]
    """``range_count(0, 100)`` over 30 steps of 70 uniform records and 30 clamped onto 100,
    the stream saved and loaded half way (its held masses must survive the file)."""
    from unittest import mock

    from treedp.continual import answer as answer_module

    g = np.random.default_rng(0)
    path = tmp_path / f"s{hold}.json"
    s = continual(horizon=30, epsilon=1.0, bins=20, bounds=(0, 100), rng=SEED(4), path=path)
    out = []
    real = answer_module.StepAnswer.__init__

    def forget(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        real(self, *args[:8])  # the held masses dropped: the former reading, a mutant

    with mock.patch.object(answer_module.StepAnswer, "__init__", real if hold else forget):
        for t in range(30):
            if t == 15:
                s = treedp.load_continual(path, rng=SEED(5))
            x = np.concatenate([g.uniform(0, 100, 70), np.full(30, 150.0)])
            out.append(float(s.step(x).range_count(0, 100)) / ((t + 1) * 100))
    return out


def test_a_point_mass_once_read_stays_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A bin read as a point mass by one step's answer is read so by every later one (the
    test runs on fresh noise each step; at its threshold the running share below the upper
    bound flipped between about 0.98 and 0.66, an independent review). Here the share first
    drops to the truth (0.7, the clamped records excluded) and never comes back; without the
    held masses, a mutant, it comes back."""
    shares = _clamped_stream_counts(tmp_path, hold=True)
    first = next(i for i, v in enumerate(shares) if v < 0.8)
    assert all(v < 0.8 for v in shares[first:]) and abs(shares[-1] - 0.7) < 0.05
    flipping = _clamped_stream_counts(tmp_path, hold=False)
    mutant_first = next(i for i, v in enumerate(flipping) if v < 0.8)
    assert any(v > 0.9 for v in flipping[mutant_first:])


def test_the_unbiased_view_is_the_raw_bins_sums() -> None:
    """``consistent=False`` reads the unbiased bins: exact sums of ``raw_histogram`` at the
    edges, and over 200 streams at step 1 (50 exponential records on 64 bins) the share at 60
    is unbiased (within 4.5 standard errors of the mean), where the consistent view's
    differs by several (mass moved into empty tail bins, an independent review)."""
    data = np.random.default_rng(5).exponential(20.0, 50)
    truth = float(np.mean(data <= 60.0))
    unbiased, fitted = [], []
    for seed in range(200):
        s = continual(horizon=64, epsilon=1.0, bins=64, bounds=(0, 120), mechanism="binary",
                      rng=SEED(seed))  # fmt: skip
        a = s.step(data)
        edges = np.linspace(0, 120, 65)
        sums = np.cumsum(a.raw_histogram)
        assert a.count_below(edges[17], consistent=False) == pytest.approx(sums[16])
        assert a.range_count(edges[3], edges[9], consistent=False) == pytest.approx(
            sums[8] - sums[2]
        )
        unbiased.append(float(a.count_below(60.0, consistent=False)) / data.size)
        fitted.append(float(a.cdf(60.0)))
    se = np.std(unbiased) / np.sqrt(len(unbiased))
    assert abs(np.mean(unbiased) - truth) < 4.5 * se
    assert abs(np.mean(fitted) - truth) > 4.5 * np.std(fitted) / np.sqrt(len(fitted))


def test_range_intervals_cover_inside_bins_too() -> None:
    """``range_interval`` brackets a range's ends by bin edges, so it covers wherever the
    values sit inside their bins: here every bin's records sit at one end (the left edge, or
    just below the right one), 300 streams at step 1, 90% level, each of five ranges covered
    at least 0.9 − 4.5 binomial standard deviations. The point answer ± the same half-width
    without the brackets, a mutant, misses ranges cut inside a bin."""
    from treedp.release.inference import half_width_factor

    parts = [np.full(20 + 7 * (j % 3), j * 10.0 + (0.0 if j % 2 else 9.99)) for j in range(10)]
    data = np.concatenate(parts)
    ranges = [(0.0, 100.0), (15.0, 45.0), (30.0, 30.5), (4.0, 61.0), (12.0, 88.0)]
    truth = np.array([np.sum((data >= a) & (data < b)) for a, b in ranges])
    lo, hi = np.array(ranges).T
    hits, mutant = np.zeros(len(ranges)), np.zeros(len(ranges))
    reps = 300
    for seed in range(reps):
        s = continual(horizon=8, epsilon=1.0, bins=10, bounds=(0, 100), mechanism="binary",
                      rng=SEED(seed))  # fmt: skip
        a = s.step(data)
        low, high = a.range_interval(lo, hi, level=0.9)
        hits += (low <= truth) & (truth <= high)
        est = np.asarray(a.range_count(lo, hi, consistent=False))
        half = half_width_factor(0.9) * np.sqrt(a.bin_variance * 3)
        mutant += np.abs(est - truth) <= half
    tol = 4.5 * np.sqrt(0.9 * 0.1 / reps)
    assert (hits / reps >= 0.9 - tol).all()
    assert (mutant / reps < 0.5).any()


def test_a_step_with_too_little_signal_is_flagged() -> None:
    """A release's low-signal rule on a step: no records (whose 'median' is noise: 115 on
    (0, 120) in an independent review) is flagged, 2,000 records are not; the CLI's JSON and
    text carry it."""
    s = continual(horizon=8, epsilon=1.0, bins=16, bounds=(0, 120), mechanism="binary",
                  rng=SEED(2))  # fmt: skip
    empty = s.step(np.array([], dtype=float))
    assert empty.low_signal and empty.to_dict()["low_signal"] is True
    full = s.step(np.random.default_rng(0).uniform(0, 120, 2000))
    assert not full.low_signal
    assert continual(horizon=4, epsilon=1.0, rng=SEED(1)).step(500).low_signal is False


@pytest.mark.parametrize("mechanism", ["tree", "tree_full", "auto"])
def test_streams_planned_once_share_no_state(mechanism: str) -> None:
    """The mechanism choice is kept per process (public parameters, frozen counters): a
    second stream of the same parameters answers as the first did, however far the first
    has run, and an interleaved third is unaffected by both."""
    batches = [np.arange(i % 5) for i in range(12)]
    kwargs = {"horizon": 16, "epsilon": 1.0, "bins": 4, "bounds": (0, 4), "mechanism": mechanism}

    def run(stream: treedp.ContinualStream) -> list[np.ndarray]:
        return [stream.step(b).raw_histogram.copy() for b in batches]

    first = run(continual(**kwargs, rng=InsecureSeededSource(3)))
    other = continual(**kwargs, rng=InsecureSeededSource(4))
    other.step(np.arange(9))
    second = run(continual(**kwargs, rng=InsecureSeededSource(3)))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
