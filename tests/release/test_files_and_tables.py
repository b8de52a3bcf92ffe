"""Release files behave like any file a tool writes; edited files are refused; tables."""

from __future__ import annotations

import contextlib
import copy
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp import InsecureSeededSource, Release, ReleaseFormatError, load_release
from treedp._atomic import atomic_write_text, check_target
from treedp.release.format import _checksum


def _release(neighbours: str = "add_remove") -> Release:
    return treedp.release_counts(
        [30, 50, 20, 0, 5, 9, 11, 2],
        bounds=(0, 8),
        bins=8,
        epsilon=1.0,
        mechanism=treedp.MechanismOptions("tree", branching=2),
        neighbours=neighbours,  # type: ignore[arg-type]
        n=127 if neighbours == "replace" else None,
        rng=InsecureSeededSource(4),
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("suffix", [".json", ".tdp"])
def test_new_file_respects_the_umask_and_overwrite_keeps_the_mode(
    tmp_path: Path, suffix: str
) -> None:
    rel = _release()
    old = os.umask(0o027)
    try:
        path = tmp_path / f"r{suffix}"
        rel.save(path)
        assert _mode(path) == 0o640
        os.chmod(path, 0o604)
        rel.save(path)
        assert _mode(path) == 0o604
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"r{suffix}"]


def test_symlink_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "real.tdp"
    target.write_text("old")
    link = tmp_path / "link.tdp"
    link.symlink_to(target)
    _release().save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert load_release(target).bins.n_bins == 8
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "new.json")
    _release().save(dangling)
    assert dangling.is_symlink() and (tmp_path / "new.json").is_file()


def test_bad_output_paths_are_refused_naming_the_path(tmp_path: Path) -> None:
    rel = _release()
    for bad, words in [
        (f"{tmp_path}/", "ends with a separator"),
        (str(tmp_path), "is a folder"),
        (str(tmp_path / "missing" / "r.tdp"), "does not exist"),
        ("", "empty"),
    ]:
        with pytest.raises(treedp.InvalidParameterError, match=words) as info:
            rel.save(bad)
        assert ".tmp" not in str(info.value)
    with pytest.raises(treedp.InvalidParameterError, match="ends with a separator"):
        check_target("out/")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"

    def interrupt(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(path, "data")
    assert list(tmp_path.iterdir()) == []


class _Stop(Exception):
    pass


@pytest.mark.skipif(not hasattr(os, "kill"), reason="needs POSIX signals")
@pytest.mark.parametrize("writer", ["atomic_write", "check_target"])
def test_a_signal_inside_mkstemp_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str
) -> None:
    """A signal arriving once ``mkstemp`` has created its file but before the name reached
    the cleanup left an empty temporary file (an independent review: 267 in 3,000 forced
    interrupts). The signal is held until the name is known, then raised and cleaned up."""
    import signal
    import tempfile

    real = tempfile.mkstemp

    def mkstemp_then_signal(*args: Any, **kwargs: Any) -> tuple[int, str]:
        made = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # delivered here, unless held
        return made

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_signal)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with pytest.raises(_Stop):
            if writer == "atomic_write":
                atomic_write_text(tmp_path / "r.json", "data")
            else:
                check_target(tmp_path / "r.json")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert list(tmp_path.iterdir()) == []


def test_os_errors_name_the_users_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device", "/tmp/.r.json.abc.tmp")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        atomic_write_text(tmp_path / "r.json", "data")
    assert info.value.filename == str(tmp_path / "r.json")


def _edited(doc: dict[str, Any], *path: Any, value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with one field replaced and the checksum recomputed."""
    out = copy.deepcopy(doc)
    node = out["payload"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    out["checksum"] = _checksum(out["payload"])
    return out


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("metadata", "bins", "discrete"), 0),
        (("metadata", "bins", "equal_width"), "yes"),
        (("metadata", "bins", "datetime_unit"), "Y"),
        (("metadata", "bins", "edges", 0), True),
        (("metadata", "randomness", "seeded"), "no"),
        (("metadata", "randomness", "seed"), 1.5),
        (("metadata", "integer"), 1),
        (("metadata", "noise"), "gaussian_by_hand"),
        (("metadata", "block_sensitivity"), [2, 1, 1, 1]),
        (("metadata", "block_epsilons", 1), 5.0),
        (("metadata", "scales", 1), True),
        (("metadata", "level_variance", 1), 0.5),
        (("metadata", "n_public"), 2**70),
        (("metadata", "epsilon"), float("inf")),
        (("metadata", "guarantee"), "approximate"),
        (("metadata", "branching"), [2, 2, "2"]),
        (("noisy_levels", 1, 0), 2**70),
        (("noisy_levels", 1, 0), 1.5),
        (("noisy_levels", 1, 0), False),
    ],
)
def test_edited_documents_with_a_recomputed_checksum_are_refused(
    path: tuple[Any, ...], value: Any
) -> None:
    doc = _release().to_dict()
    with pytest.raises(ReleaseFormatError, match="inconsistent release"):
        Release.from_dict(_edited(doc, *path, value=value))


def test_exact_root_must_hold_the_public_n() -> None:
    doc = _release("replace").to_dict()
    with pytest.raises(ReleaseFormatError, match="public n"):
        Release.from_dict(_edited(doc, "noisy_levels", 0, 0, value=126))


def test_every_edit_gives_a_release_format_error_never_a_raw_one() -> None:
    """Every field of a document replaced by values of every JSON type: a clean error."""
    doc = _release("replace").to_dict()
    bad_values = [None, True, "x", 2**70, -1, 1.5, float("nan"), [], {}, [1]]

    def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Any:
        if prefix:
            yield prefix
        if isinstance(obj, dict):
            for key, val in obj.items():
                yield from paths(val, (*prefix, key))
        elif isinstance(obj, list):
            for i, val in enumerate(obj[:2]):
                yield from paths(val, (*prefix, i))

    for path in paths(doc["payload"]):
        for value in bad_values:
            with contextlib.suppress(ReleaseFormatError):  # anything else fails the test
                Release.from_dict(_edited(doc, *path, value=value))


def test_to_arrays_and_to_frame() -> None:
    rel = _release()
    table = rel.to_arrays(level=0.9)
    assert set(table) == {
        "left",
        "right",
        "count",
        "count_low",
        "count_high",
        "cdf",
        "cdf_low",
        "cdf_high",
    }
    assert all(v.shape == (8,) for v in table.values())
    np.testing.assert_array_equal(table["left"], np.arange(8.0))
    np.testing.assert_allclose(table["count"].sum(), rel.n)
    np.testing.assert_allclose(table["cdf"], rel.cdf(np.arange(1.0, 9.0) - 1e-12), atol=1e-6)
    assert (table["count_low"] <= table["count_high"]).all() and (table["count_low"] >= 0).all()
    low, high = rel.confidence_interval("range_count", table["left"], table["right"], level=0.9)
    np.testing.assert_allclose(table["count_low"], low)
    np.testing.assert_allclose(table["count_high"], high)
    frame = rel.to_frame()
    assert list(frame.columns) == list(table) and len(frame) == 8


def test_to_frame_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(treedp.MissingDependencyError, match="to_arrays"):
        _release().to_frame()


def test_bounds_warning_reads_only_the_released_mass() -> None:
    clamped = treedp.release_counts(
        [5, 9, 11, 8, 7, 6, 10, 400], epsilon=2.0, rng=InsecureSeededSource(1)
    )
    warning = clamped.bounds_warning()
    assert warning is not None and "last bin" in warning and "above the upper" in warning
    assert "cannot tell why" in warning and "first bin" not in warning
    spread = treedp.release_counts([50] * 8, epsilon=2.0, rng=InsecureSeededSource(1))
    assert spread.bounds_warning() is None
    assert spread.bounds_warning(share=0.05) is not None  # every bin holds 1/8
