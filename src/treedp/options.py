"""The small public values a release call takes in one argument each.

:class:`MechanismOptions` (``mechanism=``): a mechanism with its tree shape, level budgets and
estimator. :class:`PrivateBounds` (``bounds=``): bounds found privately, with the share of the
budget they spend and an optional public side. :class:`PrivacyUnit` (``privacy_unit=``): the
person-id column and the per-person contribution bounds. Each is frozen and checks the types
of its fields at construction; the rules that relate them to the rest of a call are checked
once, when :func:`treedp.query.build_query` builds the query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.privacy.auto_bound import AutoBound

__all__ = ["DEFAULT_BOUNDS_SHARE", "MechanismOptions", "PrivacyUnit", "PrivateBounds"]

#: The share of epsilon private bounds spend when no ``share`` is given.
DEFAULT_BOUNDS_SHARE = 0.1


@dataclass(frozen=True)
class MechanismOptions:
    """A mechanism and the options that fix it, for ``release_cdf(mechanism=...)``.

    Parameters
    ----------
    name : str, default="auto"
        ``"auto"`` (the planner chooses) or a registered mechanism name (``"tree"``,
        ``"strategy"``, ``"strategy_range"``, ``"strategy_padded"``, ``"strategy_tree"``,
        ``"sqrt_factorization"``, ``"histogram"``, ``"threshold"``, ``"all_intervals"``,
        ``"dawa"`` or a plug-in).
    branching : int or sequence of int, optional
        Tree fan-out: a common ``k`` or one ``k_l`` per level (trees only; implies
        ``"tree"`` with ``"auto"``). Without ``level_budgets`` the levels share the budget
        equally (not tuned: the planner's budgets for a shape of its own choice are
        :attr:`treedp.Plan.level_budgets`; compare shapes at their tuned budgets through
        :func:`treedp.plan`'s ``alternatives``).
    level_budgets : sequence of float, optional
        Budget per level, root first (trees only; :attr:`treedp.Plan.level_budgets` passes
        back as is).
    estimator : {"efficient", "direct"}, optional
        How counts are estimated from the noisy blocks (default: the mechanism's best).

    Examples
    --------
    >>> import treedp
    >>> treedp.MechanismOptions("tree", branching=4).name
    'tree'
    """

    name: str = "auto"
    branching: int | Sequence[int] | None = None
    level_budgets: Sequence[float] | None = None
    estimator: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise InvalidTypeError(
                must(
                    "mechanism",
                    "be a mechanism name or treedp.MechanismOptions. "
                    f"Got {type(self.name).__name__} instead.",
                )
            )
        for field in ("branching", "level_budgets"):
            value = getattr(self, field)
            if isinstance(value, list):  # frozen: lists become tuples
                object.__setattr__(self, field, tuple(value))


@dataclass(frozen=True)
class PrivateBounds:
    """Bounds found privately, for ``bounds=`` (``"private"`` is ``PrivateBounds()``).

    Parameters
    ----------
    lower, upper : number, optional
        A public side (for example ``lower=0`` for incomes): only the other side is searched,
        with the whole share. Both None: both sides are searched.
    share : float, default=0.1
        The share of epsilon spent on the bounds, in ``(0, 1)``; the release spends the rest.
    datetimes : bool, optional
        Whether the column holds datetimes. Default: from its type (a numpy / pandas / polars
        dtype, an Arrow, Parquet, Spark or database schema); a CSV file, a list or an array of
        Python objects has none, so give ``datetimes=True`` for its datetime columns (and
        ``timezone=`` when they carry zones or offsets). Nothing is inferred from the values:
        a value of another type is refused, outside the datasets the guarantee covers.
        Datetime bounds are searched on a public grid of days
        (:mod:`treedp.value_methods.datetime_bounds`); both sides are searched.
    timezone : str, optional
        For datetimes whose type names no zone but which carry UTC offsets (CSV cells ending
        in ``Z`` or ``+01:00``, fixed-offset dtypes, Python datetimes with offsets): the zone
        of the bounds and answers (``"UTC"``, ``"Europe/Paris"``). CSV cells with offsets
        need it; other offset data default to UTC. A column whose type names its zone keeps
        it (a different ``timezone`` is refused).
    max_bins : int, optional
        With ``bins="integers"``: the most bins of the release (default
        :data:`~treedp.bin_edges.RELEASE_INTEGER_BINS`, 2**19 = 524,288). A found range
        holding more integers is released on equal-width bins of whole integers (``w`` each,
        the fewest at most ``max_bins`` covering it; still read as integers, each bin's count
        spread evenly over its integers) rather than one bin per integer: post-processing of
        the found bounds, which are never cut. One bin per integer keeps blocks of tied values
        (zeros, round amounts) exact; over a wide range of spread values it costs accuracy
        (more levels of noise) and the time of its intervals, where ``max_bins=4096`` is
        about twice as accurate and 50 times faster (docs/private_bounds.md).

    Examples
    --------
    >>> import treedp
    >>> treedp.PrivateBounds(lower=0, share=0.2).request
    (0, 'private')
    """

    lower: Any = None
    upper: Any = None
    share: float = DEFAULT_BOUNDS_SHARE
    datetimes: bool | None = None
    timezone: str | None = None
    max_bins: int | None = None

    def __post_init__(self) -> None:
        share = self.share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
            raise InvalidParameterError(
                f"The 'share' of treedp.PrivateBounds must be a float in (0, 1). Got {share!r}."
            )
        if self.lower is not None and self.upper is not None:
            raise InvalidTypeError(
                "A treedp.PrivateBounds with both sides public is public bounds: give "
                "bounds=(lo, hi) instead."
            )
        if self.datetimes is not None and not isinstance(self.datetimes, bool):
            raise InvalidTypeError(
                "The 'datetimes' of treedp.PrivateBounds must be True, False or None. Got "
                f"{type(self.datetimes).__name__} instead."
            )
        if self.timezone is not None:
            from treedp.timezones import zone_name

            if self.datetimes is False:
                raise InvalidParameterError(
                    "A treedp.PrivateBounds with datetimes=False takes no 'timezone'."
                )
            object.__setattr__(self, "timezone", zone_name(self.timezone, "timezone"))
        cap = self.max_bins
        if cap is not None and (
            isinstance(cap, bool) or not isinstance(cap, int | np.integer) or cap < 1
        ):
            raise InvalidParameterError(
                "The 'max_bins' of treedp.PrivateBounds must be a positive int or None. Got "
                f"{cap!r}."
            )
        if cap is not None:
            object.__setattr__(self, "max_bins", int(cap))
        dates = self.datetimes or self.timezone is not None
        if dates and (self.lower is not None or self.upper is not None):
            raise InvalidParameterError(
                "Private datetime bounds search both sides: a public side ('lower' or "
                "'upper') is for numbers; give public bounds=(lo, hi) for both."
            )

    @property
    def request(self) -> tuple[Any, Any]:
        """The request as the bounds mechanism reads it: ``"private"`` on a searched side."""
        return (
            "private" if self.lower is None else self.lower,
            "private" if self.upper is None else self.upper,
        )


@dataclass(frozen=True)
class PrivacyUnit:
    """The person a guarantee protects, and how much of each person is kept.

    Parameters
    ----------
    column : str or array-like
        The person-id column of a table (a name), or the ids themselves (an array with one id
        per value).
    max_contributions : int, "auto" or AutoBound, optional
        Rows kept per person (a uniform random sample of a person's rows beyond it is
        dropped; :mod:`treedp.privacy.contribution`); ``"auto"`` chooses it privately
        (:mod:`treedp.privacy.auto_bound`).
    max_groups, max_contributions_per_group : int, optional
        Group-by releases only: groups a person contributes to, rows kept per group. Give
        ``max_contributions``, or both of these; ``max_contributions_per_group="auto"``
        (with an int ``max_groups``) chooses the rows kept per group privately.

    Examples
    --------
    >>> import treedp
    >>> treedp.PrivacyUnit("person_id", max_contributions=3).max_contributions
    3
    """

    column: Any
    max_contributions: int | str | AutoBound | None = None
    max_groups: int | None = None
    max_contributions_per_group: int | str | AutoBound | None = None
