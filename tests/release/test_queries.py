"""The one query path: estimates and variances pinned against the pre-split outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from treedp import load_release
from treedp.release import queries
from treedp.release.inference import LATTICE

DATA = Path(__file__).parent / "data"
PINNED = json.loads((DATA / "pinned_outputs.json").read_text())


@pytest.mark.parametrize("name", sorted(PINNED))
def test_answers_match_the_pre_split_release(name: str) -> None:
    """v1 files written by the old single-class Release give the same answers today."""
    pin = PINNED[name]
    rel = load_release(DATA / f"v1_{name}.json")
    xs, a, b = (np.array(pin[k]) for k in ("xs", "a", "b"))
    close = {"rtol": 1e-12, "atol": 1e-9}
    np.testing.assert_allclose(rel.cdf(xs), pin["cdf"], **close)
    np.testing.assert_allclose(rel.cdf(xs, consistent=False), pin["cdf_unbiased"], **close)
    np.testing.assert_allclose(rel.range_count(a, b), pin["range"], **close)
    np.testing.assert_allclose(
        rel.range_count(a, b, consistent=False), pin["range_unbiased"], **close
    )
    np.testing.assert_allclose(rel.stderr("cdf", xs), pin["se_cdf"], **close)
    np.testing.assert_allclose(rel.stderr("range_count", a, b), pin["se_range"], **close)
    # Intervals now cover the truth inside bins too (widened to the bracketing edges) and are
    # clipped to [0, n]; where both ends are exact (edges, integer domains) they are the
    # pinned ``estimate ± c·se`` with that clipping, widened to the point answer.
    low, high = rel.confidence_interval("range_count", a, b)
    exact = np.isin(a, rel.bins.edges) & np.isin(b, rel.bins.edges) | rel.bins.discrete
    exact &= (a < b) | rel.bins.discrete
    cap = rel.mechanism.n if rel.neighbours == "replace" else np.inf
    step = np.where(np.array(pin["se_range"]) > 0, LATTICE, 0.0)  # session 26: a lattice step
    old_low = np.maximum(np.array(pin["ci_range_low"]) - step, 0.0)
    old_high = np.maximum(np.minimum(np.array(pin["ci_range_high"]) + step, cap), old_low)
    point = rel.range_count(a, b)  # since session 24 the interval holds the point answer too
    old_low, old_high = np.fmin(old_low, point), np.fmax(old_high, point)
    np.testing.assert_allclose(low[exact], old_low[exact], **close)
    np.testing.assert_allclose(high[exact], old_high[exact], **close)
    qs = np.linspace(0, 1, 21)
    if rel.bins.discrete:
        # Integer domains answer the smallest integer whose released CDF reaches q·n̂ (the
        # inverse CDF): a value of the domain, monotone in q.
        new = rel.quantile(qs)
        assert np.all(new == np.round(new)) and np.all(np.diff(new) >= 0)
        from treedp.release.discrete_quantiles import discrete_quantile_from

        np.testing.assert_array_equal(
            new, discrete_quantile_from(rel.bins, rel.consistent_counts, qs)
        )
    else:
        np.testing.assert_allclose(rel.quantile(qs), pin["quantile"], **close)
    np.testing.assert_allclose(rel.histogram()[0], pin["histogram"], **close)
    assert rel.n == pytest.approx(pin["n"], rel=1e-12)


@pytest.mark.parametrize(
    "name", ["tree_replace", "histogram_add_remove", "integers", "threshold_replace"]
)
def test_estimate_and_variance_share_coefficients(name: str) -> None:
    """coef·P is the answer and coefᵀΣcoef its variance, from one set of coefficients."""
    rel = load_release(DATA / f"v1_{name}.json")
    xs = np.array(PINNED[name]["xs"])
    a, b = np.minimum(xs, xs[::-1]), np.maximum(xs, xs[::-1])
    p = rel.prefix_counts
    m = np.arange(p.size)
    sigma = rel.covariance.cov(m[:, None], m[None, :])
    for terms, answer, se in (
        (queries.cdf_terms(rel.bins, xs), rel.cdf(xs, consistent=False), rel.stderr("cdf", xs)),
        (
            queries.range_terms(rel.bins, a, b),
            rel.range_count(a, b, consistent=False),
            rel.stderr("range_count", a, b),
        ),
    ):
        idx, coef = terms.coefficients()
        dense = np.zeros((idx.shape[0], p.size))
        for k in range(idx.shape[1]):
            np.add.at(dense, (np.arange(idx.shape[0]), idx[:, k]), coef[:, k])
        np.testing.assert_allclose(dense @ p, answer, rtol=1e-9, atol=1e-7)
        var = np.einsum("ni,ij,nj->n", dense, sigma, dense)
        np.testing.assert_allclose(np.sqrt(np.maximum(var, 0)), se, rtol=1e-7, atol=1e-7)


def test_locate_is_bin_and_fraction() -> None:
    rel = load_release(DATA / "v1_tree_replace.json")  # 40 bins over [0, 100)
    j, f = queries._locate(rel.bins, np.array([-5.0, 0.0, 1.25, 2.5, 99.0, 100.0, 1e9]))
    assert j.tolist() == [0, 0, 0, 1, 39, 39, 39]
    np.testing.assert_allclose(f, [0, 0, 0.5, 0, 0.6, 1, 1])
    ints = load_release(DATA / "v1_integers.json")  # integers 18..60
    j, f = queries._locate(ints.bins, np.array([10.0, 18.0, 18.5, 20.0, 61.0, 99.0]))
    below = j + f
    assert below.tolist() == [0, 0, 1, 2, ints.bins.n_bins, ints.bins.n_bins]


def test_integers_bins_read_integer_data_exactly() -> None:
    """Bins of four whole integers ``[0, 4), [4, 8), [8, 12)`` holding 4, 0 and 8 values (prefix
    ``0, 4, 4, 12``), each bin's count spread evenly over its integers: ``cdf(x)`` counts the
    values ``<= floor(x)``, a range ``[a, b)`` the integers ``ceil(a) .. ceil(b) - 1``, and a
    quantile is the smallest integer whose CDF reaches ``q·n̂`` (exact algebra)."""
    from treedp.domain import Bins

    bins = Bins(np.array([0.0, 4.0, 8.0, 12.0]), equal_width=True, integers=True)
    prefix = np.array([0.0, 4.0, 4.0, 12.0])
    cdf = queries.cdf_terms(bins, np.array([-0.5, 0.0, 0.9, 2.0, 3.7, 7.0, 8.0, 11.0, 50.0]))
    assert cdf.evaluate(prefix).tolist() == [0, 1, 1, 3, 4, 4, 6, 12, 12]
    ranges = queries.range_terms(bins, np.array([0.5, 1.0, 3.2]), np.array([4.0, 2.5, 9.0]))
    assert ranges.evaluate(prefix).tolist() == [3, 2, 2]  # integers 1..3, 1..2, 4..8
    q = np.array([0.0, 0.25, 1 / 3, 0.5, 0.99, 1.0])
    assert queries.quantile_from(bins, prefix, q).tolist() == [0, 2, 3, 8, 11, 11]
    # the rule: cdf(v) reaches q·n̂ and cdf(v - 1) does not (past the first integer)
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 20, 3).astype(float) + 0.25
    mono = np.concatenate([[0.0], np.cumsum(counts)])
    levels = np.linspace(0.01, 1, 100)
    v = queries.quantile_from(bins, mono, levels)
    reach = queries.cdf_terms(bins, v).evaluate(mono)
    before = queries.cdf_terms(bins, v - 1).evaluate(mono)
    target = levels * mono[-1]
    assert (reach >= target - 1e-9).all() and ((before < target) | (v == 0)).all()
    lo, hi = queries.cdf_bracket(bins, np.array([0.0, 3.0, 3.5, 7.9]))
    assert lo.tolist() == [0, 1, 1, 2] and hi.tolist() == [1, 1, 1, 2]  # exact at edges
