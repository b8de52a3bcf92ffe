"""What a mechanism spent: a frozen record an accountant can compose later.

Every mechanism emits one :class:`SpendRecord` per release (:meth:`Mechanism.spend`). The
record's meaning never changes: a new kind of spend gets a new field default or a new class.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP

__all__ = ["SpendRecord", "describe_unit", "unit_label"]


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
