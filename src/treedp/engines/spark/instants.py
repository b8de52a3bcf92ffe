"""Date and datetime ``by`` columns of a Spark DataFrame as text, and keys to and from it.

A ``by`` column of a date or datetime type is matched as instants (docs/grouped.md): a
timestamp by its wall-clock time in the session's time zone (what ``show()`` prints) to the
microsecond, a date by its own text, so that no row is cast to another type (a date cast to a
timestamp overflowed under ANSI mode for one date past ±292,000 years, failing the query where
its neighbour without it was released; an independent review, session 27). Private key
selection collects the keys as the same text, never as Python objects (``datetime`` holds no
year past 9999: pyspark's conversion failed for one such row), and reads them back here.
"""

from __future__ import annotations

import contextlib
import datetime
import re
from typing import Any

import numpy as np

from treedp.engines.keys import key_micros_text, key_ticks

__all__ = ["DATED", "column_text", "key_text", "key_value"]

#: Spark's date and datetime type names (``typeName()``): a ``by`` column of one is matched
#: as instants.
DATED = ("date", "timestamp", "timestamp_ntz")
#: The text a datetime ``by`` column is compared as, to the microsecond.
_WALL = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"
_PLAIN_YEAR = re.compile(r"\d{4}-")
_YEAR = re.compile(r"([+-]?)(\d+)(-.*)")


def column_text(col: Any, type_name: str) -> Any:
    """The column as the text its keys are compared with: a date's own (``CAST AS STRING``,
    defined for every date), a timestamp's wall-clock time."""
    from pyspark.sql import functions as F

    if type_name in ("date", "timestamp_ntz"):  # a wall-clock time of its own: no zone, no
        # cast (a cast to timestamp overflowed for a far value in a zone west of UTC, and moved
        # 02:30 in a daylight-saving gap to 03:30; a review, session 27)
        return col.cast("string")
    return F.date_format(col, _WALL)


def key_text(key: Any, type_name: str) -> str | None:
    """A public key as the text of :func:`column_text`: a date column's keys at midnight as
    the date (any other instant matches no date: its text has a time), None when the key
    names no microsecond."""
    if type_name == "date":
        days = key_ticks(key, "D")
        if days is not None:
            return _spark_years(str(np.datetime64(days, "D")))
    text = key_micros_text(key)
    if text is None:
        return None
    if type_name == "timestamp_ntz":  # Spark's own text: a space, the fraction's zeros cut
        day, time = text.split("T")
        whole, fraction = time.split(".")
        fraction = fraction.rstrip("0")
        text = f"{day} {whole}" + (f".{fraction}" if fraction else "")
    return _spark_years(text)


def _spark_years(text: str) -> str:
    """numpy's ISO text with Spark's years: at least four digits, ``+`` past 9999 (numpy
    writes ``10000-01-01``, Spark ``+10000-01-01``: such keys matched nothing; a review)."""
    found = _YEAR.match(text)
    assert found is not None
    sign, year, rest = found.group(1), int(found.group(2)), found.group(3)
    return f"{sign or ('+' if year > 9999 else '')}{year:04d}{rest}"


def key_value(text: Any, type_name: str) -> Any:
    """A selected key read back from :func:`column_text`'s text: a ``datetime.date`` or naive
    ``datetime.datetime`` where Python's types hold it (years 1 to 9999), else a
    ``numpy.datetime64`` of the same instant."""
    if text is None:
        return None
    text = str(text).replace(" ", "T", 1)  # a timestamp_ntz's text has a space
    dated = type_name == "date"
    if _PLAIN_YEAR.match(text) is not None:
        parse = datetime.date.fromisoformat if dated else datetime.datetime.fromisoformat
        with contextlib.suppress(ValueError):  # year 0 (1 BC): numpy's
            return parse(text)
    return np.datetime64(text.lstrip("+"), "D" if dated else "us")
