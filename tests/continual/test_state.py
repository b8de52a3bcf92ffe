"""State files: resume without redrawing, refuse damage, other streams, rollbacks and steps past
the horizon, and edits with the checksum recomputed (noise, records per person or budget
other than the stored public parameters give), and leave the file unchanged when refusing."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import treedp
from treedp.continual import continual, load_continual
from treedp.continual.state import _digest
from treedp.exceptions import InvalidParameterError, ReleaseFormatError
from treedp.noise import InsecureSeededSource as SEED


@pytest.mark.parametrize("privacy", [None, treedp.ZCDP(0.5)], ids=["tree", "zcdp-auto"])
def test_resume_continues_from_the_saved_noise(tmp_path, privacy) -> None:
    budget = {"epsilon": 1.0} if privacy is None else {"privacy": privacy}
    path = tmp_path / "s.json"
    s = continual(horizon=12, bins=3, bounds=(0, 3), rng=SEED(1), path=path, **budget)
    data = [np.random.default_rng(i).uniform(0, 3, 10) for i in range(12)]
    answers = [s.step(d).raw_histogram for d in data[:5]]
    loaded = load_continual(path, rng=SEED(99))
    assert loaded.t == 5 and loaded.stream_id == s.stream_id and loaded.mechanism == s.mechanism
    for k, v in s._arrays.items():
        np.testing.assert_array_equal(loaded._arrays[k], v)  # nothing redrawn
    answers += [loaded.step(d).raw_histogram for d in data[5:]]
    assert load_continual(path).t == 12
    np.testing.assert_allclose(
        loaded.expected_variance(np.arange(1, 13)), s.expected_variance(np.arange(1, 13))
    )
    assert len(answers) == 12


def test_a_step_past_the_horizon_leaves_the_file_unchanged(tmp_path) -> None:
    path = tmp_path / "s.json"
    s = continual(horizon=2, epsilon=1.0, rng=SEED(2), path=path)
    s.step(1)
    s.step(1)
    before = path.read_bytes()
    with pytest.raises(InvalidParameterError, match="horizon"):
        load_continual(path).step(1)
    assert path.read_bytes() == before


def test_damaged_edited_and_foreign_files_are_refused(tmp_path) -> None:
    path = tmp_path / "s.json"
    continual(horizon=4, epsilon=1.0, rng=SEED(3), path=path).step(2)
    doc = json.loads(path.read_text())
    doc["payload"]["step"] = 0  # an edit: would replay a step
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="checksum"):
        load_continual(edited)
    cut = tmp_path / "cut.json"
    cut.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ReleaseFormatError, match="JSON"):
        load_continual(cut)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ReleaseFormatError, match="not a treedp continual"):
        load_continual(other)
    doc = json.loads(path.read_text())
    doc["version"] = 99
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="version"):
        load_continual(newer)
    with pytest.raises(ReleaseFormatError, match="no such file"):
        load_continual(tmp_path / "missing.json")


def test_saving_over_another_stream_or_a_later_step_is_refused(tmp_path) -> None:
    a_path, b_path = tmp_path / "a.json", tmp_path / "b.json"
    a = continual(horizon=4, epsilon=1.0, rng=SEED(4), path=a_path)
    b = continual(horizon=4, epsilon=1.0, rng=SEED(5), path=b_path)
    before = a_path.read_bytes()
    with pytest.raises(InvalidParameterError, match="another stream"):
        b.save(a_path)
    assert a_path.read_bytes() == before
    stale = load_continual(a_path, autosave=False)
    a.step(1)  # the file moves to step 1
    with pytest.raises(InvalidParameterError, match="later step"):
        stale.save(a_path)
    with pytest.raises(InvalidParameterError, match="path"):
        continual(horizon=4, epsilon=1.0, path=a_path)  # an existing file is never clobbered
    assert load_continual(a_path).t == 1


def _quieter(params: dict) -> None:
    """Halve the row's first noise parameter (``σ²``, or a tree level's scale / ``σ²``)."""
    if "sigma2" in params:
        params["sigma2"] = str(Fraction(params["sigma2"]) / 2)
        return
    levels = params["parameters" if "parameters" in params else "scales"]
    first = next(i for i, v in enumerate(levels) if v is not None)
    levels[first] = str(Fraction(levels[first]) / 2)


ROWS = [
    ("binary", {"epsilon": 1.0}),
    ("tree", {"epsilon": 1.0}),
    ("tree", {"privacy": treedp.ZCDP(0.5)}),
    ("tree_full", {"epsilon": 1.0}),
    ("sqrt", {"privacy": treedp.ZCDP(0.5)}),
    ("sqrt_norm", {"privacy": treedp.ZCDP(0.5)}),
    ("opt", {"privacy": treedp.ZCDP(0.5)}),
    ("blt", {"privacy": treedp.ZCDP(0.5)}),
]


@pytest.mark.parametrize(
    ("mechanism", "budget"), ROWS, ids=[f"{m}-{next(iter(b))}" for m, b in ROWS]
)
@pytest.mark.parametrize("edit", ["quieter", "contributions", "budget", "no-unit"])
def test_an_edited_and_rechecksummed_state_is_refused(tmp_path, mechanism, budget, edit) -> None:
    """The checksum is unkeyed, so an edit can recompute it (privacy review of ``blt``, F3):
    less noise than the stored budget gives, fewer records per person than the unit keeps, an
    other budget, or a unit removed, is refused on load, for every row; the file unchanged."""
    path = tmp_path / "s.json"
    unit = {} if edit == "no-unit" else {"privacy_unit": "id", "max_contributions": 4}
    s = continual(horizon=16, mechanism=mechanism, rng=SEED(7), path=path, **unit, **budget)
    s.step([1.0, 1.0], **({} if edit == "no-unit" else {"ids": ["a", "b"]}))
    assert load_continual(path, autosave=False).t == 1  # the honest file loads
    doc = json.loads(path.read_text())
    params = doc["payload"]["mechanism_parameters"]
    if edit == "quieter":
        _quieter(params)
    elif edit == "contributions":
        params["contributions"] = 1
    elif edit == "budget":
        doc["payload"]["budget"] /= 2
    else:
        params["contributions"] = 2
    doc["sha256"] = _digest(doc["payload"])
    path.write_text(json.dumps(doc))
    before = path.read_bytes()
    why = "edited" if edit in ("quieter", "budget") else "records per privacy unit"
    with pytest.raises(ReleaseFormatError, match=why):
        load_continual(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("held", [[99], [-1], ["x"], [1, 1], {"a": 1}])
def test_edited_mass_bins_are_refused(tmp_path, held) -> None:
    """The held point-mass bins (``mass_bins``) must be distinct bin indices: an edited,
    re-checksummed index past the bins raised in the middle of a step after the counter had
    advanced (an independent privacy review); now the load refuses it."""
    path = tmp_path / "s.json"
    s = continual(horizon=4, epsilon=1.0, bins=4, bounds=(0, 4), rng=SEED(3), path=path)
    s.step([0.5, 1.5, 2.5])
    doc = json.loads(path.read_text())
    assert doc["payload"]["mass_bins"] == []
    doc["payload"]["mass_bins"] = held
    doc["sha256"] = _digest(doc["payload"])
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="mass_bins"):
        load_continual(path)


@pytest.mark.parametrize(
    ("mechanism", "budget"), ROWS, ids=[f"{m}-{next(iter(b))}" for m, b in ROWS]
)
def test_the_last_answer_is_kept_in_the_state(tmp_path, mechanism, budget) -> None:
    """``load_continual(path).last`` is the answer the last step returned, every query the
    same (the consistent and the unbiased answers, intervals, quartiles), for every row, with
    bins and without, and None before the first step (a user's ``stream show`` printed only
    the next step's standard error)."""
    for bins in ({"bins": 8, "bounds": (0, 8)}, {}):
        path = tmp_path / f"s{len(bins)}.json"
        s = continual(horizon=16, mechanism=mechanism, rng=SEED(5), path=path, **bins, **budget)
        assert s.last is None and load_continual(path).last is None
        for day in range(3):
            answer = s.step([0.5, 1.5, 2.5, 2.5 + day, 7.5] if bins else 5)
        assert s.last is not None and s.last.to_dict() == answer.to_dict()
        last = load_continual(path, autosave=False).last
        assert last is not None and last.to_dict() == answer.to_dict()
        assert last.t == 3 and repr(last) == repr(answer)
        if bins:
            x = np.linspace(-1, 9, 23)
            assert np.array_equal(last.cdf(x, consistent=False), answer.cdf(x, consistent=False))
            assert np.array_equal(last.cdf_interval(x)[0], answer.cdf_interval(x)[0])
            assert last.mass_bins() == answer.mass_bins()


def test_a_state_without_the_last_answer_loads_and_an_edited_one_is_refused(tmp_path) -> None:
    """A state file written before the last answer was kept loads (``last`` None); an edited,
    re-checksummed ``last_held`` (an index past the bins, not a list) or ``last_raw`` (another
    shape) is
    refused on load."""
    path = tmp_path / "s.json"
    s = continual(horizon=4, epsilon=1.0, bins=4, bounds=(0, 4), rng=SEED(3), path=path)
    s.step([0.5, 1.5, 2.5])
    honest = json.loads(path.read_text())
    old = json.loads(path.read_text())
    del old["payload"]["last_held"], old["payload"]["arrays"]["last_raw"]
    old["sha256"] = _digest(old["payload"])
    path.write_text(json.dumps(old))
    loaded = load_continual(path, autosave=False)
    assert loaded.t == 1 and loaded.last is None
    for edit in ("index", "field", "shape"):
        doc = json.loads(json.dumps(honest))
        if edit == "index":
            doc["payload"]["last_held"] = [9]
        elif edit == "field":
            doc["payload"]["last_held"] = {"held": []}
        else:
            doc["payload"]["arrays"]["last_raw"] = doc["payload"]["arrays"]["last_raw"] | {
                "shape": [2],
                "data": doc["payload"]["arrays"]["last_raw"]["data"][:16],
            }
        doc["sha256"] = _digest(doc["payload"])
        path.write_text(json.dumps(doc))
        with pytest.raises(ReleaseFormatError, match="inconsistent state"):
            load_continual(path)
