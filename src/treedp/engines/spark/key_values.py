"""Public keys of a Spark ``by`` column as values of the column's own type.

The keys are joined with the rows as a small DataFrame whose schema is the ``by`` columns';
a key is converted in Python to the value of that type it equals, or to NULL (which joins
nothing) when no value of the type equals it, so that a key matches what it matches in memory:
an int key on a ``double`` or ``decimal`` column (it was compared as text there, ``'1'``
against ``'1.0'``, and matched nothing; a review, session 27), a float with a fraction or past
the range on an integer column, a decimal key past the column's scale or precision.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from typing import Any

import numpy as np

__all__ = ["typed_key"]

#: Digits enough for any key exactly: a float's decimal expansion has at most 1,100.
_EXACT = 2_000
#: Spark integer type names and their bit widths.
_INTEGERS = {"byte": 8, "short": 16, "integer": 32, "long": 64}


def typed_key(key: Any, data_type: Any) -> Any:
    """``key`` as a value of the Spark type ``data_type`` equal to it, or None (no value of
    the type equals it); a type not listed here takes the key as it is."""
    name = data_type.typeName()
    number = isinstance(key, int | float)
    if name == "boolean":
        return bool(key) if isinstance(key, int | float) and key in (0, 1) else None
    if name in ("string", "varchar", "char"):
        return key if isinstance(key, str) else None
    if not number:
        return key if name not in _INTEGERS and name not in ("double", "float", "decimal") else None
    if name in ("double", "float"):
        try:
            value = float(key)
        except OverflowError:
            return None
        if name == "float" and math.isfinite(value):
            with np.errstate(all="ignore"):  # past float32's range: inf, no warning
                narrow = float(np.float32(value))
            if narrow != value:
                return None  # Spark would round it to a float32 another value equals
        return value
    if name in _INTEGERS:
        if isinstance(key, float) and not (math.isfinite(key) and key.is_integer()):
            return None
        whole, bits = int(key), _INTEGERS[name]
        return whole if -(2 ** (bits - 1)) <= whole < 2 ** (bits - 1) else None
    if name == "decimal":
        return _decimal_key(key, data_type.precision, data_type.scale)
    return key


def _decimal_key(key: Any, precision: int, scale: int) -> Decimal | None:
    if isinstance(key, float) and not math.isfinite(key):
        return None
    exact = Decimal(key)  # an int or a float, exactly
    units = exact.scaleb(scale, context=Context(prec=_EXACT))  # the key in the scale's units
    if units != units.to_integral_value() or abs(units) >= 10**precision:
        return None
    return exact.quantize(Decimal(1).scaleb(-scale), context=Context(prec=precision + 2))
