"""What a release is of, in public words: the subject an accountant records with a charge.

A charge's record says what was spent (mechanism, measure, neighbours, privacy unit, the
mechanism's parameters); :func:`subject_of` says what it was spent on — the column, the source
as the user gave it (the engine table's ``describe``: paths, a database query's text, else the
input's type), the ``by`` columns, the public bounds (or which side was found privately) and
the quantile levels — and :func:`treedp.run.run` has every charge of the run record it
(:func:`treedp.privacy.spend.releasing`, under ``parameters["release"]``, worked out at the
charge: after the data were read), with the caller's note (:func:`noting`, around any calls),
so a ledger is an audit trail: which release, of what, from where, why, when, at what cost.

Only public inputs are described: never a value, count or shape of the data, nor anything a
release finds (private bounds, selected keys, an ``"auto"`` contribution bound are outputs of the
release, kept with it, not in its charge, which is committed before they are drawn).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.engines.dispatch import pick_engine
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.privacy.spend import releasing
from treedp.timezones import from_ticks

if TYPE_CHECKING:
    from treedp.partition import Bins
    from treedp.query import Query

__all__ = [
    "MAX_NOTE",
    "bounds_of",
    "check_note",
    "describe_source",
    "noting",
    "stream_subject",
    "subject_of",
]

#: The longest ``note`` a release takes (characters).
MAX_NOTE = 1000


def check_note(note: Any) -> str:
    """``note`` if it is a non-empty str of at most :data:`MAX_NOTE` characters."""
    if not isinstance(note, str):
        raise InvalidTypeError(
            "The 'note' parameter must be a str (what the release is, recorded with its "
            f"charge). Got {type(note).__name__} instead."
        )
    if not note.strip() or len(note) > MAX_NOTE:
        raise InvalidParameterError(
            f"The 'note' parameter must be non-empty, of at most {MAX_NOTE} characters."
        )
    return note


@contextmanager
def noting(note: str) -> Iterator[None]:
    """Record ``note`` with every charge made in the block, whatever spends it.

    Every charge records it beside what the release describes of itself (the column, the
    input as given, the public bounds): the front doors' releases, profiles, streams and the
    building-block mechanisms called directly (:func:`treedp.quantile_exponential`,
    :func:`treedp.stable_median`, ...) alike; ``treedp ... --note TEXT`` on the command line.
    Checked (a non-empty str of at most :data:`MAX_NOTE` characters) before the block runs;
    an inner block's note is kept over an outer one's.

    Examples
    --------
    >>> import treedp
    >>> acct = treedp.Accountant(treedp.PureDP(1.0))
    >>> with treedp.noting("Table 3, 2026 Q3"):
    ...     rel = treedp.release_cdf([23, 35, 41], bounds=(0, 100), bins=8, epsilon=0.5,
    ...                              accountant=acct, rng=treedp.InsecureSeededSource(7))
    >>> acct.history[0].record.parameters["release"]
    {'note': 'Table 3, 2026 Q3', 'source': 'list', 'bounds': [0.0, 100.0]}
    """
    with releasing({"note": check_note(note)}):
        yield


def describe_source(data: Any) -> str:
    """``data`` in public words: the engine that reads it describes it (its row of the engine
    table), else its type."""
    return pick_engine(data).source(data)


def subject_of(query: Query) -> dict[str, Any]:
    """The public description of what ``query`` releases, for the record of its charges."""
    subject: dict[str, Any] = {}
    if query.column is not None:
        subject["column"] = query.column
    subject["source"] = "counts" if query.counts else describe_source(query.data)
    if query.grouping is not None and query.grouping.by:
        subject["by"] = list(query.grouping.by)
    bounds = bounds_of(query)
    if bounds is not None:
        subject["bounds"] = bounds
    if query.quantiles is not None:
        subject["levels"] = [float(q) for q in np.ravel(query.quantiles.qa)]
    return subject


def stream_subject(path: Any, bins: Bins | None) -> dict[str, Any]:
    """What a stream releases, for its one charge: its state file (or none) and its public
    bounds (:func:`treedp.continual`; its batches come later, step by step)."""
    subject: dict[str, Any] = {"source": "stream" if path is None else f"stream: {path}"}
    if bins is not None:
        subject["bounds"] = _ends(bins)
    return subject


def bounds_of(query: Query) -> list[Any] | None:
    """The query's public bounds: the bins' ends, or ``"private"`` for a side found privately
    (public parameters only: nothing of the input is touched)."""
    if query.private_bounds is not None:
        return [_plain(side) for side in query.private_bounds.request]
    if query.bins is not None:
        return _ends(query.bins)
    request = None if query.quantiles is None else query.quantiles.request
    if request is not None:
        return [_plain(side) for side in request]
    found = None if query.quantiles is None else query.quantiles.bounds
    return None if found is None else [_plain(side) for side in found]


def _ends(bins: Bins) -> list[Any]:
    """The bins' lowest and highest edge (the last integer, for integer bins) in the user's
    space: numbers, or datetimes as ISO text (in the bins' zone when they have one)."""
    ends = bins.edges[[0, -1]]
    if bins.integers:  # [lo, hi + 1): the last integer is hi
        ends = ends - np.array([0, 1], dtype=ends.dtype)
    if bins.datetime_unit is not None:
        if bins.timezone is not None:
            return [v.isoformat() for v in from_ticks(ends, bins.datetime_unit, bins.timezone)]
        ends = ends.astype(f"datetime64[{bins.datetime_unit}]")
    elif bins.integers:
        return [int(v) for v in ends]
    return [_plain(v) for v in ends]


def _plain(value: Any) -> Any:
    """A bound as JSON takes it: a number, ``"private"``, or a datetime's ISO text."""
    if isinstance(value, np.datetime64):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, int | float | str) or value is None:
        return value
    return str(value)
