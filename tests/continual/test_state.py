"""State files: resume without redrawing, refuse damage, other streams, rollbacks and steps past
the horizon, and leave the file unchanged when refusing."""

from __future__ import annotations

import json

import numpy as np
import pytest

import treedp
from treedp.continual import continual, load_continual
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
