"""A grouped release: one tree per public key, released in one call under one guarantee.

Every key's tree has the same public bins, mechanism and noise scale; ``gr[key]`` is that
key's :class:`~treedp.release.Release`. The guarantee is stated once, for the privacy unit.
Each per-key release carries the record-level mechanism it was noised with, at
``epsilon / Δ`` with ``Δ`` the contribution factor (the L1 change of all groups' level vectors
together for one person, :mod:`treedp.privacy.contribution`): the person-level loss is ``Δ``
times its loss.

File layout (``format: "treedp.grouped_release"``, version 1): a zip holding ``grouped.json``
— an envelope ``{format, format_version, checksum, payload}`` whose checksum is the SHA-256 of
the canonical payload ``{metadata, keys, common, arrays}`` — and one ``level_<l>.npy`` per tree
level, shape ``(G, nodes_l)``, little-endian signed integers, each listed in ``arrays`` with
its dtype, shape and SHA-256. Written atomically.
"""

from __future__ import annotations

import datetime
import json
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, overload

import numpy as np
from numpy.typing import NDArray

from treedp._atomic import atomic_write
from treedp._frames import polars_frame
from treedp._views import view
from treedp.exceptions import InvalidParameterError, ReleaseFormatError, TreeDPError
from treedp.privacy.auto_bound import check_choice_loss, choice_weight
from treedp.privacy.collision import COLLISION, COLLISION_DELTA
from treedp.privacy.contribution import ContributionBounds
from treedp.privacy.measures import ZCDP, ApproxDP, PureDP
from treedp.privacy.spend import SpendRecord
from treedp.release import queries
from treedp.release.contract import stored_target
from treedp.release.format import (
    _INT_TYPES,
    _METADATA,
    GROUPED_MEMBER,
    _build,
    _check_envelope,
    _check_target,
    _envelope,
    _manifest,
    _read_npy,
    _smallest_int,
    _write_zip,
)
from treedp.release.queries import Answers, Points, QuantileValue, Scalar
from treedp.release.record import Release, handed_over
from treedp.release.signal import groups_bounds_warning, low_signal
from treedp.release.unit import loss_factor

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from treedp.noise import RandomSource

__all__ = ["GroupedRelease", "load_grouped_release"]

FORMAT_NAME = "treedp.grouped_release"


FORMAT_VERSION = 1


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value (a table's cell)."""
    return value.item() if isinstance(value, np.generic) else value


class GroupedRelease:
    """Released distributions of one column per public key, under one person-level guarantee.

    Attributes
    ----------
    keys : tuple
        The public keys (given, or privately selected), in order.
    by : tuple of str
        The names of the ``by`` columns.
    bounds : ContributionBounds
        The privacy unit and the per-person bounds (one row = one person when ``unit`` is None).
    neighbours : {"add_remove", "replace"}
        Add/remove one person, or replace one person's rows by another's.
    epsilon : float
        The total pure-DP budget (``inf`` for Gaussian noise: see :attr:`guarantee`).
    guarantee : PureDP, ApproxDP or ZCDP
        What the whole grouped release satisfies for the privacy unit (ApproxDP when the keys
        were selected privately; ZCDP with Gaussian noise, ``L2²`` times the trees' loss).
    selection : dict or None
        How the keys were selected privately (epsilon, delta, noise scale, threshold).
    target : dict or None
        The ``(epsilon, delta)`` target asked for, which the zCDP :attr:`guarantee` implies
        by the tight conversion (:attr:`approx_target`).
    bound_choice : dict or None
        With ``max_contributions="auto"``: the share of ε, the candidates' cap and the exact ε
        the private choice of :attr:`bounds` spent (part of :attr:`guarantee`).
    collision : str or None
        :data:`~treedp.privacy.collision.COLLISION` when persons were told apart by a keyed
        128-bit hash (text ids on files): the guarantee is :attr:`guarantee` plus
        ``δ <= (n - 1)·2**-128`` for ``n`` persons (the spend's
        ``collision_delta_per_person``); None when ids were compared exactly.
    """

    def __init__(
        self,
        *,
        keys: tuple[Any, ...],
        by: tuple[str, ...],
        releases: list[Release],
        bounds: ContributionBounds,
        neighbours: str,
        epsilon: float,
        guarantee: PureDP | ApproxDP | ZCDP,
        selection: dict[str, Any] | None = None,
        target: dict[str, float] | None = None,
        bound_choice: dict[str, Any] | None = None,
        collision: str | None = None,
    ) -> None:
        if len(keys) != len(releases):
            raise InvalidParameterError("A grouped release needs one release per key.")
        if collision not in (None, COLLISION):
            raise InvalidParameterError(
                "A grouped release's collision statement must be treedp's COLLISION or None."
            )
        vars(self).update(  # past the frozen __setattr__
            keys=tuple(keys),
            by=tuple(by),
            _releases=dict(zip(keys, releases, strict=True)),
            bounds=bounds,
            neighbours=neighbours,
            epsilon=float(epsilon),
            guarantee=guarantee,
            selection=None if selection is None else dict(selection),
            target=None if target is None else dict(target),
            bound_choice=None if bound_choice is None else dict(bound_choice),
            collision=collision,
        )

    keys: tuple[Any, ...]
    by: tuple[str, ...]
    _releases: dict[Any, Release]
    bounds: ContributionBounds
    neighbours: str
    epsilon: float
    guarantee: PureDP | ApproxDP | ZCDP
    selection: dict[str, Any] | None
    bound_choice: dict[str, Any] | None
    target: dict[str, float] | None
    collision: str | None

    @property
    def approx_target(self) -> ApproxDP | None:
        """The ``(epsilon, delta)`` target asked for, as a guarantee (None without one)."""
        return stored_target(self.target)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"A GroupedRelease is frozen: cannot set '{name}'.")

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys)

    def __contains__(self, key: object) -> bool:
        return key in self._releases

    def __getitem__(self, key: Any) -> Release:
        """The release of one key: every query of :class:`~treedp.release.Release`."""
        if isinstance(key, list):
            key = tuple(key)
        try:
            return self._releases[key]
        except (KeyError, TypeError):
            raise InvalidParameterError("That key is not one of the released keys.") from None

    def items(self) -> Iterator[tuple[Any, Release]]:
        """``(key, release)`` pairs in key order."""
        return iter(self._releases.items())

    @property
    def unit(self) -> str:
        """The privacy unit: ``"record"`` (one row is one person) or ``"person:<column>"``."""
        return self.bounds.unit_label

    @property
    def seeded(self) -> bool:
        """True when the noise (or sampling) came from a seeded, not publishable, source."""
        return any(r.seeded for r in self._releases.values())

    @property
    def contribution_factor(self) -> int:
        """``Δ`` over all groups (:func:`~treedp.release.unit.loss_factor`)."""
        return loss_factor(self.bounds, self.neighbours, isinstance(self.guarantee, ZCDP))

    # ------------------------------------------------------------------ queries across keys
    @overload
    def quantile(self, q: float) -> dict[Any, QuantileValue]: ...
    @overload
    def quantile(self, q: Sequence[float] | NDArray[Any]) -> dict[Any, NDArray[Any]]: ...
    @overload
    def quantile(self, q: object) -> dict[Any, QuantileValue | NDArray[Any]]: ...
    def quantile(self, q: Any) -> dict[Any, Any]:
        """``{key: release.quantile(q)}``."""
        qa = queries.check_q(q)
        return {k: r.quantile(qa) for k, r in self._releases.items()}

    @overload
    def cdf(self, x: Scalar) -> dict[Any, float]: ...
    @overload
    def cdf(self, x: Points) -> dict[Any, Answers]: ...
    @overload
    def cdf(self, x: object) -> dict[Any, float | Answers]: ...
    def cdf(self, x: Any) -> dict[Any, Any]:
        """``{key: release.cdf(x)}``."""
        return {k: r.cdf(x) for k, r in self._releases.items()}

    @overload
    def range_count(self, a: Scalar, b: Scalar) -> dict[Any, float]: ...
    @overload
    def range_count(self, a: Points, b: Scalar | Points) -> dict[Any, Answers]: ...
    @overload
    def range_count(self, a: Scalar, b: Points) -> dict[Any, Answers]: ...
    @overload
    def range_count(self, a: object, b: object) -> dict[Any, float | Answers]: ...
    def range_count(self, a: Any, b: Any) -> dict[Any, Any]:
        """``{key: release.range_count(a, b)}``."""
        return {k: r.range_count(a, b) for k, r in self._releases.items()}

    def n(self) -> dict[Any, float]:
        """The estimated number of (kept) records per key."""
        return {k: r.n for k, r in self._releases.items()}

    def low_signal(self) -> dict[Any, bool]:
        """``{key: True}`` where a key's quantiles carry too little signal (its ``n̂ <= 0``, or
        its CDF's standard error at its median above 5% of ``n̂``:
        :func:`treedp.release.signal.low_signal`, the HTML report's rule; post-processing)."""
        return {k: low_signal(r) for k, r in self._releases.items()}

    def bounds_warning(self, *, share: float | None = None) -> str | None:
        """Keys whose end bins hold much released mass, in one warning, else None
        (:func:`treedp.release.signal.groups_bounds_warning`; post-processing)."""
        return groups_bounds_warning(self._releases, share)

    def table(
        self, q: Any, *, level: float | None = None, rng: RandomSource | None = None
    ) -> dict[str, list[Any]]:
        """A tidy table of quantiles: columns ``key`` (or one per ``by``), ``q``, ``value``;
        with ``level``, ``low`` and ``high``, each key's :meth:`Release.quantile_interval` at
        that level (its simulations drawn from ``rng``, the OS's by default); then each key's
        released count ``n_hat`` and ``low_signal``: True when its quantiles carry too little
        signal (:func:`treedp.release.signal.low_signal`, the HTML report's rule; a public key
        with no records is flagged, its ``value`` is noise)."""
        qs = np.atleast_1d(queries.check_q(q)).ravel()
        answers = self.quantile(qs)
        names = ["q", "value", *(["low", "high"] if level is not None else []), "n_hat"]
        cols: dict[str, list[Any]] = {name: [] for name in [*self.by, *names, "low_signal"]}
        for key, values in answers.items():
            parts = key if len(self.by) > 1 else (key,)
            rel = self._releases[key]
            n_hat, flag = float(rel.n), low_signal(rel)  # the rule, not the method above
            ends = rel.quantile_interval(qs, level=level, rng=rng) if level is not None else None
            for i, (qq, v) in enumerate(zip(qs, np.atleast_1d(values), strict=True)):
                for name, part in zip(self.by, parts, strict=True):
                    cols[name].append(part)
                cols["q"].append(float(qq))
                cols["value"].append(_plain(v))
                if ends is not None:
                    cols["low"].append(_plain(np.atleast_1d(ends[0])[i]))
                    cols["high"].append(_plain(np.atleast_1d(ends[1])[i]))
                cols["n_hat"].append(n_hat)
                cols["low_signal"].append(flag)
        return cols

    def to_frame(
        self, q: Any, *, level: float | None = None, rng: RandomSource | None = None
    ) -> pd.DataFrame:
        """:meth:`table` as a pandas DataFrame (needs ``treedp[pandas]``): one column per
        ``by`` column, then ``q``, ``value`` (with ``level``: ``low``, ``high``), ``n_hat``
        and ``low_signal``, one row per key and level."""
        frame: pd.DataFrame = view("grouped.to_frame")(self, q, level=level, rng=rng)
        return frame

    def to_polars(
        self, q: Any, *, level: float | None = None, rng: RandomSource | None = None
    ) -> pl.DataFrame:
        """:meth:`table` as a polars DataFrame, the columns of :meth:`to_frame` (needs
        ``treedp[polars]``)."""
        return polars_frame(self.table(q, level=level, rng=rng), "GroupedRelease.to_polars")

    # ------------------------------------------------------------------ contract
    def spend(self) -> SpendRecord:
        """The spend of the whole grouped release, for the privacy unit."""
        first = next(iter(self._releases.values()))
        return SpendRecord(
            mechanism=f"grouped_{first.mechanism.name}",
            measure=self.guarantee,
            neighbours=self.neighbours,
            unit=self.unit,
            parameters={
                "keys": len(self.keys),
                "epsilon": None if self.epsilon == float("inf") else self.epsilon,
                "n_bins": first.bins.n_bins,
                "contribution_factor": self.contribution_factor,
                **self.bounds.describe(),
                "selection": self.selection,
                **({} if self.bound_choice is None else {"bound_choice": self.bound_choice}),
                **({"collision_delta_per_person": COLLISION_DELTA} if self.collision else {}),
            },
        )

    def metadata(self) -> dict[str, Any]:
        """The grouped contract as plain data (what the file stores besides the trees)."""
        g = self.guarantee
        return {
            "by": list(self.by),
            "bounds": self.bounds.describe(),
            "neighbours": self.neighbours,
            "epsilon": None if self.epsilon == float("inf") else self.epsilon,
            "guarantee": (
                {"kind": "zcdp", "rho": g.rho}
                if isinstance(g, ZCDP)
                else {
                    "kind": "approx" if isinstance(g, ApproxDP) else "pure",
                    "epsilon": g.epsilon,
                    "delta": g.delta if isinstance(g, ApproxDP) else 0.0,
                }
            ),
            "unit": self.unit,
            "selection": self.selection,
            **({"target": dict(self.target)} if self.target is not None else {}),
            **({"bound_choice": dict(self.bound_choice)} if self.bound_choice else {}),
            **({"collision": self.collision} if self.collision else {}),
        }

    def __repr__(self) -> str:
        seeded = ", SEEDED (not for publication)" if self.seeded else ""
        unit = "one row is one person" if self.bounds.unit is None else self.unit
        return (
            f"GroupedRelease(by={list(self.by)}, keys={len(self.keys)}, epsilon={self.epsilon}, "
            f"unit={unit!r}, neighbours={self.neighbours!r}{seeded})"
        )

    def plot(self, **options: Any) -> tuple[Figure, dict[Any, Axes]]:
        """Overlaid CDFs or small multiples per key: :func:`treedp.report.plot.plot_groups`;
        the figure and its axes by key."""
        drawn: tuple[Figure, dict[Any, Axes]] = view("grouped.plot")(dict(self.items()), **options)
        return drawn

    def _repr_html_(self) -> str:
        """Notebook display: the guarantee once, then a compact line per key (first 20)."""
        html: str = view("grouped._repr_html_")(self)
        return html

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path | IO[bytes]) -> None:
        """Write the grouped release as one checksummed zip (atomically to a path)."""
        if isinstance(path, str | Path):
            atomic_write(Path(path), self._write)
        else:
            self._write(path)

    def _write(self, handle: IO[bytes]) -> None:
        first = next(iter(self._releases.values()))
        levels = range(len(first.noisy_levels))
        arrays = [
            _smallest_int(np.stack([r.noisy_levels[lv] for r in self._releases.values()]))
            for lv in levels
        ]
        payload = {
            "metadata": self.metadata(),
            "keys": [_key_json(k) for k in self.keys],
            "common": first.metadata(),
            "arrays": _manifest([f"level_{i}.npy" for i in levels], arrays),
        }
        _write_zip(handle, GROUPED_MEMBER, _envelope(FORMAT_VERSION, payload, FORMAT_NAME), arrays)


def _key_json(key: Any) -> Any:
    """A key as JSON: a list for a tuple; a date or datetime key (a ``by`` column of a date
    or datetime type) as ``{"date": iso}``, ``{"datetime": iso}`` (a ``datetime``, pandas'
    ``Timestamp`` included) or ``{"datetime64": text}``; other keys as they are."""
    if isinstance(key, tuple):
        return [_key_json(k) for k in key]
    if isinstance(key, np.datetime64):
        return {"datetime64": str(key)}
    if isinstance(key, datetime.datetime):
        return {"datetime": key.isoformat()}
    if isinstance(key, datetime.date):
        return {"date": key.isoformat()}
    return key


def _key_from_json(value: Any) -> Any:
    """The key :func:`_key_json` wrote (a ``Timestamp`` comes back as a ``datetime``)."""
    if isinstance(value, list):
        return tuple(_key_from_json(v) for v in value)
    if isinstance(value, dict):
        if len(value) != 1:
            raise ReleaseFormatError("a key is not a value")
        ((tag, text),) = value.items()
        if not isinstance(text, str):
            raise ReleaseFormatError("a key is not a value")
        if tag == "datetime64":
            return np.datetime64(text)
        if tag == "datetime":
            return datetime.datetime.fromisoformat(text)
        if tag == "date":
            return datetime.date.fromisoformat(text)
        raise ReleaseFormatError("a key is not a value")
    return value


def is_grouped_file(path: str | Path) -> bool:
    """Whether ``path`` is a grouped release file (a zip holding ``grouped.json``)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return GROUPED_MEMBER in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def load_grouped_release(path: str | Path | IO[bytes]) -> GroupedRelease:
    """Read a grouped release written by :meth:`GroupedRelease.save`, validating it fully.

    Raises
    ------
    ReleaseFormatError
        If the file is missing, corrupt, not a grouped release, from a newer version, fails a
        checksum, or its contents are inconsistent.
    """
    label = f"'{path}'" if isinstance(path, str | Path) else "the grouped release file"
    try:
        with zipfile.ZipFile(path) as zf:
            try:
                document = json.loads(zf.read(GROUPED_MEMBER).decode("utf-8"))
            except KeyError:
                if _METADATA in zf.namelist():
                    raise ReleaseFormatError(
                        f"{label} is a release file of one distribution: read it with "
                        "treedp.load_release."
                    ) from None
                raise ReleaseFormatError(f"{label} is not a treedp grouped release.") from None
            return _from_document(zf, document, label)
    except ReleaseFormatError:
        raise
    except FileNotFoundError:
        raise ReleaseFormatError(f"No release file at {label}.") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ReleaseFormatError(
            f"{label} is not a readable zip: corrupt or truncated ({type(exc).__name__})."
        ) from None


def _from_document(zf: zipfile.ZipFile, document: Any, label: str) -> GroupedRelease:
    payload = _check_envelope(
        document, label, (FORMAT_VERSION,), "grouped release", FORMAT_NAME, FORMAT_VERSION
    )
    try:
        meta = payload["metadata"]
        keys = tuple(_key_from_json(k) for k in payload["keys"])
        if len(set(keys)) != len(keys) or not keys:
            raise ReleaseFormatError("the keys are not unique")
        manifest = payload["arrays"]
        if not isinstance(manifest, list) or [e.get("name") for e in manifest] != [
            f"level_{i}.npy" for i in range(len(manifest))
        ]:
            raise ReleaseFormatError("the arrays are not the tree levels")
        levels = [_read_2d(zf, e, len(keys)) for e in manifest]
        first = _build(payload["common"], handed_over(lv[0].astype(np.int64) for lv in levels))
        releases = [first]
        for i in range(1, len(keys)):
            releases.append(
                Release(
                    bins=first.bins,
                    mechanism=first.mechanism,
                    noisy_levels=handed_over(lv[i].astype(np.int64) for lv in levels),
                    estimator=first.estimator,
                    randomness=first.randomness,
                    library_version=first.library_version,
                    postprocess=first.postprocess,
                    integer=first.integer,
                )
            )
        b = meta["bounds"]
        bounds = ContributionBounds(
            b["unit"], b["max_contributions"], b["max_groups"], b["max_contributions_per_group"]
        )
        neighbours = meta["neighbours"]
        if neighbours not in ("add_remove", "replace"):
            raise ReleaseFormatError("unknown neighbour relation")
        choice = _bound_choice(meta.get("bound_choice"))
        spent = (0.0, None) if choice is None else _choice_spent(choice)
        guarantee = _guarantee(meta["guarantee"], first.mechanism, bounds, neighbours, spent)
        if choice is not None:  # the stated spend covers the loss its noise implies
            check_choice_loss(choice, *_choice_spent(choice), neighbours, choice_weight(bounds))
        collision = meta.get("collision")  # absent in files of exact ids (and older files)
        if collision not in (None, COLLISION):
            raise ReleaseFormatError("the collision statement is not treedp's")
        target = meta.get("target")
        if target is not None and not isinstance(guarantee, ZCDP):
            raise ReleaseFormatError(
                "the (epsilon, delta) target must hold epsilon > 0, 0 < delta < 1"
            )
        return GroupedRelease(
            keys=keys,
            by=tuple(str(b) for b in meta["by"]),
            releases=releases,
            bounds=bounds,
            neighbours=neighbours,
            epsilon=float("inf") if meta["epsilon"] is None else float(meta["epsilon"]),
            guarantee=guarantee,
            selection=meta["selection"],
            bound_choice=choice,
            target=None if target is None else _check_target(target),
            collision=collision,
        )
    except ReleaseFormatError as exc:
        raise ReleaseFormatError(f"{label} holds an inconsistent grouped release: {exc}") from None
    except (TreeDPError, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ReleaseFormatError(
            f"{label} holds an inconsistent grouped release ({type(exc).__name__})."
        ) from None


def _guarantee(
    g: Any,
    mechanism: Any,
    bounds: ContributionBounds,
    neighbours: str,
    choice: tuple[float, str | None] = (0.0, None),
) -> PureDP | ApproxDP | ZCDP:
    """The stated guarantee, checked to cover the trees' loss times the contribution factor
    (plus the budget a private choice of the bound spent, in the guarantee's unit)."""
    extra, unit = choice
    guarantee: PureDP | ApproxDP | ZCDP
    if g["kind"] == "zcdp":
        guarantee = ZCDP(g["rho"])
        rho_spent = getattr(mechanism, "rho_spent", None)
        if rho_spent is None:
            raise ReleaseFormatError("a zCDP guarantee needs a Gaussian tree")
        spent, bound = float(rho_spent()), guarantee.rho
    else:
        eps = g["epsilon"]
        guarantee = ApproxDP(eps, g["delta"]) if g["kind"] == "approx" else PureDP(eps)
        spent, bound = float(mechanism.epsilon_spent()), guarantee.epsilon
    if unit is not None and unit != ("rho" if isinstance(guarantee, ZCDP) else "epsilon"):
        raise ReleaseFormatError("the bound choice's budget is not in the guarantee's unit")
    stated = spent * loss_factor(bounds, neighbours, isinstance(guarantee, ZCDP)) + extra
    if stated > bound * (1 + 1e-9):
        raise ReleaseFormatError("the stated guarantee does not match the noise scales")
    return guarantee


def _bound_choice(stored: Any) -> dict[str, Any] | None:
    """A stored ``"auto"`` bound record (absent in files without one)."""
    if stored is None:
        return None
    if not isinstance(stored, dict):
        raise ReleaseFormatError("the bound choice is not a record")
    _choice_spent(stored)
    return dict(stored)


def _choice_spent(choice: dict[str, Any]) -> tuple[float, str]:
    """The budget a bound choice spent and its unit: one positive ``epsilon_spent`` or
    ``rho_spent``."""
    found = [(choice[f"{u}_spent"], u) for u in ("epsilon", "rho") if f"{u}_spent" in choice]
    if len(found) != 1:
        raise ReleaseFormatError("the bound choice must state one epsilon_spent or rho_spent")
    spent, unit = found[0]
    if isinstance(spent, bool) or not isinstance(spent, int | float) or not spent > 0:
        raise ReleaseFormatError("the bound choice does not state a positive budget spent")
    return float(spent), unit


def _read_2d(zf: zipfile.ZipFile, entry: Any, n_keys: int) -> np.ndarray:
    """One level array, of one row per key (:func:`~treedp.release.format._read_npy`)."""
    allowed = {np.dtype(t).newbyteorder("<").str for t in _INT_TYPES}
    if not isinstance(entry, dict) or entry.get("dtype") not in allowed:
        raise ReleaseFormatError("an array does not hold little-endian signed integers")
    shape = entry.get("shape")
    if not isinstance(shape, list) or len(shape) != 2 or shape[0] != n_keys:
        raise ReleaseFormatError("an array does not have one row per key")
    return _read_npy(zf, entry, 2)
