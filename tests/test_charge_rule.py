"""One rule on every path: public checks before any charge; the charge after the data are
read and before any noise (round 3's second privacy review, P2-F1, and issue 27 item 2)."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.exceptions import TreeDPError
from treedp.mechanisms.baselines import MAX_INTERVAL_BINS
from treedp.mechanisms.registry import mechanism_class
from treedp.spec import ALL_MECHANISMS
from treedp.strategy.store import MAX_STRATEGY_BINS

X = np.round(np.random.default_rng(0).normal(50, 10, 400))


def _refused_after_a_charge(**kwargs: Any) -> bool:
    acc = treedp.Accountant(treedp.PureDP(5.0), neighbours=kwargs["neighbours"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", treedp.BoundsWarning)
            treedp.release_cdf(
                X,
                bounds="private",
                epsilon=1.0,
                accountant=acc,
                rng=treedp.InsecureSeededSource(1),
                **kwargs,
            )
    except TreeDPError:
        return bool(acc.history)
    assert acc.history  # a release was made and charged
    return False


@pytest.mark.parametrize("mechanism", ALL_MECHANISMS)
def test_private_bounds_never_refuse_after_the_charge(mechanism: str) -> None:
    bad = []
    for relation, bins in itertools.product(("add_remove", "replace"), (16, "integers")):
        for n in (None,) if relation == "add_remove" else (None, X.size):
            kwargs = {"mechanism": mechanism, "neighbours": relation, "bins": bins, "n": n}
            if _refused_after_a_charge(**kwargs):
                bad.append(kwargs)
    assert bad == []


@pytest.mark.parametrize(
    ("mechanism", "limit"),
    [("all_intervals", MAX_INTERVAL_BINS), ("strategy", MAX_STRATEGY_BINS)],
)
def test_mechanisms_state_their_public_bin_limit(mechanism: str, limit: int) -> None:
    assert mechanism_class(mechanism).max_bins == limit
    assert mechanism_class("tree").max_bins == treedp.domain.MAX_BINS


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # all_intervals' noise at 2046 bins
def test_a_found_integer_range_too_wide_for_the_mechanism_gets_coarser_bins() -> None:
    """all_intervals takes at most 2048 bins: a wider found integer range is released on at
    most that many bins of whole integers (post-processing of the found bounds, after the
    charge), covering it all: nothing is cut or clamped, and nothing refused with the budget
    spent."""
    wide = np.round(np.random.default_rng(0).uniform(0, 10**6, 20_000))
    acc = treedp.Accountant(treedp.PureDP(5.0))
    rel = treedp.release_cdf(
        wide,
        bounds="private",
        bins="integers",
        epsilon=1.0,
        mechanism="all_intervals",
        accountant=acc,
        rng=treedp.InsecureSeededSource(2),
    )
    step = rel.bounds_step
    assert step is not None and "cut" not in step
    assert rel.bins.n_bins <= MAX_INTERVAL_BINS and not rel.bins.discrete
    edges = rel.bins.edges
    assert np.all(np.diff(edges) == step["width"]) and edges[0] == step["lo"]
    assert edges[-1] >= step["hi"] + 1
    assert (step["width"] - 1) * MAX_INTERVAL_BINS < step["hi"] - step["lo"] + 1  # the least
    assert len(acc.history) == 1
    again = treedp.Release.from_dict(rel.to_dict())
    assert again.bounds_step == step and again.bins.n_bins == rel.bins.n_bins


def test_wide_integers_are_not_cut_for_methods_without_bins() -> None:
    """Round 3: every quantile of integers on ±1e15 landed in a window 6.7e7 wide."""
    x = np.round(np.random.default_rng(0).uniform(-1e15, 1e15, 5000))
    true = np.quantile(x, [0.1, 0.5, 0.9])
    for method in ("recursive", "exponential"):
        res = treedp.quantiles(
            x,
            [0.1, 0.5, 0.9],
            bounds="private",
            bins="integers",
            epsilon=1.0,
            method=method,
            rng=treedp.InsecureSeededSource(1),
        )
        assert np.all(np.abs(res.value - true) < 1e14), method
    with pytest.warns(treedp.BoundsWarning, match="wider than the 67108864 integers"):
        treedp.quantiles(
            x,
            [0.5],
            bounds="private",
            bins="integers",
            epsilon=1.0,
            method="tree",
            rng=treedp.InsecureSeededSource(1),
        )


class _Unreadable(list):  # type: ignore[type-arg]
    """Values that must not be read (a check that reads them first fails the test)."""

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("data read before the public checks and the accountant")

    def __len__(self) -> int:
        raise AssertionError("data read before the public checks and the accountant")


class _Interrupting(dict):  # type: ignore[type-arg]
    """A table whose first value read is interrupted (Ctrl-C while the data are read)."""

    def __getitem__(self, key: Any) -> Any:
        raise KeyboardInterrupt


@pytest.mark.parametrize("keys", [(0, 1), None])
def test_a_grouped_release_charges_after_the_data_were_read(keys: Any) -> None:
    total = treedp.PureDP(5.0) if keys is not None else treedp.ApproxDP(5.0, 1e-3)
    acc = treedp.Accountant(total)
    table = _Interrupting(v=[0.5, 0.2], k=[0, 1])
    extra = {"delta": 1e-6} if keys is None else {"keys": keys}
    with pytest.raises(KeyboardInterrupt):
        treedp.release_grouped(
            table, column="v", by="k", epsilon=1.0, bounds=(0, 1), bins=4, accountant=acc, **extra
        )
    assert not acc.history
    done = treedp.release_grouped(
        dict(table),
        column="v",
        by="k",
        epsilon=1.0,
        bounds=(0, 1),
        bins=4,
        accountant=acc,
        keys=(0, 1),
    )
    assert done is not None and len(acc.history) == 1


def test_a_spend_the_accountant_cannot_take_is_refused_before_any_data_is_read() -> None:
    """Round 4's review (F3): an (epsilon, delta) selection spend against a pure-epsilon
    accountant, or a spend beyond what remains, used to be found after the whole table was
    read; the table here may not be read at all."""
    table = _Interrupting(v=[0.5, 0.2], k=[0, 1])
    grouped = {"column": "v", "by": "k", "epsilon": 1.0, "bounds": (0, 1), "bins": 4}
    with pytest.raises(treedp.InvalidParameterError, match="pure-DP total"):
        treedp.release_grouped(
            table, delta=1e-6, accountant=treedp.Accountant(treedp.PureDP(5.0)), **grouped
        )
    with pytest.raises(treedp.BudgetExceededError):
        treedp.release_grouped(
            table, keys=(0, 1), accountant=treedp.Accountant(treedp.PureDP(0.5)), **grouped
        )

    with pytest.raises(treedp.BudgetExceededError):
        treedp.release_cdf(
            _Unreadable([0.5]),
            bounds=(0, 1),
            bins=4,
            epsilon=1.0,
            accountant=treedp.Accountant(treedp.PureDP(0.5)),
        )


def test_a_missing_key_is_refused_before_the_charge_in_memory_too() -> None:
    """Round 4's review (F3): in memory a missing 'by' key under nan='error' was refused after
    the charge (the file engine refused before it)."""
    acc = treedp.Accountant(treedp.PureDP(5.0))
    table = {"v": [0.5, 0.2, 0.1], "k": [0, None, 1]}
    with pytest.raises(treedp.DataError, match="missing keys"):
        treedp.release_grouped(
            table,
            column="v",
            by="k",
            keys=(0, 1),
            epsilon=1.0,
            bounds=(0, 1),
            bins=4,
            accountant=acc,
        )
    assert not acc.history


def test_the_square_root_factorisation_domain_is_checked_before_the_charge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Round 4's review (F2): max_records() was checked in true_blocks, after the charge (under
    replace a refusal on the public n). A stand-in domain of 5 records shows the boundary."""
    from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism

    monkeypatch.setattr(SqrtFactorizationMechanism, "max_records", lambda self: 5)
    common = {"bounds": (0, 1), "bins": 8, "mechanism": "sqrt_factorization"}
    acc = treedp.Accountant(treedp.ZCDP(5.0))
    rel = treedp.release_cdf([0.1] * 5, privacy=treedp.ZCDP(1.0), accountant=acc, **common)
    assert rel is not None and len(acc.history) == 1
    with pytest.raises(treedp.DataError, match="public domain"):
        treedp.release_cdf([0.1] * 6, privacy=treedp.ZCDP(1.0), accountant=acc, **common)
    with pytest.raises(treedp.InvalidParameterError, match="domain"):
        treedp.release_cdf(
            _Unreadable([0.1] * 6),
            privacy=treedp.ZCDP(1.0),
            neighbours="replace",
            n=6,
            accountant=acc,
            **common,
        )
    assert len(acc.history) == 1


def test_quantiles_refuses_a_spend_beyond_the_budget_before_reading() -> None:
    with pytest.raises(treedp.BudgetExceededError):
        treedp.quantiles(
            _Unreadable([0.5]),
            [0.5],
            bounds=(0, 1),
            epsilon=1.0,
            accountant=treedp.Accountant(treedp.PureDP(0.5)),
        )


def test_a_quantiles_refusal_names_the_method_asked_for() -> None:
    """The pre-check's refusal names the method as the charge does (round 4's regression run
    saw 'quantiles[quantiles]')."""
    acc = treedp.Accountant(treedp.PureDP(1.0))
    with pytest.raises(treedp.BudgetExceededError, match=r"quantiles\[recursive\] release"):
        treedp.quantiles(
            [20.0, 30.0, 40.0],
            [0.1, 0.5, 0.9],
            bounds=(17, 91),
            epsilon=1.5,
            method="recursive",
            accountant=acc,
        )


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")
def test_integers_beyond_float64s_exact_range_release_on_float_bins() -> None:
    """int64 ids over 0..2**62 charged the budget and then refused the found bounds (the
    integers beyond 2**53); uint64 values above 2**63 were clamped onto [2**53 - 2, 2**53 - 1]
    and every quartile answered 9.007e15. Now such ranges are released on equal-width float
    bins (post-processing of the stops), after one charge, with quartiles near the truth."""
    rng = np.random.default_rng(6)
    big = {
        "int64 0..2^62": rng.integers(0, 2**62, 20_000, dtype=np.int64),
        "uint64 above 2^63": np.uint64(2**63) + rng.integers(0, 2**62, 20_000, dtype=np.uint64),
    }
    for name, x in big.items():
        acc = treedp.Accountant(treedp.PureDP(5.0))
        rel = treedp.release_cdf(
            x,
            bounds="private",
            bins="integers",
            epsilon=1.0,
            accountant=acc,
            rng=treedp.InsecureSeededSource(1),
        )
        assert len(acc.history) == 1 and not rel.bins.discrete, name
        xs, qs = np.sort(x.astype(np.float64)), np.array([0.25, 0.5, 0.75])
        ranks = np.searchsorted(xs, rel.quantile(qs)) / xs.size  # the share below each answer
        assert np.all(np.abs(ranks - qs) < 0.01), name  # was 0, 0, 0 above 2**63
        prof = treedp.profile({"id": x}, epsilon=1.0, rng=treedp.InsecureSeededSource(2))
        ranks = np.searchsorted(xs, prof["id"].quantile(qs)) / xs.size
        assert np.all(np.abs(ranks - qs) < 0.02), name


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")
@pytest.mark.parametrize("mechanism", ALL_MECHANISMS)
def test_every_mechanism_on_a_few_bins_releases_or_refuses_first(mechanism: str) -> None:
    """One to three bins (public), or a constant column whose private integer bounds find a
    few: each mechanism releases or refuses before the charge, in treedp's terms
    (``strategy_tree`` under ``replace`` on 2 or 3 bins charged, drew noise and raised a raw
    ``ValueError``: one block's sum is the public n; an independent review)."""
    bad = []
    for relation, bins in itertools.product(("add_remove", "replace"), (1, 2, 3, "found")):
        acc = treedp.Accountant(treedp.PureDP(5.0), neighbours=relation)
        data, bounds = (np.full(50, 7), "private") if bins == "found" else (X, (0, 100))
        try:
            treedp.release_cdf(data, bounds=bounds, bins="integers" if bins == "found" else bins,
                               epsilon=1.0, mechanism=mechanism, neighbours=relation,
                               n=data.size if relation == "replace" else None, accountant=acc,
                               rng=treedp.InsecureSeededSource(1))  # fmt: skip
        except TreeDPError:
            if acc.history:
                bad.append((relation, bins))
    assert bad == []


def test_quantiles_check_the_bins_against_the_bounds_before_the_charge() -> None:
    """Bounds too close for their bins (two adjacent floats; one second of microseconds on
    2^20 bins) are refused before the tree method's charge, as release_cdf refuses them
    (quantiles checked one bin only, then charged and refused: an independent review);
    ``auto`` releases or refuses first."""
    t0 = np.datetime64("2024-05-01T12:00:00", "us")
    times = t0 + np.arange(1000).astype("timedelta64[us]")
    cases = [(X, (3.0, 3.0000000000000004), 2, "float resolution"),
             (times, (t0, t0 + np.timedelta64(1, "s")), 2**20, "ticks")]  # fmt: skip
    for values, bounds, bins, message in cases:
        acc = treedp.Accountant(treedp.PureDP(5.0))
        with pytest.raises(treedp.InvalidParameterError, match=message):
            treedp.quantiles(values, [0.5], epsilon=1.0, bounds=bounds, bins=bins,
                             method="tree", accountant=acc)  # fmt: skip
        assert acc.history == ()
        try:
            treedp.quantiles(values, [0.5], epsilon=1.0, bounds=bounds, bins=bins, n="private",
                             method="auto", accountant=acc)  # fmt: skip
        except TreeDPError:
            assert acc.history == ()
