"""Audit of a grouped release for a person with several rows in several groups.

The worst case at the bounds: a person with ``c`` rows in each of ``g`` groups (``m = g·c``),
all in the first bin, is added to a dataset. Counts come from the real pipeline (grouped
counting after contribution bounding); the noise is the released mechanism's, drawn per group as
:func:`treedp.api_grouped.release_grouped_counts` does. The honest release passes at its stated
person-level epsilon; a mutant that forgets the contribution factor (noise for one row per
person) is flagged. False-failure rate AUDIT_ALPHA = 1e-6 per audit (tests/privacy/auditor.py).
"""

from __future__ import annotations

import numpy as np

import treedp
from tests.privacy.auditor import audit
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, make_bins
from treedp.engines.grouped import bin_index, count_grouped_codes, encode_keys
from treedp.privacy.contribution import ContributionBounds, bound_contributions

RUNS = 100_000
KEYS = ("a", "b", "c")
M, G, C = 4, 2, 2


def _table(with_person: bool) -> dict[str, np.ndarray]:
    """Persons 0..5, one row each in assorted groups; person 99 has C rows in G groups."""
    values = [1.0, 5.0, 2.0, 7.0, 3.0, 6.0]
    groups = ["a", "b", "c", "a", "b", "c"]
    people = [0, 1, 2, 3, 4, 5]
    if with_person:
        values += [0.5] * (G * C)
        groups += ["a"] * C + ["b"] * C
        people += [99] * (G * C)
    return {"v": np.array(values), "s": np.array(groups), "p": np.array(people)}


def _counts(table, bins, bounds) -> np.ndarray:
    """The bounded grouped counts of the real pipeline."""
    idx = bin_index(table["v"], bins)
    codes = encode_keys([table["s"]], KEYS)
    rows = np.flatnonzero(codes >= 0)
    rows = rows[bound_contributions(table["p"][rows], codes[rows], bounds, InsecureSeededSource(1))]
    return count_grouped_codes(idx[rows], codes[rows], KEYS, bins.n_bins).counts


def _run(forget_factor: bool, monkeypatch):
    bins = make_bins(bounds=(0, 8), bins=8)
    if forget_factor:  # the mutant: one row per person assumed when sizing the noise
        monkeypatch.setattr(ContributionBounds, "sensitivity", lambda self, nb: (1, 1.0))
    gr = treedp.release_grouped(
        _table(False),
        column="v",
        by="s",
        keys=list(KEYS),
        privacy_unit="p",
        max_contributions=M,
        max_groups=G,
        max_contributions_per_group=C,
        bounds=(0, 8),
        bins=8,
        mechanism=treedp.MechanismOptions("tree", branching=2),
        epsilon=1.0,
        rng=InsecureSeededSource(TEST_SEED),
    )
    monkeypatch.undo()
    mech = gr["a"].mechanism
    bounds = gr.bounds
    d, d2 = _counts(_table(False), bins, bounds), _counts(_table(True), bins, bounds)
    assert int((d2 - d).sum()) == M  # the person is kept whole, at the bounds

    def exact(counts):
        per = [mech.true_blocks(row) for row in counts]
        return [np.concatenate([p[lv] for p in per]) for lv in range(len(per[0]))]

    def sampler(counts, runs, source):
        noise = mech.noise_only(runs * len(KEYS), source)  # one draw per group and run
        blocks = exact(counts)
        return [
            b[None, :] + z.reshape(runs, len(KEYS) * z.shape[1])
            for b, z in zip(blocks, noise, strict=True)
        ]

    scales = [None if s is None else float(s) for s in mech.scales]
    return audit(
        sampler,
        d,
        d2,
        exact(d),
        exact(d2),
        scales,
        gr.guarantee.epsilon,
        runs=RUNS,
        source=InsecureSeededSource(TEST_SEED + 11),
    )


def test_grouped_release_passes_for_a_person_in_several_groups(monkeypatch) -> None:
    result = _run(False, monkeypatch)
    assert result.passes, result
    assert result.epsilon_low > 0.4  # tight enough to mean something


def test_mutant_without_the_contribution_factor_is_flagged(monkeypatch) -> None:
    result = _run(True, monkeypatch)
    assert result.flagged, result
