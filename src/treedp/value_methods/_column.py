"""What the one-shot mechanisms share: input rules, the charge before noise, the result.

Missing values (NaN, NaT) are refused with one data-free message, or dropped record by record
where the neighbour relation allows it (``add_remove``). Datetimes are handled as integer
ticks of a public unit and released as ``datetime64`` again.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

from treedp._inputs import Kind, as_1d_array
from treedp._validation import must
from treedp.budget import check_epsilon
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import PRIVACY_UNIT, MechanismResult
from treedp.noise import RandomSource, sample_discrete_laplace
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.measures import Measure
from treedp.privacy.spend import SpendRecord
from treedp.timezones import bound_pair

NAN_MESSAGE = (
    "The 'values' argument contains NaN/NaT values; pass nan='drop' to drop them (keeps the "
    "add/remove guarantee)."
)
NAN_MESSAGE_REPLACE = (
    "The 'values' argument contains NaN/NaT values; clean the column first (under replace "
    "neighbours the number of records is public, so they cannot be dropped here)."
)
_CALENDAR = ("Y", "M")
_COARSE = ("Y", "M", "W", "D", "h", "m")
_R = TypeVar("_R", bound=MechanismResult)


def check_neighbours(neighbours: Any, allowed: tuple[str, ...]) -> str:
    """Validate ``neighbours`` against the relations a mechanism is defined for."""
    if not isinstance(neighbours, str):
        raise InvalidTypeError(must("neighbours", f"be a str. Got {type(neighbours).__name__}."))
    if neighbours not in allowed:
        names = " or ".join(repr(a) for a in allowed)
        raise InvalidParameterError(must("neighbours", f"be {names}. Got {neighbours!r}."))
    return neighbours


def check_nan(nan: Any, neighbours: str) -> str:
    """Validate the missing-value policy against the neighbour relation (public parameters)."""
    if nan not in ("error", "drop"):
        raise InvalidParameterError(must("nan", f"be 'error' or 'drop'. Got {nan!r} instead."))
    if nan == "drop" and neighbours == "replace":
        raise InvalidParameterError(
            "nan='drop' is not allowed with neighbours='replace': dropping would make the number "
            "of records private while replace treats it as public. Clean the column first, or "
            "use neighbours='add_remove'."
        )
    return str(nan)


def open_call(
    accountant: Any, epsilon: Any, neighbours: Any, allowed: tuple[str, ...], nan: Any
) -> tuple[float, str, str]:
    """The first checks of every one-shot mechanism: ``(ε, relation, nan policy)``."""
    check_accountant(accountant, unit="record")  # one-shot mechanisms are record-level
    eps = check_epsilon(epsilon)
    relation = check_neighbours(neighbours, allowed)
    return eps, relation, check_nan(nan, relation)


def check_delta(delta: Any) -> float:
    """δ as a float in (0, 1)."""
    if isinstance(delta, bool) or not isinstance(delta, float | int) or not 0 < delta < 1:
        raise InvalidParameterError(must("delta", f"be a float in (0, 1). Got {delta!r} instead."))
    return float(delta)


def read_column(
    values: Any, nan: str, neighbours: str, name: str = "values", kind: Kind | None = None
) -> tuple[np.ndarray, str | None]:
    """The data with missing values refused or dropped per ``nan``, and its datetime unit.

    Numbers come back as float64 (``±inf`` kept: they are orderable); datetimes as int64
    ticks of their own (linear) unit, returned with it. Neither the message nor anything else
    here depends on how many values are missing. ``name``: what a type error calls the data
    (:func:`treedp._inputs.as_1d_array`; ``"column 'age'"`` for a table's column); ``kind``:
    ``"datetime"`` when public datetime bounds say so (an untyped column with no value that is
    not missing is then missing datetimes).
    """
    arr = as_1d_array(values, name, kind)
    message = NAN_MESSAGE if neighbours == "add_remove" else NAN_MESSAGE_REPLACE
    unit: str | None = None
    if arr.dtype.kind == "M":
        unit, multiple = np.datetime_data(arr.dtype)
        if unit in _CALENDAR:
            unit, multiple = "D", 1
            arr = arr.astype("datetime64[D]")
        elif multiple != 1:
            arr = arr.astype(f"datetime64[{unit}]")
        missing = np.isnat(arr)
        arr = arr.view(np.int64)
    else:
        arr = arr.astype(np.float64)
        missing = np.isnan(arr)
    if missing.any():
        if nan != "drop":
            raise DataError(message)
        arr = arr[~missing]
    return arr, unit


def is_datetime_like(x: Any) -> bool:
    """Whether a bound is a datetime (numpy, Python, or an ISO string)."""
    if isinstance(x, np.datetime64 | _dt.date):
        return True
    if isinstance(x, str):
        try:
            float(x)
        except ValueError:
            return True
    return False


def whole_pair(bounds: Any) -> tuple[int, int] | None:
    """Bounds ``(lo, hi)`` of two whole numbers ``lo <= hi`` within the float64 range (ints,
    or finite floats with no fraction) as ints; None for anything else, an int too large for
    a float included (the caller's refusal names its rule)."""
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        return None
    out: list[int] = []
    for b in bounds:
        if isinstance(b, bool) or not isinstance(b, int | np.integer | float | np.floating):
            return None
        try:
            v = float(b)
        except OverflowError:
            return None
        if not (math.isfinite(v) and v.is_integer()):
            return None
        out.append(int(b))
    return (out[0], out[1]) if out[0] <= out[1] else None


def datetime_bounds(bounds: tuple[Any, Any]) -> tuple[int, int, str]:
    """Datetime bounds as int64 ticks of their unit (coarse units become seconds); bounds with
    a time zone as their UTC instants (:mod:`treedp.timezones`)."""
    try:
        lo, hi, _ = bound_pair(bounds[0], bounds[1], None)
    except (InvalidParameterError, InvalidTypeError):
        raise
    except ValueError:
        raise InvalidParameterError(
            f"The 'bounds' parameter could not be read as datetimes: {bounds!r}."
        ) from None
    unit = np.datetime_data(np.array([lo, hi]).dtype)[0]
    if unit in _COARSE:
        unit = "s"
    # astype, not np.datetime64(x, unit): the numpy stubs take only a literal unit.
    lo_t = int(lo.astype(f"datetime64[{unit}]").astype(np.int64))
    hi_t = int(hi.astype(f"datetime64[{unit}]").astype(np.int64))
    if np.isnat(lo) or np.isnat(hi) or not lo_t < hi_t:
        raise InvalidParameterError(
            f"The 'bounds' must be datetimes with lo < hi. Got {bounds!r} instead."
        )
    return lo_t, hi_t, unit


def ticks_in(ticks: np.ndarray, unit: str, target: str) -> np.ndarray:
    """Int64 ticks of ``unit`` as float64 ticks of ``target``, without wrapping.

    To a coarser unit the ticks are floored (exact integer division); to a finer one they are
    multiplied in floating point, which saturates instead of wrapping (values beyond the
    bounds are clamped to them anyway).
    """
    # np.timedelta64(1) has the generic unit; astype gives one tick of a unit held in a str.
    step = np.timedelta64(1).astype(f"timedelta64[{unit}]")
    step = step.astype(f"timedelta64[{target}]").view(np.int64)
    if int(step) >= 1:
        return ticks.astype(np.float64) * float(step)
    one = np.timedelta64(1).astype(f"timedelta64[{target}]")
    back = int(one.astype(f"timedelta64[{unit}]").view(np.int64))
    return (ticks // back).astype(np.float64)


def as_datetimes(ticks: Any, unit: str) -> Any:
    """Float ticks (rounded to the nearest tick) as datetime64 of ``unit``."""
    arr = np.round(np.asarray(ticks, dtype=np.float64)).astype(np.int64)
    out = arr.astype(f"datetime64[{unit}]")
    return out if out.ndim else out[()]


def float_up(x: Fraction) -> float:
    """The smallest float ``>= x``."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def float_down(x: Fraction) -> float:
    """The largest float ``<= x``."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


def describe(source: RandomSource) -> dict[str, object]:
    """The source's description (``seeded`` marks reproducible, unpublishable sources)."""
    return dict(source.describe())


def clears(statistic: int, threshold: int, scale: Fraction, source: RandomSource) -> bool:
    """Whether ``statistic + Z >= threshold``, ``Z ~ DLap(scale)`` drawn exactly."""
    return statistic + int(sample_discrete_laplace(scale, 1, source)[0]) >= threshold


@dataclass(frozen=True)
class Call:
    """One call of a mechanism: what its spend record and its result share."""

    mechanism: str
    relation: str
    epsilon: float
    parameters: dict[str, Any]
    source: RandomSource

    def charge(self, accountant: Accountant | None, guarantee: Measure) -> None:
        """Charge the spend after every check and before any noise is drawn (fail closed)."""
        if accountant is not None:
            accountant.charge(
                SpendRecord(self.mechanism, guarantee, self.relation, PRIVACY_UNIT, self.parameters)
            )

    def result(
        self, cls: type[_R], value: Any, guarantee: Measure, sensitivity: Any, **extra: Any
    ) -> _R:
        """The released value with its contract and the randomness used."""
        return cls(
            value=value,
            guarantee=guarantee,
            neighbours=self.relation,
            mechanism=self.mechanism,
            epsilon=self.epsilon,
            sensitivity=tuple(float(v) for v in sensitivity),
            parameters=self.parameters,
            randomness=describe(self.source),
            **extra,
        )
