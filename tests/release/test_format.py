"""Release files: binary (version 2) and JSON (version 1), frozen records, corrupt files."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.call_forms import release_kwargs
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, ReleaseFormatError, load_release, release_cdf
from treedp.release import Release

DATA = Path(__file__).parent / "data"
VALUES = np.random.default_rng(TEST_SEED).normal(50, 12, size=4000)


def _release(**kwargs: object) -> Release:
    base: dict[str, object] = {
        "bounds": (0, 100),
        "bins": 64,
        "epsilon": 1.0,
        "rng": InsecureSeededSource(4),
    }
    base.update(kwargs)
    return release_cdf(VALUES, **release_kwargs(base))  # type: ignore[arg-type]


def _same(a: Release, b: Release) -> None:
    xs = np.linspace(-5, 105, 57)
    assert (a.cdf(xs) == b.cdf(xs)).all()
    assert (a.cdf(xs, consistent=False) == b.cdf(xs, consistent=False)).all()
    assert (a.quantile([0.1, 0.5, 0.9]) == b.quantile([0.1, 0.5, 0.9])).all()
    assert a.metadata() == b.metadata()
    for x, y in zip(a.noisy_levels, b.noisy_levels, strict=True):
        assert x.dtype == y.dtype == np.int64 and (x == y).all()


def test_release_is_frozen() -> None:
    rel = _release()
    with pytest.raises(AttributeError, match="frozen"):
        rel.postprocess = "none"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        rel.bins = None  # type: ignore[assignment]
    with pytest.raises(AttributeError, match="frozen"):
        del rel.estimator
    with pytest.raises(ValueError):
        rel.noisy_levels[0][0] = 5
    with pytest.raises(ValueError):
        rel.consistent_counts[0] = 5
    assert rel.prefix_counts is rel.prefix_counts  # cached once


@pytest.mark.parametrize("mechanism", ["tree", "histogram", "threshold", "all_intervals"])
@pytest.mark.parametrize("suffix", [".tdp", ".zip", ".bin"])
def test_binary_round_trip(tmp_path: Path, mechanism: str, suffix: str) -> None:
    rel = _release(mechanism=mechanism, neighbours="replace", n=VALUES.size)
    path = tmp_path / f"r{suffix}"
    rel.save(path)
    assert zipfile.is_zipfile(path)
    _same(rel, load_release(path))
    with path.open("rb") as handle:  # from a file object too
        _same(rel, load_release(handle))


def test_layout_choice_and_file_objects(tmp_path: Path) -> None:
    rel = _release(bins="integers", bounds=(0, 100), integer=True)
    rel.save(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["format_version"] == 1
    rel.save(tmp_path / "forced.json", file_format="binary")
    assert zipfile.is_zipfile(tmp_path / "forced.json")
    _same(rel, load_release(tmp_path / "forced.json"))
    rel.save(tmp_path / "forced.tdp", file_format="json")
    _same(rel, load_release(tmp_path / "forced.tdp"))
    buffer = io.BytesIO()
    rel.save(buffer)
    _same(rel, load_release(io.BytesIO(buffer.getvalue())))
    _same(rel, load_release(io.StringIO(json.dumps(rel.to_dict()))))
    _same(rel, Release.from_dict(rel.to_dict()))
    with pytest.raises(treedp.InvalidParameterError, match="file_format"):
        rel.save(tmp_path / "x.tdp", file_format="csv")


def test_binary_stores_small_integer_types(tmp_path: Path) -> None:
    rel = _release(bins=4096)
    rel.save(tmp_path / "r.tdp")
    with zipfile.ZipFile(tmp_path / "r.tdp") as zf:
        meta = json.loads(zf.read("metadata.json"))
    dtypes = {entry["dtype"] for entry in meta["payload"]["arrays"]}
    assert dtypes <= {"|i1", "<i2", "<i4"}
    raw = sum(level.size * 8 for level in rel.noisy_levels)
    assert (tmp_path / "r.tdp").stat().st_size <= 1.2 * raw


@pytest.mark.parametrize("path", sorted(DATA.glob("v1_*.json")), ids=lambda p: p.stem)
def test_v1_files_from_the_previous_release_still_load(path: Path, tmp_path: Path) -> None:
    rel = load_release(path)
    assert rel.to_dict() == json.loads(path.read_text())  # written back byte-for-byte the same
    rel.save(tmp_path / "again.tdp")
    _same(rel, load_release(tmp_path / "again.tdp"))


def _rewrite(src: Path, dst: Path, change: dict[str, bytes | None]) -> None:
    """Copy a zip, replacing (bytes) or dropping (None) some members."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = change.get(item.filename, zin.read(item.filename))
            if data is not None:
                zout.writestr(item.filename, data)
        for name, data in change.items():
            if name not in zin.namelist() and data is not None:
                zout.writestr(name, data)


def _resign(document: dict[str, object]) -> bytes:
    from treedp.release import _checksum

    document["checksum"] = _checksum(document["payload"])  # type: ignore[arg-type]
    return json.dumps(document).encode()


def test_load_refuses_bad_binary_files(tmp_path: Path) -> None:
    rel = _release(branching=[8, 8])
    good = tmp_path / "good.tdp"
    rel.save(good)
    raw = good.read_bytes()
    with zipfile.ZipFile(good) as zf:
        doc = json.loads(zf.read("metadata.json"))
        level = zf.read("level_2.npy")
    cases: dict[str, tuple[bytes, str]] = {
        "truncated": (raw[: len(raw) // 2], "corrupt or truncated"),
        "flipped": (raw[:200] + bytes([raw[200] ^ 0xFF]) + raw[201:], "corrupt|checksum"),
        "empty": (b"", "corrupt or truncated"),
        "zip_magic_only": (b"PK\x03\x04garbage", "corrupt or truncated"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / f"{name}.tdp"
        path.write_bytes(content)
        with pytest.raises(ReleaseFormatError, match=message):
            load_release(path)

    def variant(name: str, change: dict[str, bytes | None], message: str) -> None:
        path = tmp_path / f"{name}.tdp"
        _rewrite(good, path, change)
        with pytest.raises(ReleaseFormatError, match=message) as info:
            load_release(path)
        assert "\n" not in str(info.value)

    variant("no_metadata", {"metadata.json": None}, "not a treedp release")
    variant("foreign", {"metadata.json": b'{"hello": 1}'}, "not a treedp release")
    variant("not_json", {"metadata.json": b"\xff\x00"}, "corrupt or truncated")
    variant("missing_array", {"level_2.npy": None}, "corrupt or truncated|inconsistent")
    future = dict(doc, format_version=99)
    variant("future", {"metadata.json": json.dumps(future).encode()}, "newer than this treedp")
    tampered = json.loads(json.dumps(doc))
    tampered["payload"]["metadata"]["epsilon"] = 9.0
    variant("tampered", {"metadata.json": json.dumps(tampered).encode()}, "checksum")
    # a changed array is caught by its own checksum
    arr = np.lib.format.read_array(io.BytesIO(level))
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr[::-1].copy())
    variant("array_changed", {"level_2.npy": buf.getvalue()}, "array failed its checksum")
    # consistent checksums over inconsistent content are still refused
    floats = io.BytesIO()
    np.lib.format.write_array(floats, arr.astype(np.float64))
    doc_f = json.loads(json.dumps(doc))
    doc_f["payload"]["arrays"][2]["dtype"] = "<f8"
    variant(
        "float_counts",
        {"metadata.json": _resign(doc_f), "level_2.npy": floats.getvalue()},
        "signed integers",
    )
    pickled = json.loads(json.dumps(doc))
    pickled["payload"]["arrays"][2]["dtype"] = "|O"
    variant("object_dtype", {"metadata.json": _resign(pickled)}, "signed integers")
    shape = json.loads(json.dumps(doc))
    shape["payload"]["arrays"][2]["shape"] = [3]
    variant("wrong_shape", {"metadata.json": _resign(shape)}, "type or shape")
    short = io.BytesIO()
    np.lib.format.write_array(short, arr[:-1].copy())
    import hashlib

    doc_s = json.loads(json.dumps(doc))
    doc_s["payload"]["arrays"][2]["shape"] = [arr.size - 1]
    doc_s["payload"]["arrays"][2]["sha256"] = hashlib.sha256(arr[:-1].copy().data).hexdigest()
    variant(
        "short_level",
        {"metadata.json": _resign(doc_s), "level_2.npy": short.getvalue()},
        "tree shape",
    )
    for key, value, message in (
        ("guarantee", "approx", "guarantee"),
        ("integer", "yes", "'integer'"),
        ("n_public", 1e400, "'n_public'"),
        ("epsilon", True, "'epsilon'"),
        ("branching", [8, "8"], "wrong type"),
        ("bins", None, "bins"),
        ("randomness", [], "'randomness'"),
        ("bounds_step", {"method": "private_bounds", "stops": [0.0], "epsilon": 0.1}, "stops"),
        (
            "bounds_step",
            {"method": "private_bounds", "stops": [0, 1], "epsilon": 0.1, "known": "left"},
            "public side",
        ),
        (
            "bounds_step",
            {"method": "private_bounds", "stops": [0, 1], "epsilon": 0.1, "grid": "hours"},
            "grid",
        ),
    ):
        bad = json.loads(json.dumps(doc))
        bad["payload"]["metadata"][key] = value
        variant(f"meta_{key}", {"metadata.json": _resign(bad)}, message)
    with pytest.raises(ReleaseFormatError, match="directory"):
        load_release(tmp_path)


def test_load_refuses_bad_json_levels(tmp_path: Path) -> None:
    from treedp.release import _checksum

    rel = _release(bins=16)
    doc = rel.to_dict()
    for name, level, message in (
        ("floats", [0.5] * 16, "integers"),
        ("bools", [True] + [1] * 15, "integers"),
        ("huge", [2**70] + [1] * 15, "64-bit"),
        ("strings", ["1"] * 16, "64-bit"),
        ("not_list", {"a": 1}, "integers"),
    ):
        bad = json.loads(json.dumps(doc))
        bad["payload"]["noisy_levels"][-1] = level
        bad["checksum"] = _checksum(bad["payload"])
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(ReleaseFormatError, match=message):
            load_release(path)
        with pytest.raises(ReleaseFormatError, match=message):
            Release.from_dict(bad)


def test_binary_round_trip_of_every_kind_of_bins(tmp_path: Path) -> None:
    start = np.datetime64("2024-01-01T00:00:00")
    stamps = start + np.arange(500).astype("timedelta64[h]")
    dated = release_cdf(stamps, bounds=("2024-01-01", "2024-02-01"), bins=31, epsilon=2.0)
    explicit = _release(bounds=None, bins=None, edges=[0.0, 1.0, 5.0, 20.0, 50.0, 51.5, 100.0])
    regular = _release(bounds=(0.1, 0.7), bins=1000)
    for i, rel in enumerate((dated, explicit, regular)):
        path = tmp_path / f"r{i}.tdp"
        rel.save(path)
        again = load_release(path)
        assert np.array_equal(again.bins.edges, rel.bins.edges)
        assert again.metadata() == rel.metadata()
        assert np.array_equal(again.quantile([0.2, 0.7]), rel.quantile([0.2, 0.7]))


def test_forged_array_header_is_refused_before_reading(tmp_path: Path) -> None:
    rel = _release(bins=16)
    good = tmp_path / "good.tdp"
    rel.save(good)
    with zipfile.ZipFile(good) as zf:
        doc = json.loads(zf.read("metadata.json"))
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|i1", "fortran_order": False, "shape": (2**40,)}
    )
    doc["payload"]["arrays"][0]["dtype"] = "|i1"
    doc["payload"]["arrays"][0]["shape"] = [2**40]
    path = tmp_path / "forged.tdp"
    _rewrite(
        good,
        path,
        {"metadata.json": _resign(doc), "level_0.npy": b"\x93NUMPY" + header.getvalue()[6:]},
    )
    with pytest.raises(ReleaseFormatError, match="does not match its header"):
        load_release(path)


def test_an_approx_dp_target_is_kept_in_the_file_and_shown(tmp_path: Path) -> None:
    """privacy=ApproxDP(ε, δ): the release keeps the target (both layouts), `query --info`
    and the report state it; a bad target is refused on load; files without it still load."""
    from treedp.cli import main
    from treedp.release.format import _checksum
    from treedp.report import render_report

    x = np.random.default_rng(0).integers(17, 91, 2000)
    rel = treedp.release_cdf(
        x,
        bounds=(17, 90),
        bins="integers",
        privacy=treedp.ApproxDP(1.0, 1e-6),
        rng=treedp.InsecureSeededSource(1),
    )
    assert rel.target == {"epsilon": 1.0, "delta": 1e-6}
    assert rel.approx_target == treedp.ApproxDP(1.0, 1e-6)
    assert rel.guarantee.to_approx(1e-6).epsilon <= 1.0 + 1e-9  # type: ignore[union-attr]
    for name in ("r.json", "r.tdp"):
        rel.save(tmp_path / name)
        assert treedp.load_release(tmp_path / name).target == rel.target
    assert main(["query", str(tmp_path / "r.json"), "--info"]) == 0
    assert "(ε, δ) target" in render_report(rel)
    doc = rel.to_dict()
    doc["payload"]["metadata"]["target"] = {"epsilon": 1.0, "delta": 2.0}
    doc["checksum"] = _checksum(doc["payload"])
    with pytest.raises(treedp.ReleaseFormatError, match="target"):
        treedp.Release.from_dict(json.loads(json.dumps(doc)))
    del doc["payload"]["metadata"]["target"]
    doc["checksum"] = _checksum(doc["payload"])
    assert treedp.Release.from_dict(doc).target is None
    pure = treedp.release_cdf(x, bounds=(17, 90), bins="integers", epsilon=1.0)
    assert pure.target is None and pure.approx_target is None
