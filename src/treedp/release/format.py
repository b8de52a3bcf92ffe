"""Release files: versioned, checksummed, written atomically, validated fully on load.

Two layouts share one validation path:

- **version 1, JSON**: ``{"format", "format_version": 1, "checksum", "payload"}`` with
  ``payload = {"metadata", "noisy_levels"}`` (levels as lists of integers) and the checksum
  the SHA-256 of the canonical (sorted, compact) JSON of the payload (:meth:`Release.to_dict`).
- **version 2, binary**: a zip (stored, zip64) holding ``metadata.json`` — the same envelope,
  with ``payload = {"metadata", "arrays"}`` and ``arrays`` listing, per noisy level, its member
  name, dtype, shape and SHA-256 — and one ``.npy`` file per level, in the smallest signed
  integer type that holds its values (read back with ``allow_pickle=False``).
- **versions 3 and 4**: the same two layouts for a person-level release (with a privacy unit,
  :mod:`treedp.release.unit`), so that a reader of versions 1-2 refuses it rather than drop
  the unit and state the record-level guarantee; the version must agree with the unit.

A file is recognised by its first bytes (a zip signature or JSON), not by its name.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from treedp._atomic import atomic_write, atomic_write_text, check_target
from treedp._validation import must
from treedp.domain import MAX_BINS, Bins
from treedp.exceptions import InvalidParameterError, ReleaseFormatError, TreeDPError
from treedp.mechanisms import Mechanism
from treedp.mechanisms.registry import mechanism_class
from treedp.release.record import Release, ReleaseCodec, handed_over, register_codec
from treedp.release.unit import check_unit_version, unit_from
from treedp.timezones import zone_info

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load_release", "save_release"]

FORMAT_NAME = "treedp.release"
FORMAT_VERSION = 4  # the newest layout this code reads and writes
JSON_VERSION = 1
BINARY_VERSION = 2
UNIT_JSON_VERSION = 3  # a person-level release (see the module's docstring)
UNIT_BINARY_VERSION = 4
KNOWN_GUARANTEES = ("pure", "zcdp")
_METADATA = "metadata.json"
#: The member holding a grouped release's document (:mod:`treedp.release.grouped`): named
#: here so that each loader can tell the other kind of file by it.
GROUPED_MEMBER = "grouped.json"
_INT_TYPES = (np.int8, np.int16, np.int32, np.int64)
_ZIP_MAGIC = b"PK\x03\x04"


def _checksum(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _envelope(version: int, payload: dict[str, Any], name: str = FORMAT_NAME) -> dict[str, Any]:
    checksum = _checksum(payload)
    return {"format": name, "format_version": version, "checksum": checksum, "payload": payload}


def _sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).data).hexdigest()


# ---------------------------------------------------------------------- writing
def to_json_document(release: Release) -> dict[str, Any]:
    """The version-1 JSON document of ``release``."""
    payload = {
        "metadata": release.metadata(),
        "noisy_levels": [level.tolist() for level in release.noisy_levels],
    }
    return _envelope(JSON_VERSION if release.unit is None else UNIT_JSON_VERSION, payload)


def _smallest_int(level: np.ndarray) -> np.ndarray:
    """``level`` in the smallest little-endian signed integer type that holds it."""
    low, high = (int(level.min()), int(level.max())) if level.size else (0, 0)
    kind = next(t for t in _INT_TYPES if np.iinfo(t).min <= low and high <= np.iinfo(t).max)
    return level.astype(np.dtype(kind).newbyteorder("<"), copy=False)


def _write_zip(handle: IO[bytes], member: str, document: Any, arrays: list[np.ndarray]) -> None:
    """A stored zip64 of the JSON ``document`` and the arrays its payload's manifest names."""
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(member, json.dumps(document, separators=(",", ":")))
        for entry, arr in zip(document["payload"]["arrays"], arrays, strict=True):
            with zf.open(str(entry["name"]), "w", force_zip64=True) as out:
                np.lib.format.write_array(out, arr, allow_pickle=False)


def _manifest(names: list[str], arrays: list[np.ndarray]) -> list[dict[str, Any]]:
    return [
        {"name": name, "dtype": arr.dtype.str, "shape": list(arr.shape), "sha256": _sha256(arr)}
        for name, arr in zip(names, arrays, strict=True)
    ]


def _compact_edges(bins: Bins) -> dict[str, Any] | None:
    """A few numbers that regenerate the edges exactly, or None (then they go in a .npy)."""
    edges = bins.edges
    if bins.datetime_unit is not None:
        return None
    count = int(edges.size)
    low, high = float(edges[0]), float(edges[-1])
    for spec in (
        {"kind": "unit", "low": low, "count": count},
        {"kind": "even", "low": low, "high": high, "count": count},
    ):
        if np.array_equal(_expand_edges(spec), edges):
            return spec
    return None


def _expand_edges(spec: Any) -> np.ndarray:
    """The edges described by :func:`_compact_edges`'s ``spec``."""
    if not isinstance(spec, dict) or spec.get("kind") not in ("unit", "even"):
        raise ReleaseFormatError("the bin edges are described in an unknown way")
    count = _field(spec, "count", (int,))
    if not 2 <= count <= MAX_BINS + 1:
        raise ReleaseFormatError("the bin edges have an invalid count")
    low = float(_field(spec, "low", (int, float)))
    if spec["kind"] == "unit":
        return low + np.arange(count, dtype=np.float64)
    high = float(_field(spec, "high", (int, float)))
    steps = np.arange(count, dtype=np.float64) / (count - 1)
    with np.errstate(all="ignore"):
        edges: np.ndarray = low + (high - low) * steps
    edges[-1] = high
    return edges


def _write_binary(release: Release, handle: IO[bytes]) -> None:
    bins = release.bins
    described: dict[str, Any] = {
        "discrete": bins.discrete,
        **({"integers": True} if bins.integers and not bins.discrete else {}),
        "equal_width": bins.equal_width,
        "datetime_unit": bins.datetime_unit,
        **({"timezone": bins.timezone} if bins.timezone is not None else {}),
    }
    arrays = [_smallest_int(level) for level in release.noisy_levels]
    names = [f"level_{i}.npy" for i in range(len(arrays))]
    compact = _compact_edges(bins)
    if compact is None:
        arrays.append(bins.edges.astype(bins.edges.dtype.newbyteorder("<"), copy=False))
        names.append("edges.npy")
        described["edges"] = {"kind": "array", "name": "edges.npy"}
    else:
        described["edges"] = compact
    payload = {"metadata": release._metadata(described), "arrays": _manifest(names, arrays)}
    version = BINARY_VERSION if release.unit is None else UNIT_BINARY_VERSION
    _write_zip(handle, _METADATA, _envelope(version, payload), arrays)


def save_release(release: Release, path: str | Path | IO[bytes], file_format: str | None) -> None:
    """Write ``release`` (see :meth:`Release.save` for the choice of layout)."""
    if file_format not in (None, "json", "binary"):
        raise InvalidParameterError(
            must("file_format", f"be 'json' or 'binary'. Got {file_format!r} instead.")
        )
    if not isinstance(path, str | Path):  # a binary file object
        if file_format == "json":
            path.write(json.dumps(to_json_document(release), separators=(",", ":")).encode())
        else:
            _write_binary(release, path)
        return
    check_target(path)  # the path as given: a trailing slash is an error, not dropped
    if file_format is None:
        file_format = "json" if Path(path).suffix.lower() == ".json" else "binary"
    if file_format == "json":
        atomic_write_text(path, json.dumps(to_json_document(release), separators=(",", ":")))
    else:
        atomic_write(path, lambda handle: _write_binary(release, handle))


# ---------------------------------------------------------------------- reading
def load_release(path: str | Path | IO[bytes] | IO[str]) -> Release:
    """Read a release written by :meth:`Release.save`, validating it fully.

    Parameters
    ----------
    path : str, Path or file object
        A release file of either layout (JSON version 1 or binary version 2), or an open
        file object (binary, or text for JSON).

    Raises
    ------
    ReleaseFormatError
        If the file is missing, corrupt or truncated, not a treedp release, from a newer
        format version, fails a checksum, or its contents are inconsistent (wrong array
        types or shapes, non-integer counts, an unknown guarantee, ...).
    """
    label = f"'{path}'" if isinstance(path, str | Path) else "the release file"
    if hasattr(path, "read"):
        data = path.read()
        if not isinstance(data, str | bytes):
            raise ReleaseFormatError(f"{label} did not read as bytes or text.")
        if isinstance(data, bytes) and data[:4] == _ZIP_MAGIC:
            return _load_binary(io.BytesIO(data), label)
        return _load_json(data, label)
    p = Path(path)
    try:
        with p.open("rb") as handle:
            if handle.read(4) == _ZIP_MAGIC:
                handle.seek(0)
                return _load_binary(handle, label)
            handle.seek(0)
            data = handle.read()
    except FileNotFoundError:
        raise ReleaseFormatError(f"No release file at '{p}'.") from None
    except IsADirectoryError:
        raise ReleaseFormatError(f"{label} is a directory, not a release file.") from None
    except OSError as exc:
        raise ReleaseFormatError(f"Could not read release file {label}: {exc.strerror}") from None
    return _load_json(data, label)


def _load_json(data: str | bytes, label: str) -> Release:
    try:
        document = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ReleaseFormatError(
            f"{label} is not valid JSON: the release file is corrupt or truncated."
        ) from None
    return from_json_document(document, label)


def _check_envelope(
    document: Any,
    label: str,
    versions: tuple[int, ...],
    kind: str = "release",
    name: str = FORMAT_NAME,
    newest: int = FORMAT_VERSION,
) -> dict[str, Any]:
    """The checked payload of an envelope (of a release, or a grouped release)."""
    if not isinstance(document, dict) or document.get("format") != name:
        raise ReleaseFormatError(f"{label} is not a treedp {kind} file.")
    version = document.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ReleaseFormatError(f"{label} has an invalid format version.")
    if version > newest:
        raise ReleaseFormatError(
            f"{label} uses {kind} format version {version}, newer than this treedp reads "
            f"(<= {newest}); upgrade treedp."
        )
    if version not in versions:  # this treedp writes JSON as version 1 and zips as version 2
        layout = "a JSON document" if JSON_VERSION in versions else "a zip"
        raise ReleaseFormatError(
            f"{label} is {layout} with format version {version}, which this treedp does not "
            "write: it is corrupt or from a newer treedp."
        )
    payload = document.get("payload")
    if not isinstance(payload, dict) or document.get("checksum") != _checksum(payload):
        raise ReleaseFormatError(f"{label} failed its checksum: the {kind} file is corrupt.")
    return payload


def from_json_document(document: Any, label: str) -> Release:
    """Validate a version-1 JSON document (parsed) and rebuild its release."""
    payload = _check_envelope(document, label, (JSON_VERSION, UNIT_JSON_VERSION))
    try:
        raw = payload["noisy_levels"]
        if not isinstance(raw, list):
            raise ReleaseFormatError("the noisy levels are not a list")
        release = _build(payload["metadata"], handed_over(_json_level(level) for level in raw))
        check_unit_version(release.unit, document["format_version"] == UNIT_JSON_VERSION)
        return release
    except _BAD as exc:
        raise ReleaseFormatError(f"{label} holds an inconsistent release: {_why(exc)}") from None


def _json_level(level: Any) -> np.ndarray:
    if not isinstance(level, list) or bool in set(map(type, level)):
        raise ReleaseFormatError("a noisy level is not a list of integers")
    arr = np.array(level) if level else np.zeros(0, dtype=np.int64)
    if arr.dtype.kind != "i" or arr.ndim != 1:  # floats, strings, nesting, beyond int64
        raise ReleaseFormatError("a noisy level is not a list of 64-bit integers")
    return arr.astype(np.int64, copy=False)


def _load_binary(handle: IO[bytes], label: str) -> Release:
    try:
        with zipfile.ZipFile(handle) as zf:
            try:
                document = json.loads(zf.read(_METADATA).decode("utf-8"))
            except KeyError:
                if GROUPED_MEMBER in zf.namelist():
                    raise ReleaseFormatError(
                        f"{label} is a grouped release file: read it with "
                        "treedp.load_grouped_release."
                    ) from None
                raise ReleaseFormatError(f"{label} is not a treedp release file.") from None
            payload = _check_envelope(document, label, (BINARY_VERSION, UNIT_BINARY_VERSION))
            has_unit = document["format_version"] == UNIT_BINARY_VERSION
            try:
                arrays = _read_arrays(zf, payload["arrays"])
                meta = payload["metadata"]
                if not isinstance(meta, dict) or not isinstance(meta.get("bins"), dict):
                    raise ReleaseFormatError("the bins are not described")
                spec = meta["bins"].get("edges")
                if isinstance(spec, dict) and spec.get("kind") == "array":
                    edges = arrays.pop(str(spec.get("name")), None)
                    if edges is None:
                        raise ReleaseFormatError("the bin edges array is missing")
                else:
                    edges = _expand_edges(spec)
                if arrays.keys() != {f"level_{i}.npy" for i in range(len(arrays))}:
                    raise ReleaseFormatError("the arrays are not the noisy levels")
                levels = handed_over(
                    arrays[f"level_{i}.npy"].astype(np.int64) for i in range(len(arrays))
                )
                meta = dict(meta, bins=dict(meta["bins"], edges=edges))
                release = _build(meta, levels)
                check_unit_version(release.unit, has_unit)
                return release
            except _BAD as exc:
                raise ReleaseFormatError(
                    f"{label} holds an inconsistent release: {_why(exc)}"
                ) from None
    except ReleaseFormatError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as exc:
        raise ReleaseFormatError(
            f"{label} is not a readable zip: the release file is corrupt or truncated "
            f"({type(exc).__name__})."
        ) from None


def _read_arrays(zf: zipfile.ZipFile, manifest: Any) -> dict[str, np.ndarray]:
    """Every array the manifest lists, checked against its type, shape and checksum."""
    if not isinstance(manifest, list):
        raise ReleaseFormatError("the array list is missing")
    arrays: dict[str, np.ndarray] = {}
    allowed = {np.dtype(t).newbyteorder("<").str for t in _INT_TYPES} | {"<f8"}
    for entry in manifest:
        if not isinstance(entry, dict) or set(entry) != {"name", "dtype", "shape", "sha256"}:
            raise ReleaseFormatError("an array entry is malformed")
        dtype = entry["dtype"]
        name = entry["name"]
        if dtype not in allowed or (dtype == "<f8" and name != "edges.npy"):
            raise ReleaseFormatError("an array does not hold little-endian signed integers")
        if name in arrays:
            raise ReleaseFormatError("an array is listed twice")
        arrays[str(name)] = _read_npy(zf, entry, 1)
    return arrays


def _read_npy(zf: zipfile.ZipFile, entry: dict[str, Any], ndim: int) -> np.ndarray:
    """The ``ndim``-D ``.npy`` member ``entry`` of the manifest names, its header checked
    against the entry before any data is read (so a forged header cannot make the reader
    allocate a huge array), then its checksum."""
    fmt = np.lib.format
    with zf.open(str(entry["name"])) as member:
        try:
            version = fmt.read_magic(member)
            if version not in ((1, 0), (2, 0)):
                raise ValueError
            read_header = (
                fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            )
            shape, fortran, dtype = read_header(member)
        except ValueError:
            raise ReleaseFormatError("an array is not a valid .npy file") from None
        if (
            dtype.str != entry["dtype"]
            or [*shape] != entry["shape"]
            or len(shape) != ndim
            or fortran
        ):
            raise ReleaseFormatError("an array's type or shape differs from the metadata")
        nbytes = math.prod(shape) * dtype.itemsize
        data = member.read(nbytes)
        if len(data) != nbytes or member.read(1):
            raise ReleaseFormatError("an array's data does not match its header")
    arr = np.frombuffer(data, dtype=dtype).reshape(shape)
    if _sha256(arr) != entry["sha256"]:
        raise ReleaseFormatError("an array failed its checksum")
    return arr


# ---------------------------------------------------------------------- shared validation
_BAD = (TreeDPError, KeyError, TypeError, ValueError, IndexError, OverflowError, AttributeError)


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _field(meta: dict[str, Any], key: str, kinds: tuple[type, ...], *, none: bool = False) -> Any:
    value = meta[key]
    if value is None and none:
        return None
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise ReleaseFormatError(f"field '{key}' has the wrong type")
    return value


#: Datetime units this treedp writes (coarser units are stored in seconds).
_DATETIME_UNITS = ("s", "ms", "us", "ns", "ps", "fs", "as")
#: The largest public n a file may state (every count is then exact in float64).
_MAX_N = 2**53


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (so ``True`` is not ``1`` and ``1`` is not ``1.0`` in a list of ints)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _check_zone(zone: Any, unit: Any) -> None:
    """The bins' time zone (absent in files of naive or numeric bins, and in older files)."""
    if zone is None:
        return
    if not isinstance(zone, str) or unit is None:
        raise ReleaseFormatError("the time zone of the bins is not a zone name of datetime bins")
    try:
        zone_info(zone)
    except InvalidParameterError:
        raise ReleaseFormatError("the bins' time zone is not one this machine knows") from None


def _check_plain_fields(meta: dict[str, Any]) -> None:
    """The fields that are plain data: booleans are booleans, units known, numbers numbers."""
    bins = _field(meta, "bins", (dict,))
    for key in ("discrete", "equal_width"):
        _field(bins, key, (bool,))
    if "integers" in bins:  # bins of whole integers, wider than one (absent from older files)
        _field(bins, "integers", (bool,))
    unit = _field(bins, "datetime_unit", (str,), none=True)
    if unit is not None and unit not in _DATETIME_UNITS:
        raise ReleaseFormatError("the datetime unit of the bins is not one this treedp writes")
    _check_zone(bins.get("timezone"), unit)
    edges = bins.get("edges")
    if isinstance(edges, list) and any(
        isinstance(e, bool) or not isinstance(e, int | float) for e in edges
    ):
        raise ReleaseFormatError("the bin edges are not numbers")
    if unit is not None and isinstance(edges, list) and not all(isinstance(e, int) for e in edges):
        raise ReleaseFormatError("datetime bin edges are not integer ticks")
    if "integer" in meta:
        _field(meta, "integer", (bool,))
    randomness = _field(meta, "randomness", (dict,))
    _field(randomness, "seeded", (bool,))
    if "source" in randomness:
        _field(randomness, "source", (str,))
    if randomness.get("seed") is not None:
        _field(randomness, "seed", (int,))
    n_public = _field(meta, "n_public", (int,), none=True)
    if n_public is not None and not 0 <= n_public <= _MAX_N:
        raise ReleaseFormatError("the public n is out of range")
    key = "rho" if meta.get("guarantee") == "zcdp" else "epsilon"  # zCDP: no finite pure ε
    total = _field(meta, key, (int, float))
    if not math.isfinite(total) or total <= 0:
        raise ReleaseFormatError(f"the {key} is not a positive finite number")


def _check_contract(meta: dict[str, Any], mechanism: Any, levels: list[np.ndarray]) -> None:
    """The stated contract is exactly the rebuilt mechanism's (no field may disagree)."""
    described = mechanism.describe()
    for key in ("block_sensitivity", "noise", "scales", "neighbours", "strategy"):
        if key in described and not _same(meta.get(key), described[key]):
            raise ReleaseFormatError(f"field '{key}' does not match the mechanism")
    key = "block_rhos" if mechanism.guarantee_kind == "zcdp" else "block_epsilons"
    stored_budgets = meta[key]  # a list of numbers (_build)
    budgets = np.asarray(mechanism.block_budgets, dtype=np.float64)
    if len(stored_budgets) != budgets.size or not np.allclose(
        np.asarray(stored_budgets, dtype=np.float64), budgets, rtol=1e-9, atol=1e-15
    ):
        raise ReleaseFormatError(f"field '{key}' does not match the mechanism")
    if getattr(mechanism, "shape", None) is None and meta.get("branching") is not None:
        raise ReleaseFormatError("field 'branching' is set for a mechanism without a tree")
    stored = np.asarray(meta["level_variance"], dtype=np.float64)
    expected = np.asarray(mechanism.block_variance(), dtype=np.float64)
    if stored.shape != expected.shape or not np.allclose(stored, expected, rtol=1e-9, atol=0):
        raise ReleaseFormatError("field 'level_variance' does not match the noise scales")
    n_public = meta.get("n_public")
    exact_sums = [int(level.sum()) for v, level in zip(expected, levels, strict=True) if v == 0.0]
    if n_public is not None and mechanism.exact_root and any(t != n_public for t in exact_sums):
        raise ReleaseFormatError("an exact level does not hold the public n")


def _build(meta: Any, levels: list[np.ndarray]) -> Release:
    """Rebuild and cross-check a release from its metadata and int64 noisy levels."""
    if not isinstance(meta, dict):
        raise ReleaseFormatError("the metadata is not an object")
    _check_plain_fields(meta)
    guarantee = _field(meta, "guarantee", (str,))
    if guarantee not in KNOWN_GUARANTEES:
        raise ReleaseFormatError("the guarantee is not one this treedp knows")
    bins = Bins.from_dict(_field(meta, "bins", (dict,)))
    name = _field(meta, "mechanism", (str,))
    _field(meta, "neighbours", (str,))
    zcdp = guarantee == "zcdp"  # a ρ budget (Gaussian noise)
    total = float(_field(meta, "rho" if zcdp else "epsilon", (int, float)))
    stated = _field(meta, "block_rhos" if zcdp else "block_epsilons", (list,))
    for e in stated:
        _field({"e": e}, "e", (int, float))
    if meta.get("branching") is not None:
        _field(meta, "branching", (list,))
    mechanism: Mechanism = mechanism_class(name).from_description(meta, bins.n_bins, total, zcdp)
    if mechanism.guarantee_kind != guarantee:
        raise ReleaseFormatError("the stated guarantee does not match the mechanism")
    if mechanism.describe()["scales"] != meta["scales"]:
        raise ReleaseFormatError("the stored noise scales do not match the stated budgets")
    expected = [b.size for b in mechanism.true_blocks(np.zeros(bins.n_bins, dtype=np.int64))]
    if [level.size for level in levels] != list(expected) or any(lv.ndim != 1 for lv in levels):
        raise ReleaseFormatError("the noisy levels do not match the tree shape")
    variance = _field(meta, "level_variance", (list,))
    # inf: a tree level switched off (budget 0; checked against the mechanism below)
    if not all(
        isinstance(v, int | float) and (math.isfinite(v) or v == math.inf) for v in variance
    ):
        raise ReleaseFormatError("non-finite level variance")
    if any(v == math.inf and np.any(lv != 0) for v, lv in zip(variance, levels, strict=False)):
        raise ReleaseFormatError("a level switched off holds values")
    _check_contract(meta, mechanism, levels)
    return Release(
        bins=bins,
        mechanism=mechanism,
        noisy_levels=levels,
        estimator=_field(meta, "estimator", (str,)),
        randomness=_field(meta, "randomness", (dict,)),
        library_version=_field(meta, "library_version", (str,)),
        postprocess=_field(meta, "postprocess", (str,)) if "postprocess" in meta else "monotone",
        integer=_field(meta, "integer", (bool,)) if "integer" in meta else False,
        bounds_step=_bounds_step(meta),
        target=None if meta.get("target") is None else _check_target(meta["target"]),
        unit=None
        if meta.get("unit") is None
        else unit_from(_field(meta, "unit", (dict,)), mechanism),
    )


def _number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_target(target: Any) -> dict[str, float]:
    """A stored ``(epsilon, delta)`` target: ``epsilon > 0``, ``0 < delta < 1``."""
    values: list[Any] = (
        [target.get(k) for k in ("epsilon", "delta")] if isinstance(target, dict) else []
    )
    if len(values) != 2 or not all(_number(v) and v > 0 for v in values) or not values[1] < 1:
        raise ReleaseFormatError("the (epsilon, delta) target must hold epsilon > 0, 0 < delta < 1")
    return {"epsilon": float(values[0]), "delta": float(values[1])}


def _bounds_step(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The optional record of a private bounds step (files written before it have none)."""
    if meta.get("bounds_step") is None:
        return None
    step = _field(meta, "bounds_step", (dict,))
    eps = _field(step, "epsilon", (int, float))
    if not (_number(eps) and eps > 0):
        raise ReleaseFormatError("the bounds step's epsilon must be a positive finite number")
    _field(step, "method", (str,))
    stops = _field(step, "stops", (list,))
    if len(stops) != 2 or not all(_number(v) for v in stops):
        raise ReleaseFormatError("the bounds step's stops must be two finite numbers")
    # "allowance" is absent from older files; "cut" only in older ones; "width" optional
    if "allowance" in step and not (_number(step["allowance"]) and step["allowance"] > 0):
        raise ReleaseFormatError("the bounds step's allowance must be a positive number")
    for key in ("cut", "width"):
        value = step.get(key, 1)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise ReleaseFormatError(f"the bounds step's {key} must be a positive integer")
    if step.get("grid") not in (None, "days"):  # "days": a datetime column's grid
        raise ReleaseFormatError("the bounds step's grid must be 'days' when given")
    if step.get("known") not in (None, "lower", "upper"):
        raise ReleaseFormatError("the bounds step's public side must be 'lower' or 'upper'")
    return dict(step)


register_codec(ReleaseCodec(to_json_document, from_json_document, save_release))
