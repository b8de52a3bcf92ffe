"""What a mechanism spent: a frozen record an accountant can compose later.

Every mechanism emits one :class:`SpendRecord` per release (:meth:`Mechanism.spend`). The
record's meaning never changes: a new kind of spend gets a new field default or a new class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP

__all__ = [
    "PRIVATE_BOUNDS_RECORD",
    "SUBJECT_KEY",
    "SpendRecord",
    "describe_unit",
    "described",
    "releasing",
    "unit_label",
    "unit_refusal",
]

#: The name of the one charge of ``release_cdf(bounds="private", accountant=...)`` (and of
#: ``treedp release --bounds private --ledger ...``) in an accountant's history and in
#: ``treedp budget history``: the whole epsilon, bounds step and release. Ledgers written
#: before it hold ``split_private_bounds`` for the same charge (a label only; they read back
#: unchanged).
PRIVATE_BOUNDS_RECORD = "release[private bounds]"
#: The key under which a charge's :attr:`SpendRecord.parameters` hold what was released: the
#: public description of the query (column, source, by columns, bounds, note) that
#: :func:`releasing` sets while a release runs.
SUBJECT_KEY = "release"
_Subject = Mapping[str, Any] | Callable[[], Mapping[str, Any]]
_SUBJECT: ContextVar[_Subject | None] = ContextVar("treedp_subject", default=None)


def _resolve(subject: _Subject | None) -> dict[str, Any]:
    """A subject as a plain dict (a callable called now; None: empty)."""
    if subject is None:
        return {}
    return dict(subject() if callable(subject) else subject)


@dataclass(frozen=True)
class SpendRecord:
    """One release's privacy spend.

    Attributes
    ----------
    mechanism : str
        The registered mechanism name.
    measure : PureDP or ApproxDP or ZCDP
        The guarantee the release satisfies (the loss actually spent, rounded up).
    neighbours : {"add_remove", "replace"}
        The neighbour relation the measure is stated for.
    unit : str
        The privacy unit: ``"record"`` (one row of the input is one person), or
        ``"person:<column>"`` for a release with a privacy-unit column and contribution bounds
        (:class:`treedp.GroupedRelease`; its ``parameters`` hold the bounds).
    parameters : mapping
        Public parameters of the release (read-only).
    """

    mechanism: str
    measure: Measure
    neighbours: str
    unit: str = "record"
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        must = "The '{}' of a spend record must be {}. Got {!r} instead."
        if not isinstance(self.mechanism, str):
            raise InvalidTypeError(must.format("mechanism", "a str", self.mechanism))
        if not isinstance(self.measure, PureDP | ApproxDP | ZCDP):
            raise InvalidTypeError(
                must.format("measure", "a PureDP, ApproxDP or ZCDP", self.measure)
            )
        if self.neighbours not in ("add_remove", "replace"):
            raise InvalidParameterError(
                must.format("neighbours", "'add_remove' or 'replace'", self.neighbours)
            )
        unit = self.unit
        if not isinstance(unit, str) or not (unit == "record" or unit.startswith("person:")):
            raise InvalidParameterError(
                must.format("unit", "'record' or 'person:<column>'", self.unit)
            )
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))


def unit_label(privacy_unit: str) -> str:
    """The :attr:`SpendRecord.unit` of a privacy unit named as an accountant takes it.

    ``"record"`` (one row is one person) stays ``"record"``; a ``"person:<column>"`` label is
    kept; any other name is a person-id column, ``"person:<name>"``.

    >>> unit_label("pid"), unit_label("record"), unit_label("person:pid")
    ('person:pid', 'record', 'person:pid')
    """
    if not isinstance(privacy_unit, str) or not privacy_unit or privacy_unit == "person:":
        raise InvalidParameterError(
            "The 'privacy_unit' of an accountant must be 'record' or the name of the "
            f"person-id column (a non-empty str). Got {privacy_unit!r} instead."
        )
    if privacy_unit == "record" or privacy_unit.startswith("person:"):
        return privacy_unit
    return f"person:{privacy_unit}"


def describe_unit(unit: str) -> str:
    """A privacy unit label in words, for messages (names a column, never a value)."""
    if unit == "record":
        return "'record' (one row of the data)"
    return f"'{unit}' (one person: all of their rows)"


def unit_refusal(
    dataset: str, declared: str | None, charged: list[str], unit: str, mechanism: str
) -> InvalidParameterError | None:
    """The refusal of a spend of privacy unit ``unit`` by a total opened for ``declared``
    (None: not declared) whose charges so far are in the units ``charged``; None if accepted.

    Messages name units, the dataset and the mechanism only, never a count or value of data.
    """
    keep = (
        "Keep one accountant (or ledger dataset) per privacy unit. Nothing was charged, drawn "
        "or released."
    )
    if len(charged) > 1:
        return InvalidParameterError(
            f"Refused: dataset {dataset!r} was charged in privacy units "
            f"{' and '.join(map(repr, charged))} (before treedp checked units), so its total "
            f"guarantees neither and takes no further charge. {keep}"
        )
    if declared is not None and charged and charged[0] != declared:
        return InvalidParameterError(
            f"Refused: this accountant was opened for the privacy unit "
            f"{describe_unit(declared)}, but the charges of dataset {dataset!r} are in "
            f"{describe_unit(charged[0])} (another process charged it first). Open it with "
            f"that unit or use another dataset. {keep}"
        )
    held = declared if declared is not None else (charged[0] if charged else None)
    if held is None or held == unit:
        return None
    return InvalidParameterError(
        f"Refused: the {mechanism} release protects the privacy unit {describe_unit(unit)}, "
        f"but the budget of dataset {dataset!r} is kept for the privacy unit "
        f"{describe_unit(held)}. A total is a guarantee for one neighbour relation and one "
        "privacy unit: a record-level guarantee says nothing of a person with many rows, and a "
        "person-level release is not one record added or removed. Its unit is the "
        f"privacy_unit it was opened with, else its first charge's. {keep}"
    )


@contextmanager
def releasing(subject: Mapping[str, Any] | Callable[[], Mapping[str, Any]]) -> Iterator[None]:
    """While the block runs, every charge records ``subject`` as what was released.

    :func:`treedp.run.run` sets the query's public description
    (:func:`treedp.subject.subject_of`) and :func:`treedp.subject.noting` a note, so an
    accountant's history and a ledger's rows say which column of which source a charge paid
    for, in the caller's words. Blocks nest: the inner one's keys over the outer's. It is a
    context variable: each thread (a profile's columns) and each task sees its own.

    Parameters
    ----------
    subject : mapping, or a callable returning one
        Public values only (names, paths, public bounds, the user's note), JSON-able. A
        callable is called at each charge (after the data were read: working the subject out
        may touch the input, which nothing may do before the accountant's check).
    """
    outer = _SUBJECT.get()
    token = _SUBJECT.set(lambda: {**_resolve(outer), **_resolve(subject)})
    try:
        yield
    finally:
        _SUBJECT.reset(token)


def described(record: SpendRecord) -> SpendRecord:
    """``record`` with the subject :func:`releasing` set, under :data:`SUBJECT_KEY` in its
    parameters (a subject the record names itself is kept over it, key by key); unchanged
    outside :func:`releasing`."""
    subject = _SUBJECT.get()
    if subject is None:
        return record
    own = record.parameters.get(SUBJECT_KEY) or {}
    merged = {**_resolve(subject), **own}
    return replace(record, parameters={**record.parameters, SUBJECT_KEY: merged})
