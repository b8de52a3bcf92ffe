"""The stream object and its front door :func:`continual`, and :func:`load_continual`.

Guarantee: the whole stream (all ``T`` answers together) satisfies the mechanism's measure
under add/remove-one-record neighbours anywhere in the stream, privacy unit one record; or, with
``privacy_unit=`` and ``max_contributions=k``, add/remove-one-person neighbours (all of the
person's records, at any steps), privacy unit one person, each person's records beyond ``k``
over the whole stream dropped (:mod:`treedp.continual.persons`; the counters' sensitivities
scale by ``k``). For a stream whose batches do not depend on earlier answers (adaptively chosen
batches are not claimed here). The accountant is charged that
measure once, when the stream is created, before any noise is drawn; steps charge nothing.
Every check of public parameters runs before the charge; every check of a step's batch before
anything is drawn; a refused step leaves the stream and its state file unchanged.
"""

from __future__ import annotations

import math
import os
import secrets
from typing import Any

import numpy as np

from treedp import __version__
from treedp._inputs import as_1d_array
from treedp._validation import check_int, must
from treedp.continual.answer import StepAnswer, consistent
from treedp.continual.checks import (
    check_mechanism,
    check_new_path,
    stream_bins,
    stream_budget,
    stream_unit,
)
from treedp.continual.mechanisms import MECHANISMS, Counter, choose
from treedp.continual.persons import COLLISION, COLLISION_DELTA, PersonBound, read_ids
from treedp.continual.state import (
    check_mass_bins,
    check_writable,
    decode_arrays,
    encode_arrays,
    read_state,
    write_state,
)
from treedp.domain import Bins
from treedp.engines.base import check_nan_policy
from treedp.exceptions import InvalidParameterError, InvalidTypeError, ReleaseFormatError
from treedp.io import read_column
from treedp.noise.families import NOISES
from treedp.noise.rng import InsecureSeededSource, RandomSource, check_source
from treedp.privacy.accountant import check_accountant
from treedp.privacy.measures import Measure
from treedp.privacy.spend import SUBJECT_KEY, SpendRecord
from treedp.subject import stream_subject

__all__ = ["MAX_HORIZON", "ContinualStream", "continual", "load_continual"]

#: Largest horizon (a tree's state is ``O(log T)`` per bin).
MAX_HORIZON = 2**30


class ContinualStream:
    """A stream released step after step (build it with :func:`continual`).

    Attributes
    ----------
    t : int
        Steps fed so far.
    horizon : int
        The number of steps the guarantee covers.
    mechanism : str
        The row of :data:`treedp.continual.mechanisms.MECHANISMS` in use.
    spend : SpendRecord
        What the whole stream costs (charged once, at creation).
    last : StepAnswer or None
        The last step's answer (kept in the state file; None before the first step).
    """

    def __init__(
        self,
        payload: dict[str, Any],
        counter: Counter,
        arrays: dict[str, np.ndarray],
        source: RandomSource,
        path: str | None,
    ) -> None:
        self._payload = payload
        self._counter = counter
        self._arrays = arrays
        self._source = source
        self._path = path
        self._bins = None if payload["bins"] is None else Bins.from_dict(payload["bins"])
        unit = payload.get("unit")
        self._persons = (
            None
            if unit is None
            else PersonBound.from_state(
                int(unit["max_contributions"]),
                str(payload["person_key"]),
                {k: arrays.pop(k) for k in ("person_hash", "person_count")},
            )
        )

    # ----------------------------------------------------------------- public facts
    @property
    def t(self) -> int:
        """Steps fed so far."""
        return int(self._payload["step"])

    @property
    def horizon(self) -> int:
        """The horizon ``T``."""
        return int(self._payload["horizon"])

    @property
    def mechanism(self) -> str:
        """The mechanism's row name."""
        return str(self._payload["mechanism"])

    @property
    def bins(self) -> Bins | None:
        """The public bins (None for a plain counter)."""
        return self._bins

    @property
    def stream_id(self) -> str:
        """The stream's random id (kept in its state file)."""
        return str(self._payload["stream_id"])

    @property
    def seeded(self) -> bool:
        """True when any of the stream's noise came, or its next step's will come, from a
        seeded source (not for publication): made seeded, or loaded with one (then the state
        says so from that step on)."""
        live = isinstance(self._source, InsecureSeededSource)
        return live or bool(self._payload.get("seeded", False))

    @property
    def spend(self) -> SpendRecord:
        """The stream's spend record."""
        return _record(self._payload, self._counter)

    @property
    def guarantee(self) -> dict[str, Any]:
        """The guarantee as data: measure, neighbours, unit, sensitivity, what it covers."""
        rec = self.spend
        return {
            "measure": rec.measure,
            "neighbours": rec.neighbours,
            "unit": rec.unit,
            "covers": f"all {self.horizon} running answers together",
            "max_contributions": self._counter.contributions,
            "sensitivity": self._counter.sensitivity(),
            "loss": self._counter.loss(),
            **({} if self._persons is None else {"collision": COLLISION}),
        }

    @property
    def last(self) -> StepAnswer | None:
        """The answer of the last step taken, as :meth:`step` returned it (every query the
        same, post-processing of released values only); None before the first step, and for
        a state file written before session 31, which did not keep the noisy histogram."""
        held, raw = self._payload.get("last_held"), self._arrays.get("last_raw")
        if self.t == 0 or held is None or raw is None:
            return None
        return StepAnswer(
            self.t,
            self.horizon,
            raw.copy(),
            self._arrays["floor"].copy(),
            float(self._counter.variances(np.array(self.t))),
            self._bins,
            bool(self._payload.get("seeded", False)),  # as the last step saved it
            self._payload["noise"] == "gaussian",
            tuple(int(j) for j in held),
        )

    def expected_variance(self, t: Any) -> np.ndarray | float:
        """The exact variance of the running count's unbiased estimate after step ``t``
        (1..T; per bin: divide by the number of bins). Public: no data is read."""
        steps = np.asarray(t)
        if steps.dtype.kind not in "iu" or np.any(steps < 1) or np.any(steps > self.horizon):
            raise InvalidParameterError(must("t", f"be an int (or ints) in [1, {self.horizon}]."))
        n_bins = 1 if self._bins is None else self._bins.n_bins
        out = self._counter.variances(steps) * n_bins
        return float(out) if out.ndim == 0 else out

    # ----------------------------------------------------------------- steps
    def _person_batch(
        self, batch: Any, column: str | None, ids: Any, nan: str
    ) -> tuple[Any, np.ndarray, dict[bytes, int]]:
        """The step's kept records and the person table after them (not applied yet). Records
        whose id is missing follow ``nan``: left out under "drop" (not counted, charged to no
        person), refused under "error"."""
        assert self._persons is not None
        unit_column = self._payload["unit"]["column"]
        if isinstance(batch, str | os.PathLike):
            if column is None:
                raise InvalidParameterError(must("column", "be given when the batch is a file."))
            if ids is None and unit_column is not None:
                ids = read_ids(batch, unit_column)
            batch = read_column(batch, column)
        if isinstance(batch, bool | int | np.integer | float):
            raise InvalidTypeError(
                must("batch", "be the records (not a count): the stream bounds each person.")
            )
        if ids is None:
            raise InvalidParameterError(
                must("ids", "be given (one person id per record): the stream has a privacy unit.")
            )
        values = as_1d_array(batch, "batch")
        arr, present = self._persons.check(ids, values.size, nan)
        self._counts(values, None, nan)  # every check of the values, before anything is drawn
        # each person's records of the batch are offered in a random order (keys from the
        # stream's randomness: uniform up to ties of 64-bit keys), independent of the others'
        rows = np.flatnonzero(present)
        keys = np.frombuffer(self._source.random_bytes(8 * rows.size), dtype="<u8")
        order = rows[np.argsort(keys, kind="stable")]
        keep = np.zeros(values.size, dtype=bool)
        keep[order], table = self._persons.keep(arr[order])
        return values[keep], keep, table

    def _counts(self, batch: Any, column: str | None, nan: str) -> np.ndarray:
        if isinstance(batch, str | os.PathLike):
            if column is None:
                raise InvalidParameterError(must("column", "be given when the batch is a file."))
            batch = read_column(batch, column)
        if self._bins is None:
            if isinstance(batch, bool):
                raise InvalidTypeError(
                    must("batch", "be a count (int >= 0) or values, not a bool.")
                )
            if isinstance(batch, int | np.integer):
                if batch < 0:
                    raise InvalidParameterError(must("batch", "be a count (an int >= 0)."))
                # clamped, not refused (a refusal told a count above the cap): the
                # sensitivity holds and the total stays far inside int64
                return np.array([min(int(batch), count_limit(self.horizon))], dtype=np.int64)
            size = min(as_1d_array(batch, "batch").size, count_limit(self.horizon))
            return np.array([size], dtype=np.int64)
        if isinstance(batch, int | np.integer | float):
            raise InvalidTypeError(
                must("batch", "be values (an array, a column or a file) for a stream with bins.")
            )
        counts, _ = self._bins.count(batch, nan=check_nan_policy(nan))
        # each bin clamped at the cap: a record moves a bin's count by at most one either way
        return np.minimum(np.asarray(counts, dtype=np.int64), count_limit(self.horizon))

    def step(
        self, batch: Any, *, column: str | None = None, ids: Any = None, nan: str = "error"
    ) -> StepAnswer:
        """Feed one time step's records; the running answer after it.

        Parameters
        ----------
        batch : int, array-like or path
            Without bins: a count of records, or the records (their number is counted). With
            bins: the step's values (array, pandas / polars / pyarrow column) or a file.
        column : str, optional
            The column to read when ``batch`` is a file.
        ids : array-like, optional
            With a privacy unit: one person id per record (text or integers). Read from the
            file's privacy-unit column when ``batch`` is a file and ``ids`` is not given.
        nan : {"error", "drop"}
            Missing values, as in :meth:`treedp.Bins.count`; also missing ids (None, NaN,
            ``pd.NA``, an empty CSV cell): under "drop" their records are left out (not counted,
            charged to no person), under "error" the step is refused (state unchanged).

        Raises
        ------
        InvalidParameterError
            After the horizon, or for a batch of the wrong kind: nothing drawn, state unchanged.
        """
        if self.t >= self.horizon:
            raise InvalidParameterError(
                f"The stream has answered all {self.horizon} steps of its horizon: its guarantee "
                "covers no more. Start a new stream (with a new budget) for later steps."
            )
        table = None
        nan = check_nan_policy(nan)
        if self._path is not None:  # before anything is drawn (the person order's keys too)
            check_writable(self._path, self.stream_id, self.t)
        if self._persons is not None:
            batch, _, table = self._person_batch(batch, column, ids, nan)
            column = None
        elif ids is not None:
            raise InvalidParameterError(
                must("ids", "be given only to a stream with a privacy unit.")
            )
        counts = self._counts(batch, column, nan)
        t = self.t + 1
        arrays, raw = self._counter.step(dict(self._arrays), t, counts, self._source)
        floor = consistent(raw)  # kept in the state as "floor" (the format's name)
        arrays["floor"] = floor
        arrays["last_raw"] = np.asarray(raw, dtype=np.float64)  # for :attr:`last`
        self._arrays = arrays
        if self._persons is not None and table is not None:
            self._persons.kept = table
        bin_var = float(self._counter.variances(np.array(t)))
        gaussian = self._payload["noise"] == "gaussian"
        held = tuple(int(j) for j in self._payload.get("mass_bins", []))
        answer = StepAnswer(
            t, self.horizon, raw, floor, bin_var, self._bins, self.seeded, gaussian, held
        )
        # the bins read as a point mass stay so (post-processing of released answers)
        masses = [int(j) for j in answer.mass_bins()]
        self._payload = {
            **self._payload,
            "step": t,
            "seeded": self.seeded,
            "mass_bins": masses,
            "last_held": list(held),  # the masses the last answer held (for :attr:`last`)
        }
        if self._path is not None:
            self.save(self._path)
        return answer

    # ----------------------------------------------------------------- files
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state atomically (refused over another stream or a later step)."""
        payload = {**self._payload, "mechanism_parameters": self._counter.describe()}
        arrays = dict(self._arrays)
        if self._persons is not None:
            arrays.update(self._persons.to_arrays())
        payload["arrays"] = encode_arrays(arrays)
        write_state(path, payload)

    def __repr__(self) -> str:
        mark = " [SEEDED: not for publication]" if self.seeded else ""
        return (
            f"ContinualStream(mechanism={self.mechanism!r}, t={self.t}, horizon={self.horizon})"
            f"{mark}"
        )


def _record(payload: dict[str, Any], counter: Counter) -> SpendRecord:
    noise = NOISES[payload["noise"]]
    unit = payload.get("unit")
    return SpendRecord(
        mechanism=f"continual_{payload['mechanism']}",
        measure=noise.measure(counter.loss()),
        neighbours="add_remove",
        unit="record" if unit is None else f"person:{unit['column']}",
        parameters={
            "horizon": payload["horizon"],
            "max_contributions": counter.contributions,
            "bins": 0 if payload["bins"] is None else len(payload["bins"]["edges"]) - 1,
            "stream_id": payload["stream_id"],
            **({} if unit is None else {"collision_delta_per_person": COLLISION_DELTA}),
            **({SUBJECT_KEY: payload["subject"]} if "subject" in payload else {}),
        },
    )


def continual(
    *,
    horizon: int,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    bins: Any = None,
    bounds: Any = None,
    edges: Any = None,
    mechanism: str = "auto",
    accountant: Any = None,
    rng: RandomSource | None = None,
    path: str | os.PathLike[str] | None = None,
    privacy_unit: Any = None,
    max_contributions: int | None = None,
) -> ContinualStream:
    """Start a stream released after every one of ``horizon`` steps.

    Parameters
    ----------
    horizon : int
        ``T``, the number of steps (1 to :data:`MAX_HORIZON`). The guarantee covers them all.
    epsilon : float, optional
        Pure ε for the whole stream (discrete Laplace noise).
    privacy : PureDP, ZCDP or ApproxDP, optional
        Instead of ``epsilon``: ρ-zCDP (discrete Gaussian), or an (ε, δ) target met through the
        largest ρ whose conversion (CKS20) fits it. Checked as :func:`treedp.release_cdf`
        checks it (:func:`treedp.spec.check_target`): a refusal names ``'rho'``, ``'epsilon'``
        or ``'delta'`` (``δ`` in ``(0, 1e-3]``).
    bins, bounds, edges
        Public bins for running distributions, as :func:`treedp.make_bins`.
    mechanism : {"auto", "tree", "tree_full", "binary", "sqrt", "sqrt_norm", "opt", "blt"}
        ``auto``: the least exact mean variance of ``tree``, (pure ε) ``tree_full`` and (zCDP)
        ``sqrt``, ``sqrt_norm``, ``opt`` and ``blt`` where they apply
        (:data:`treedp.continual.MECHANISMS`).
    accountant : Accountant, optional
        Charged the whole stream's spend once, now.
    rng : RandomSource, optional
        OS randomness by default; :class:`treedp.InsecureSeededSource` for tests only.
    path : path, optional
        A new state file, written atomically now and after every step.
    privacy_unit : str or PrivacyUnit, optional
        Protect persons, not records: the person-id column's name (read from a step's file;
        or give ``ids=`` to :meth:`ContinualStream.step`), or ``treedp.PrivacyUnit(name,
        max_contributions=k)``. The neighbours become one person added or removed with all
        their records; the state keeps a keyed hash of each person seen and their count,
        never an id (:mod:`treedp.continual.persons`).
    max_contributions : int, optional
        ``k``: the records kept per person over the *whole stream* (later ones are dropped);
        the sensitivities scale by ``k``. Required with ``privacy_unit``.

    Returns
    -------
    ContinualStream
    """
    horizon = check_int(horizon, "horizon", 1, MAX_HORIZON)
    noise, budget = stream_budget(epsilon, privacy)
    the_bins = stream_bins(bins, bounds, edges)
    n_bins = 1 if the_bins is None else the_bins.n_bins
    mechanism = check_mechanism(mechanism, noise, horizon, n_bins)
    unit = stream_unit(privacy_unit, max_contributions)
    acct = check_accountant(accountant)
    source = check_source(rng)
    stream_id = secrets.token_hex(16)
    check_new_path(path, stream_id)
    k = 1 if unit is None else unit["max_contributions"]
    name, counter = choose(mechanism, horizon, noise, budget, k, n_bins)
    payload: dict[str, Any] = {
        "stream_id": stream_id,
        "step": 0,
        "horizon": horizon,
        "noise": noise,
        "budget": budget,
        "mechanism": name,
        "bins": None if the_bins is None else the_bins.to_dict(),
        "seeded": isinstance(source, InsecureSeededSource),
        "unit": unit,
        "treedp_version": __version__,
        "subject": stream_subject(path, the_bins),
    }
    record = _record(payload, counter)
    if acct is not None:
        acct.check(record)
        acct.charge(record)
    arrays = counter.initial_state(n_bins, source)
    arrays["floor"] = np.zeros(n_bins, dtype=np.float64)
    if unit is not None:
        payload["person_key"] = secrets.token_bytes(32).hex()
        arrays.update(
            {"person_hash": np.zeros((0, 2), np.int64), "person_count": np.zeros(0, np.int64)}
        )
    stream = ContinualStream(
        payload, counter, arrays, source, None if path is None else os.fspath(path)
    )
    if path is not None:
        stream.save(path)
    return stream


def load_continual(
    path: str | os.PathLike[str], *, rng: RandomSource | None = None, autosave: bool = True
) -> ContinualStream:
    """The stream saved at ``path``, resumed where it stopped (nothing charged, nothing redrawn).

    With ``autosave`` (default) every later step is written back to ``path`` atomically.
    Never step two copies of one state: they share their noise, so their answers differ by
    exactly the difference of the data fed to them (for ``tree_full`` at every later step).

    The checksum is not keyed: it finds damage, not edits made with it recomputed. So the
    counter is rebuilt from the public parameters stored (horizon, noise, budget, privacy unit,
    bins, mechanism) and its noise parameters must match the stored ones exactly
    (:func:`_check_calibration`).

    Raises
    ------
    ReleaseFormatError
        If the file is missing, damaged, edited, of another format or inconsistent (noise
        parameters other than the budget gives; records per person other than the unit's).
    """
    name = os.fspath(path)
    payload = read_state(name)
    try:
        desc = payload["mechanism_parameters"]
        counter = MECHANISMS[payload["mechanism"]].load(desc)
        arrays = decode_arrays(payload.pop("arrays"), name)
        payload.pop("mechanism_parameters")
        ok = 0 <= int(payload["step"]) <= int(payload["horizon"]) == counter.horizon
    except (KeyError, TypeError, ValueError) as exc:
        raise ReleaseFormatError(
            f"'{name}' is an inconsistent state file ({type(exc).__name__})."
        ) from None
    if not ok or not math.isfinite(float(payload["budget"])):
        raise ReleaseFormatError(f"'{name}' is an inconsistent state file (step or horizon).")
    _check_calibration(name, payload, counter)
    check_mass_bins(name, payload)
    shapes = getattr(counter, "state_shapes", None)  # counters that state their shapes
    if shapes is not None and "floor" in arrays:
        expected = shapes(int(arrays["floor"].size))
        if any(k not in arrays or arrays[k].shape != v for k, v in expected.items()):
            raise ReleaseFormatError(f"'{name}' is an inconsistent state file (array shapes).")
    if "last_raw" in arrays and arrays["last_raw"].shape != arrays.get("floor", np.zeros(0)).shape:
        raise ReleaseFormatError(f"'{name}' is an inconsistent state file (array shapes).")
    source = check_source(rng)
    try:
        return ContinualStream(payload, counter, arrays, source, name if autosave else None)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReleaseFormatError(
            f"'{name}' is an inconsistent state file ({type(exc).__name__})."
        ) from None


def _check_calibration(name: str, payload: dict[str, Any], counter: Counter) -> None:
    """Refuse a state whose counter is not the one its public parameters give (privacy review
    of ``blt``, F3: an edited, re-checksummed file loaded with ``σ²`` lowered, or with
    ``contributions`` below the unit's ``max_contributions``). The row's ``rebuild`` plans the
    counter again from the stored horizon, noise, budget, ``k`` and bins (``tree``, ``tree_full``
    with the stored fan-out, ``opt`` with the stored ``v``: their searches are slow; any of
    them is calibrated to the budget) and it must describe itself exactly as the stored one."""
    try:
        unit, bins = payload.get("unit"), payload["bins"]
        k = 1 if unit is None else int(unit["max_contributions"])
        n_bins = 1 if bins is None else len(bins["edges"]) - 1
    except (KeyError, TypeError, ValueError):
        raise ReleaseFormatError(
            f"'{name}' is an inconsistent state file (unit or bins)."
        ) from None
    if counter.contributions != k:
        raise ReleaseFormatError(
            f"'{name}' is an inconsistent state file: its noise is calibrated for "
            f"{counter.contributions} records per privacy unit, its privacy unit keeps {k}."
        )
    try:
        rebuilt = MECHANISMS[payload["mechanism"]].rebuild(
            counter, counter.horizon, str(payload["noise"]), float(payload["budget"]), k, n_bins
        )
    except (KeyError, TypeError, ValueError):
        rebuilt = None
    if rebuilt is None or rebuilt.describe() != counter.describe():
        raise ReleaseFormatError(
            f"'{name}' is an inconsistent state file: its noise parameters are not those its "
            "budget and public parameters give (the file was edited)."
        )


def count_limit(horizon: int) -> int:
    """The largest count one step takes, from the public horizon: ``2**62 // horizon`` (at most
    ``2**50``), so a running count, and its sum with the noise, stays inside the counters' exact
    int64 arithmetic at every step (privacy review of ``tree_full``, F1: a total past ``2**63``
    wrapped, and neighbours across the wrap were told apart). Refusing on a running total
    instead would depend on the data."""
    return min(2**50, 2**62 // max(1, int(horizon)))
