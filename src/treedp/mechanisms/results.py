"""Results of the one-shot mechanisms (medians, quantiles), their contracts and spend records.

Every result states its guarantee as a value of :mod:`treedp.privacy` (``PureDP`` for the
exponential mechanism, ``ApproxDP`` for propose-test-release and the noisy mode), the neighbour
relation it holds for, and gives a :class:`SpendRecord` an accountant can compose later.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from treedp._frames import pandas_frame, polars_frame
from treedp.privacy import ApproxDP, Measure
from treedp.privacy.spend import SpendRecord

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = [
    "PRIVACY_UNIT",
    "SEEDED_MARKER",
    "Contract",
    "MechanismResult",
    "MedianResult",
    "QuantileResult",
    "SpendRecord",
]

#: Marks results made with a seeded, reproducible source (the CLI prints the same marker).
SEEDED_MARKER = "[SEEDED: not for publication]"
#: What one neighbour step changes: one record (one row of the column).
PRIVACY_UNIT = "record"
#: A ``repr`` shows every released value up to this many, else the first and last two.
SHORT_VALUES = 6


@dataclass(frozen=True)
class Contract:
    """A mechanism's privacy contract as data (checked by the tests against the results).

    Attributes
    ----------
    name : str
        The mechanism's name (a result's ``mechanism`` starts with it).
    measure : type
        The guarantee's type: :class:`~treedp.privacy.PureDP` or :class:`~treedp.privacy.ApproxDP`.
    neighbours : tuple of str
        The neighbour relations it is defined for.
    privacy_unit : str
        What one neighbour step changes.
    sensitivity : str
        The sensitivity and where it comes from (the docstring has the proof).
    max_records : int or None
        The guarantee's domain: datasets of at most this many records (a public bound from
        the mechanism's exact integer arithmetic; a larger input is refused before anything
        is charged or drawn, as input outside the domain), or None for any size.
    """

    name: str
    measure: type
    neighbours: tuple[str, ...]
    sensitivity: str
    privacy_unit: str = PRIVACY_UNIT
    max_records: int | None = None


@dataclass(frozen=True, repr=False, kw_only=True)
class MechanismResult:
    """A released value, or a refusal (``value is None``), with its guarantee.

    Attributes
    ----------
    value : float, numpy.datetime64, ndarray or None
        The released value (datetimes when the data and bounds were datetimes), or None (⊥).
    guarantee : PureDP or ApproxDP
        The guarantee, with the budget actually spent (ε at most the request; δ the realised
        value, at most the request).
    neighbours : {"replace", "add_remove"}
    mechanism : str
    epsilon : float
        The budget requested.
    sensitivity : tuple of float
        The sensitivity of each noised quantity under ``neighbours``.
    parameters : mapping
        The public parameters of the call.
    randomness : mapping
        Where the noise came from (``source.describe()``); ``randomness["seeded"]`` is True
        for :class:`treedp.InsecureSeededSource`, whose outputs are not for publication (the
        ``repr`` then ends with ``[SEEDED: not for publication]``).
    """

    value: Any
    guarantee: Measure
    neighbours: str
    mechanism: str
    epsilon: float
    sensitivity: tuple[float, ...]
    parameters: Mapping[str, object] = field(default_factory=dict)
    randomness: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("parameters", "randomness"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def refused(self) -> bool:
        """True when the mechanism output ⊥."""
        return self.value is None

    @property
    def seeded(self) -> bool:
        """True when made with a seeded, reproducible (not publishable) source."""
        return bool(self.randomness.get("seeded", False))

    @property
    def epsilon_spent(self) -> float:
        """The ε actually spent (at most :attr:`epsilon`)."""
        return self.guarantee.epsilon  # type: ignore[union-attr]

    @property
    def delta(self) -> float:
        """The realised δ (0 for pure DP)."""
        return self.guarantee.delta if isinstance(self.guarantee, ApproxDP) else 0.0

    @property
    def privacy_unit(self) -> str:
        """What one neighbour step changes."""
        return PRIVACY_UNIT

    @property
    def spend(self) -> SpendRecord:
        """The record of what this call spent."""
        return SpendRecord(
            self.mechanism, self.guarantee, self.neighbours, PRIVACY_UNIT, self.parameters
        )

    #: Labels of the released values, one per row of :meth:`to_arrays` (empty: no label).
    _labels: ClassVar[tuple[str, ...]] = ()

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The released values as 1-d arrays, one row per value: ``{"value": ...}`` (with the
        labels of a pair, such as a :class:`BoundsResult`'s ``"bound"``, first); no rows when
        the mechanism refused (⊥)."""
        values = np.empty(0) if self.value is None else np.atleast_1d(np.asarray(self.value))
        if self._labels and len(values) == len(self._labels):
            return {"bound": np.array(self._labels), "value": values}
        return {"value": values}

    def to_frame(self) -> pd.DataFrame:
        """:meth:`to_arrays` as a :class:`pandas.DataFrame` (needs ``treedp[pandas]``).

        Raises
        ------
        MissingDependencyError
            If pandas is not installed.
        """
        return pandas_frame(self.to_arrays(), f"{type(self).__name__}.to_frame")

    def to_polars(self) -> pl.DataFrame:
        """:meth:`to_arrays` as a :class:`polars.DataFrame` (needs ``treedp[polars]``).

        Raises
        ------
        MissingDependencyError
            If polars is not installed.
        """
        return polars_frame(self.to_arrays(), f"{type(self).__name__}.to_polars")

    def _released_text(self) -> str:
        """The released value(s), shortened (:data:`SHORT_VALUES`)."""
        if self.value is None:
            return "value=None (refused)"
        if isinstance(self.value, tuple):
            return "value=(" + ", ".join(_number(v) for v in self.value) + ")"
        return f"value={_values(np.asarray(self.value))}"

    def _summary(self) -> str:
        return (
            f"guarantee={self.guarantee!r}, neighbours={self.neighbours!r}, "
            f"mechanism={self.mechanism!r}"
        )

    def __repr__(self) -> str:
        """One short line: the value(s), the guarantee, the neighbours and the mechanism; the
        rest (``parameters``, ``randomness``, ``sensitivity``, …) is in the attributes."""
        marker = f" {SEEDED_MARKER}" if self.seeded else ""
        released, summary = self._released_text(), self._summary()
        text = f"{type(self).__name__}({released}, {summary})"
        if len(text) > 100:  # a few short lines, not one long one
            text = f"{type(self).__name__}({released},\n    {summary})"
        if "…" in released:
            text += "\n    all values: .value, .to_frame(), .to_polars()"
        if marker and len(text.rsplit("\n", 1)[-1] + marker) > 100:
            marker = "\n   " + marker
        return text + marker

    def _repr_html_(self) -> str:
        """Notebook display: the released values (shortened) and the guarantee, as a table."""
        rows = [
            ("released", self._released_text().removeprefix("value=")),
            ("guarantee", repr(self.guarantee)),
            ("neighbours", self.neighbours),
            ("mechanism", self.mechanism),
        ]
        if self.seeded:
            rows.append(("randomness", SEEDED_MARKER))
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in rows
        )
        return (
            f"<div><strong>{html.escape(type(self).__name__)}</strong><table>{body}</table>"
            "<small>All values: <code>.value</code>, <code>.to_frame()</code>.</small></div>"
        )


def _number(v: object) -> str:
    """One released value, short: 6 significant digits for a float, else its ``str``."""
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    return str(v)


def _values(values: np.ndarray) -> str:
    """Released values, short: all up to :data:`SHORT_VALUES`, else the first and last two."""
    if values.ndim == 0:
        return _number(values[()])
    flat = values.ravel()
    if flat.size <= SHORT_VALUES:
        return "[" + ", ".join(_number(v) for v in flat) + "]"
    head = ", ".join(_number(v) for v in flat[:2])
    tail = ", ".join(_number(v) for v in flat[-2:])
    return f"[{head}, …, {tail}]"


@dataclass(frozen=True, repr=False, kw_only=True)
class MedianResult(MechanismResult):
    """The result of :func:`~treedp.stable_median` or :func:`~treedp.subsample_and_aggregate`.

    ``guarantee`` is ``ApproxDP(ε, δ)``; ``delta`` is the realised δ (at most the request).
    """


@dataclass(frozen=True, repr=False, kw_only=True)
class QuantileResult(MechanismResult):
    """The result of :func:`~treedp.quantile_exponential`: one value per level.

    Attributes
    ----------
    q : ndarray
        The levels.
    grid_points : int
        The size of the public output grid.
    records : float or None
        A noisy count of the records that the mechanism released with its values (the
        recursive method's root side counts summed, part of its guarantee: post-processing
        only), or None (one level, or a method that releases none).

    ``value`` (alias ``values``) holds one released quantile per level; ``guarantee`` is
    ``PureDP(ε_spent)``, ``ε_spent = sum over q of 2 Δ · rate <= epsilon`` (the rate rounded
    down to a dyadic rational); ``sensitivity`` holds ``Δ`` of the score for each level.

    As an array the result is its released values: ``np.asarray(result)`` is a float64
    array (``datetime64`` when the data were datetimes), 0-d for a scalar level and 1-d for a
    list of levels, as ``value`` is; ``len``, iteration, indexing and unpacking
    (``lo, mid, hi = result``) follow that array (a 0-d result has no ``len`` and cannot be
    iterated, as a 0-d array). The result stays frozen: the array is a copy, or with
    ``copy=False`` a read-only view. A result is always true (``bool``), whatever its values.
    A scalar numeric level also converts with ``float(result)`` and formats with
    ``f"{result:.2f}"``; arithmetic and comparisons go through ``result.value`` or
    ``np.asarray(result)``.
    """

    q: np.ndarray
    grid_points: int
    records: float | None = None

    @property
    def values(self) -> np.ndarray:
        """The released quantiles, one per level."""
        return np.asarray(self.value)

    def _released(self) -> np.ndarray:
        out = np.asarray(self.value)
        if out.dtype.kind == "O" and any(isinstance(v, dt.datetime) for v in out.ravel()):
            return out  # tz-aware datetimes (pandas Timestamps in the data's zone)
        if out.dtype.kind not in "fM":  # Python numbers, ints or objects: as numbers
            out = out.astype(np.float64)
        return out

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The released values as an ndarray (numpy 2 signature; see the class docstring)."""
        out = self._released()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            if copy is False:
                raise ValueError(
                    "A copy is needed to convert the quantiles to the requested dtype."
                )
            return out.astype(dtype)
        if copy is False:
            view = out.view()
            view.flags.writeable = False  # the result is frozen: no writable alias of it
            return view
        return out.copy()

    def __len__(self) -> int:
        return len(self._released())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._released().copy())

    def __getitem__(self, index: Any) -> Any:
        return self._released().copy()[index]

    def __bool__(self) -> bool:
        return True

    def __float__(self) -> float:
        """The one released value of a scalar level (``float(result)``); a result of several
        levels or of datetimes has no single float (``TypeError``, as for an array)."""
        out = self._released()
        if out.ndim or out.dtype.kind != "f":
            raise TypeError(
                "Only a quantile result of one numeric level converts to a float; index it or "
                "use np.asarray(result)."
            )
        return float(out)

    def __format__(self, spec: str) -> str:
        """Formats like its value: ``f"{result:.2f}"`` for a scalar numeric level."""
        if not spec:
            return str(self)
        return format(float(self), spec)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The levels and released quantiles as 1-d arrays ``{"q": ..., "value": ...}``, one
        row per level (the columns of :meth:`to_frame` and :meth:`to_polars`)."""
        return {"q": np.atleast_1d(np.asarray(self.q)), "value": np.atleast_1d(self._released())}

    def _released_text(self) -> str:
        q = np.asarray(self.q, dtype=np.float64)
        if q.size <= SHORT_VALUES:
            return f"q={_values(q)}, value={_values(self._released())}"
        return (
            f"{q.size} quantiles, q={_number(q.ravel()[0])}…{_number(q.ravel()[-1])}: "
            f"{_values(self._released())}"
        )
