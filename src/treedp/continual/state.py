"""A stream's state file: written atomically, read back only when whole and of this format.

The file is JSON: a format marker and version, the stream's random id, the step index, the
public parameters, the mechanism's exact parameters, the spend record, the mechanism's state
arrays (raw little-endian bytes in base64, with dtype and shape) and a SHA-256 checksum of all
of it. With a privacy unit it also holds a random 32-byte key and, per person seen, the first
16 bytes of the keyed BLAKE2b hash of the person's id and the number of records kept (arrays
``person_hash`` and ``person_count``; :mod:`treedp.continual.persons`): never an id or a value.
The state arrays hold noise already drawn (``tree``'s open nodes, ``tree_full``'s noise prefix
sums) and exact, noiseless sums of the data: ``tree_full``'s running count, each step's counts
in ``sqrt`` and ``opt`` (scaled in ``sqrt_norm``), ``blt``'s ``hi``/``lo`` (the exact decayed
sums of the counts), and ``tree``'s open nodes of a level switched off. Whoever reads the file
learns those sums exactly and can take the noise off later answers: keep it as private as the
data itself. The last answer is kept too (``last_raw``, its noisy histogram, and ``last_held``,
the point masses it held: released values, for :attr:`ContinualStream.last`).
The checksum is not keyed (it finds damage, not an edit with the checksum recomputed): a loaded
state's noise parameters are checked against its public parameters
(:func:`treedp.continual.stream.load_continual`).
:func:`write_state` never rolls a stream back (a later step of the same stream, or another
stream, in the target file is refused): replaying a step would draw its noise again, and
averaging redraws removes the noise.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from treedp._atomic import atomic_write_text, check_target
from treedp.exceptions import InvalidParameterError, ReleaseFormatError

__all__ = [
    "FORMAT",
    "VERSION",
    "check_mass_bins",
    "check_writable",
    "decode_arrays",
    "encode_arrays",
    "read_state",
    "write_state",
]

FORMAT = "treedp-continual-state"
VERSION = 1
_DTYPES = ("int64", "float64")


def encode_arrays(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Arrays as ``{"dtype", "shape", "data"}`` (exact bytes, base64)."""
    out = {}
    for key, arr in arrays.items():
        a = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        out[key] = {
            "dtype": str(arr.dtype),
            "shape": list(arr.shape),
            "data": base64.b64encode(a.tobytes()).decode("ascii"),
        }
    return out


def decode_arrays(data: dict[str, Any], path: str) -> dict[str, np.ndarray]:
    """The arrays :func:`encode_arrays` wrote (a damaged entry: :class:`ReleaseFormatError`)."""
    out = {}
    try:
        for key, d in data.items():
            if d["dtype"] not in _DTYPES:
                raise ValueError("dtype")
            shape = tuple(int(n) for n in d["shape"])
            raw = base64.b64decode(d["data"], validate=True)
            arr = np.frombuffer(raw, dtype=np.dtype(d["dtype"]).newbyteorder("<"))
            out[key] = arr.astype(d["dtype"]).reshape(shape).copy()
    except (KeyError, TypeError, ValueError) as exc:
        raise _damaged(path, f"its arrays do not decode ({type(exc).__name__})") from None
    return out


def _digest(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _damaged(path: str, why: str) -> ReleaseFormatError:
    return ReleaseFormatError(f"'{path}' is not a usable continual-release state file: {why}.")


def read_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The verified payload of a state file.

    Raises
    ------
    ReleaseFormatError
        If the file cannot be read, is not JSON, is another format or version, or its checksum
        does not match (a damaged or edited file).
    """
    name = os.fspath(path)
    try:
        text = Path(name).read_text(encoding="utf-8")
        doc = json.loads(text)
    except FileNotFoundError:
        raise _damaged(name, "no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _damaged(name, f"it does not read as JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _damaged(name, "it is not a treedp continual-release state file")
    if doc.get("version") != VERSION:
        raise _damaged(name, f"format version {doc.get('version')!r}; this treedp reads {VERSION}")
    payload = doc.get("payload")
    if not isinstance(payload, dict) or doc.get("sha256") != _digest(payload):
        raise _damaged(name, "its checksum does not match (the file is damaged or was edited)")
    return payload


def check_writable(path: str | os.PathLike[str], stream_id: str, step: int) -> None:
    """Refuse, before anything is drawn, a target that cannot be written or that holds another
    stream or a later step of this one."""
    check_target(path)
    if not Path(path).exists():
        return
    try:
        held = read_state(path)
    except ReleaseFormatError:
        raise InvalidParameterError(
            f"'{os.fspath(path)}' exists and is not this stream's state file: give a new file name."
        ) from None
    if held.get("stream_id") != stream_id:
        raise InvalidParameterError(
            f"'{os.fspath(path)}' holds another stream's state: give a new file name."
        )
    if int(held.get("step", 0)) > step:
        raise InvalidParameterError(
            f"'{os.fspath(path)}' holds a later step of this stream: writing it would replay "
            "steps and redraw their noise. Load it with treedp.load_continual instead."
        )


def write_state(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """Write ``payload`` atomically (after :func:`check_writable`)."""
    check_writable(path, payload["stream_id"], int(payload["step"]))
    doc = {"format": FORMAT, "version": VERSION, "payload": payload, "sha256": _digest(payload)}
    atomic_write_text(path, json.dumps(doc, sort_keys=True, allow_nan=False))


def check_mass_bins(name: str, payload: dict[str, Any]) -> None:
    """Refuse a state whose held point-mass bins (``mass_bins``, absent before session 25;
    ``last_held``, the last answer's, absent before session 31) are not distinct bin indices
    of its bins (an edited, re-checksummed file: an index past the bins raised in the middle
    of a step, after the counter had advanced)."""
    bins = payload.get("bins")
    n_bins = 0 if bins is None else len(bins["edges"]) - 1
    if not _bin_indices(payload.get("mass_bins", []), n_bins):
        raise ReleaseFormatError(f"'{name}' is an inconsistent state file (mass_bins).")
    last_held = payload.get("last_held")  # the last answer's held masses (since session 31)
    if last_held is not None and not _bin_indices(last_held, n_bins):
        raise ReleaseFormatError(f"'{name}' is an inconsistent state file (last_held).")


def _bin_indices(held: Any, n_bins: int) -> bool:
    """Whether ``held`` is a list of distinct bin indices below ``n_bins``."""
    ok = isinstance(held, list) and all(
        isinstance(j, int) and not isinstance(j, bool) and 0 <= j < n_bins for j in held
    )
    return ok and len(set(held)) == len(held)
