"""A person-level release without groups: ``Release(unit=PersonUnit(...))`` states the
person's guarantee (the grouped rule with one group) and keeps it through both file layouts."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.exceptions import InvalidParameterError, ReleaseFormatError
from treedp.privacy import ZCDP
from treedp.privacy.contribution import ContributionBounds
from treedp.release import Release, load_release
from treedp.release.unit import PersonUnit


def _grouped(**options: object) -> treedp.GroupedRelease:
    """A grouped release with one public key (every row in it): the same bounds, factor and
    guarantee as the person-level release without ``by``."""
    rng = np.random.default_rng(TEST_SEED)
    data = {"v": rng.integers(0, 20, 2000), "p": rng.integers(0, 500, 2000), "g": ["a"] * 2000}
    return treedp.release_grouped(  # type: ignore[return-value]
        data,
        column="v",
        by="g",
        keys=["a"],
        privacy_unit="p",
        max_contributions=3,
        bounds=(0, 19),
        bins="integers",
        rng=InsecureSeededSource(TEST_SEED),
        **options,
    )


def _person_release(grouped: treedp.GroupedRelease) -> Release:
    """The one group's record-level pieces, with the grouped release's unit."""
    (key,) = grouped.keys
    r = grouped[key]
    return Release(
        bins=r.bins,
        mechanism=r.mechanism,
        noisy_levels=r.noisy_levels,
        estimator=r.estimator,
        randomness=r.randomness,
        library_version=r.library_version,
        postprocess=r.postprocess,
        integer=r.integer,
        unit=PersonUnit(grouped.bounds, grouped.neighbours),
    )


@pytest.mark.parametrize(
    "options",
    [
        {"epsilon": 1.0},
        {"epsilon": 1.0, "neighbours": "replace"},
        {"privacy": ZCDP(0.5)},
    ],
    ids=["pure", "replace", "zcdp"],
)
def test_the_person_guarantee_is_the_grouped_one(options: dict[str, object]) -> None:
    grouped = _grouped(**options)
    rel = _person_release(grouped)
    assert rel.guarantee == rel.total_guarantee == grouped.guarantee
    assert rel.neighbours == grouped.neighbours
    record = grouped[grouped.keys[0]]
    assert record.unit is None and record.guarantee == record.mechanism.guarantee
    assert rel.guarantee != record.guarantee  # three rows per person: a larger loss
    unit = rel.metadata()["unit"]
    assert unit["unit"] == "p" and unit["max_contributions"] == 3
    assert unit["neighbours"] == grouped.neighbours
    assert unit["factor"] == grouped.contribution_factor
    budget = {k: unit[k] for k in ("epsilon", "rho") if k in unit}
    assert budget == dataclasses.asdict(rel.guarantee)  # {"epsilon": ε} or {"rho": ρ}
    text = repr(rel)
    assert "unit='person:p'" in text and repr(rel.guarantee.describe()) in text
    assert f"neighbours={grouped.neighbours!r}" in text
    np.testing.assert_array_equal(rel.cdf([3, 10]), record.cdf([3, 10]))  # same answers


@pytest.mark.parametrize("file_format", ["json", "binary"])
def test_the_unit_round_trips_through_both_layouts(file_format: str) -> None:
    rel = _person_release(_grouped(epsilon=1.0))
    buffer = io.BytesIO()
    rel.save(buffer, file_format=file_format)
    back = load_release(io.BytesIO(buffer.getvalue()))
    assert back.unit == rel.unit and back.guarantee == rel.guarantee
    assert back.metadata() == rel.metadata() and repr(back) == repr(rel)
    assert Release.from_dict(rel.to_dict()).unit == rel.unit


def test_a_release_without_unit_writes_no_unit() -> None:
    rel = treedp.release_counts([3, 5, 2], epsilon=1.0, rng=InsecureSeededSource(1))
    assert rel.unit is None and "unit" not in rel.metadata()
    assert "unit" not in rel.to_dict()["payload"]["metadata"]
    assert "unit=" not in repr(rel)


def _with_unit(document: dict, change: dict) -> dict:
    from treedp.release import _checksum

    payload = document["payload"]
    payload["metadata"]["unit"] = {**payload["metadata"]["unit"], **change}
    document["checksum"] = _checksum(payload)
    return document


@pytest.mark.parametrize(
    "change",
    [{"factor": 1}, {"epsilon": 0.001}, {"max_groups": 9}, {"neighbours": "swap"}, {"unit": 3}],
)
def test_a_unit_that_disagrees_is_refused(change: dict) -> None:
    document = json.loads(json.dumps(_person_release(_grouped(epsilon=1.0)).to_dict()))
    with pytest.raises(ReleaseFormatError):
        Release.from_dict(_with_unit(document, change))


def test_a_unit_needs_a_person_column_and_a_relation() -> None:
    with pytest.raises(InvalidParameterError, match="privacy-unit column"):
        PersonUnit(ContributionBounds(None, 1, 1, 1), "add_remove")
    bounds = ContributionBounds.from_parameters("p", 2, grouped=False)
    with pytest.raises(InvalidParameterError, match="neighbours"):
        PersonUnit(bounds, "swap")


def test_the_report_names_the_person() -> None:
    pytest.importorskip("matplotlib")
    from treedp.report.html import _guarantee_rows

    rel = _person_release(_grouped(epsilon=1.0))
    rows = dict(_guarantee_rows(rel))
    assert "one person (column 'p'), at most 3 rows" in rows["Privacy unit"]
    assert "one person more" in rows["Neighbour relation"]
    assert "person:p" in rel._repr_html_()


def test_a_person_level_file_is_refused_by_a_reader_of_versions_1_and_2() -> None:
    """Review finding F5: a unit file is version 3 (JSON) or 4 (zip), so a treedp that reads
    only 1-2 refuses it instead of dropping the unit; a version that disagrees with the file's
    unit is refused here."""
    rel = _person_release(_grouped(epsilon=1.0))
    document = json.loads(json.dumps(rel.to_dict()))
    assert document["format_version"] == 3
    buffer = io.BytesIO()
    rel.save(buffer, file_format="binary")
    import zipfile

    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zf:
        assert json.loads(zf.read("metadata.json"))["format_version"] == 4
    document["format_version"] = 1  # an old reader's version, the unit kept
    with pytest.raises(ReleaseFormatError):
        Release.from_dict(document)
    plain = treedp.release_counts([3, 5, 2], epsilon=1.0, rng=InsecureSeededSource(1))
    assert plain.to_dict()["format_version"] == 1


@pytest.mark.parametrize(
    "change",
    [
        {"max_groups": 1, "max_contributions_per_group": 3},  # group limits: a smaller L2²
        {"max_contributions_per_group": 1},
    ],
)
def test_a_unit_with_group_limits_is_refused(change: dict) -> None:
    """Review finding F4: without groups, a person's group limits are the row limit; a
    file claiming others (a smaller L2² under zCDP) is refused even with a fresh checksum."""
    rel = _person_release(_grouped(privacy=ZCDP(0.5)))
    document = json.loads(json.dumps(rel.to_dict()))
    with pytest.raises(ReleaseFormatError):
        Release.from_dict(_with_unit(document, change))


def test_a_unit_on_a_public_n_mechanism_is_refused() -> None:
    """Review finding F4: a person-level unit on a replace mechanism with a public n (whose
    root is exact) would claim a bound its noise does not give."""
    rel = treedp.release_counts(
        [3, 5, 2],
        epsilon=1.0,
        neighbours="replace",
        n=10,
        rng=InsecureSeededSource(1),
    )
    bounds = ContributionBounds.from_parameters("p", 3, grouped=False)
    unit_doc = PersonUnit(bounds, "add_remove").describe(rel.mechanism)  # self-consistent
    document = json.loads(json.dumps(rel.to_dict()))
    document["format_version"] = 3
    document["payload"]["metadata"]["unit"] = unit_doc
    from treedp.release import _checksum

    document["checksum"] = _checksum(document["payload"])
    with pytest.raises(ReleaseFormatError):
        Release.from_dict(document)


def test_epsilon_of_a_person_level_release_is_the_persons() -> None:
    """Review finding F3: ``Release.epsilon`` is the person's ε (the mechanism's is ε/Δ)."""
    rel = _person_release(_grouped(epsilon=1.0))
    assert rel.epsilon == rel.guarantee.epsilon
    assert rel.mechanism.epsilon < rel.epsilon <= 1.0
