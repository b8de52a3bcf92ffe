"""The shapes :func:`treedp.build_query`'s arguments take: a mechanism name or options, a plan
or a plan cache, a private-bounds request, explicit edges, a privacy unit (each refused with
the argument named and what is allowed; nothing read)."""

from __future__ import annotations

from typing import Any

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.options import MechanismOptions, PrivacyUnit, PrivateBounds
from treedp.planning import Plan, PlanCache

__all__ = [
    "is_edges",
    "mechanism_options",
    "plan_and_cache",
    "privacy_unit_of",
    "private_bounds_of",
]


def mechanism_options(mechanism: Any) -> MechanismOptions:
    """``mechanism=``: a registered name or :class:`MechanismOptions`."""
    if isinstance(mechanism, MechanismOptions):
        return mechanism
    if not isinstance(mechanism, str):
        raise InvalidTypeError(
            must(
                "mechanism",
                "be a mechanism name or treedp.MechanismOptions. "
                f"Got {type(mechanism).__name__} instead.",
            )
        )
    return MechanismOptions(mechanism)


def plan_and_cache(plan: Any) -> tuple[Plan | None, PlanCache | bool | None]:
    """``plan=``: a Plan to follow, a PlanCache to look plans up in, or False (plan afresh)."""
    if plan is None or isinstance(plan, Plan):
        return plan, None
    if plan is False or isinstance(plan, PlanCache):
        return None, plan
    raise InvalidTypeError(
        must(
            "plan",
            "be a treedp.Plan, a treedp.PlanCache or False (plan "
            f"afresh). Got {type(plan).__name__} instead.",
        )
    )


def private_bounds_of(bounds: Any) -> PrivateBounds | None:
    """The private-bounds request of ``bounds=`` (None for public bounds)."""
    if isinstance(bounds, PrivateBounds):
        return bounds
    if isinstance(bounds, str) or (
        isinstance(bounds, tuple | list) and any(isinstance(b, str) for b in bounds)
    ):
        from treedp.value_methods.bounds_split import private_request

        request = private_request(bounds)
        return None if request is None else PrivateBounds(*request)
    return None


def is_edges(bins: Any) -> bool:
    """Whether ``bins=`` holds explicit edges."""
    return not isinstance(bins, str | int | float | type(None)) and hasattr(bins, "__len__")


def privacy_unit_of(privacy_unit: Any) -> PrivacyUnit | None:
    """``privacy_unit=``: None or a :class:`PrivacyUnit` naming its column."""
    if privacy_unit is None:
        return None
    if isinstance(privacy_unit, PrivacyUnit):
        if privacy_unit.column is None:
            raise InvalidParameterError(
                must(
                    "privacy_unit",
                    "name the person-id column (or hold the ids): "
                    "treedp.PrivacyUnit(column, max_contributions=...).",
                )
            )
        return privacy_unit
    raise InvalidTypeError(
        must(
            "privacy_unit",
            "be a treedp.PrivacyUnit(column, "
            "max_contributions=...): the person-id column and how many rows each person keeps. "
            f"Got {type(privacy_unit).__name__} instead.",
        )
    )
