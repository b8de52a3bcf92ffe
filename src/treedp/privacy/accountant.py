"""A privacy budget that is kept: one total per dataset, charged before any noise is drawn.

An :class:`Accountant` holds one dataset's total budget — ``PureDP(ε)``, ``ZCDP(ρ)`` or
``ApproxDP(ε, δ)`` — stated for one neighbour relation. Every spending function takes
``accountant=`` and calls :meth:`Accountant.charge` with the release's
:class:`~treedp.privacy.spend.SpendRecord` once its parameters are validated and before any
randomness is drawn (but a privacy unit's choice of the rows a person keeps, part of reading
the data). A charge past the total raises ``BudgetExceededError``, changing nothing.

**How budgets are compared.** Every ε, ρ and δ is read as the decimal a user wrote (``repr``,
:func:`decimal_value`); sums and comparisons are exact in those decimals (five spends of 0.2 fit
1.0). The true sum of the floats charged never exceeds the total by a relative ``1e-15``.

Composition (all sums exact):

* **Sequential.** Pure ε add; zCDP ρ add; approximate (ε, δ) add (basic composition).
* **Pure against zCDP.** Pure ε is ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4): against a
  ``ZCDP(ρ)`` total the charged quantity is ``Σ ρ_i + Σ ε_j²/2``.
* **Against an (ε, δ) total.** Approximate spends compose to ``(Σ ε_a, Σ δ_a)``; zCDP spends
  to ``ρ = Σ ρ_i``, converted at the δ left, ``δ − Σ δ_a``, by the tight conversion of
  Canonne, Kamath & Steinke 2020 (:func:`~treedp.privacy.measures.zcdp_to_epsilon`, rounded
  up). Pure spends are added to ε, or folded into ρ as ε²/2 before the conversion, whichever
  total is smaller (both are valid).
* **No conversion back.** zCDP and (ε, δ) spends cannot be charged to a ``PureDP`` total,
  nor (ε, δ) spends to a ``ZCDP`` total: :class:`InvalidParameterError`.
* **Neighbour relations.** A spend stated for the total's relation counts as it is. Under a
  ``"replace"`` total an ``"add_remove"`` spend counts as two add/remove steps (group
  privacy): 2ε, 4ρ, ``(2ε, (1 + e^ε)δ)``. A ``"replace"`` spend cannot be charged to an
  ``"add_remove"`` total (its guarantee assumes the size public).
* **Parallel.** :meth:`Accountant.parallel` reserves one budget ``b`` for releases on parts of
  the data that a public rule makes disjoint: each part may spend up to ``b`` (adding or
  removing one record touches one part) and the total is charged ``b`` once, the maximum over
  the parts. Under a ``"replace"`` total the reservation counts as two add/remove steps (a
  replaced record may leave one part and join another).
* **One privacy unit.** A total holds for one relation and one privacy unit (``"record"`` or
  ``"person:<column>"``): ``privacy_unit=``, else the first charge's. A spend of another unit
  is refused (:class:`InvalidParameterError`): for a person, record-level ε costs up to ε per
  row, and a person-level release is not one record added or removed.

The same accountant in a file, shared safely by processes: :class:`treedp.privacy.ledger.Ledger`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from treedp import interrupts as _interrupts
from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.exceptions import BudgetExceededError, InvalidParameterError, InvalidTypeError
from treedp.noise.rational import float_at_least
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP, zcdp_to_epsilon
from treedp.privacy.spend import SpendRecord, described, unit_label, unit_refusal

__all__ = [
    "MAX_TOTAL_DELTA",
    "Accountant",
    "Charge",
    "ParallelGroup",
    "check_accountant",
    "check_total",
    "decimal_value",
    "restate",
]

#: The largest δ a total may have: beyond it (ε, δ)-DP allows publishing records outright.
MAX_TOTAL_DELTA = 1e-3
_NEIGHBOURS = ("add_remove", "replace")


def decimal_value(x: float) -> Fraction:
    """The shortest decimal that rounds to the float ``x`` (``repr(x)``), exactly.

    >>> decimal_value(0.2) * 5 == 1
    True
    """
    return Fraction(repr(float(x)))


def _up(q: Fraction) -> float:
    """The smallest float whose decimal (:func:`decimal_value`) is ``>= q``."""
    f = float(q)
    return f if decimal_value(f) >= q else math.nextafter(f, math.inf)


def _down(q: Fraction) -> float:
    """The largest float whose decimal is ``<= q`` (never below 0)."""
    if q <= 0:
        return 0.0
    f = float(q)
    return f if decimal_value(f) <= q else math.nextafter(f, -math.inf)


def _check_neighbours(neighbours: object) -> None:
    if neighbours not in _NEIGHBOURS:
        raise InvalidParameterError(
            must("neighbours", f"be 'add_remove' or 'replace'. Got {neighbours!r} instead.")
        )


def check_total(total: Any) -> Measure:
    """Validate a total budget: ``PureDP(ε > 0)``, ``ZCDP(ρ > 0)`` or ``ApproxDP(ε > 0, δ)``
    with ``δ`` in ``(0, 1e-3]`` (InvalidTypeError, InvalidParameterError)."""
    if not isinstance(total, PureDP | ZCDP | ApproxDP):
        raise InvalidTypeError(
            "The 'total' budget must be a treedp.privacy PureDP(epsilon), ZCDP(rho) or "
            f"ApproxDP(epsilon, delta). Got {type(total).__name__} {total!r} instead."
        )
    name, value = ("rho", total.rho) if isinstance(total, ZCDP) else ("epsilon", total.epsilon)
    if value <= 0:
        raise InvalidParameterError(f"The total {name!r} must be > 0. Got {value!r} instead.")
    if isinstance(total, ApproxDP) and not 0 < total.delta <= MAX_TOTAL_DELTA:
        raise InvalidParameterError(
            f"The total 'delta' must be in (0, {MAX_TOTAL_DELTA:g}]. Got {total.delta!r} "
            "instead (for delta = 0 use a PureDP total)."
        )
    return total


def restate(measure: Measure, neighbours: str, target: str) -> Measure:
    """``measure``, stated for ``neighbours``, restated for the relation ``target``.

    Same relation: unchanged. ``add_remove`` → ``replace``: a replacement is two add/remove
    steps, so by group privacy ``PureDP(2ε)``, ``ZCDP(4ρ)`` (Bun & Steinke 2016, Prop. 1.9:
    ``k²ρ`` for ``k`` steps), ``ApproxDP(2ε, (1 + e^ε)δ)`` (rounded up). ``replace`` →
    ``add_remove``: refused (a replace-neighbour guarantee says nothing when the size changes).
    """
    if neighbours == target:
        return measure
    if neighbours == "replace":
        raise InvalidParameterError(
            "A spend stated for 'replace' neighbours (the number of records public) cannot be "
            "charged to a budget stated for 'add_remove' neighbours: its guarantee does not "
            "cover adding or removing a record. Open the accountant (or set the ledger's total) "
            "with neighbours='replace'."
        )
    if isinstance(measure, PureDP):
        return PureDP(float_at_least(2 * Fraction(measure.epsilon)))
    if isinstance(measure, ZCDP):
        return ZCDP(float_at_least(4 * Fraction(measure.rho)))
    e_eps = Fraction(math.exp(measure.epsilon)) * (1 + Fraction(1, 10**12))  # exp: a few ulps
    grown = float_at_least(Fraction(measure.delta) * (1 + e_eps))
    return ApproxDP(
        float_at_least(2 * Fraction(measure.epsilon)), min(grown, math.nextafter(1.0, 0.0))
    )


@dataclass(frozen=True)
class Charge:
    """One accepted charge.

    Attributes
    ----------
    seq : int
        Its position in the dataset's history, from 1.
    time : str
        When it was accepted (ISO 8601, UTC).
    record : SpendRecord
        What the release reported it spends.
    cost : PureDP or ZCDP or ApproxDP
        The record's measure restated for the accountant's neighbour relation (what is added).
    group : str or None
        Inside a parallel group, ``"<label>/<part>"``: paid by the group's reservation, it adds
        nothing to the total.
    """

    seq: int
    time: str
    record: SpendRecord
    cost: Measure
    group: str | None = None


@dataclass(frozen=True)
class _Sums:
    """Exact running sums of the charges that count toward the total."""

    pure: Fraction = Fraction(0)  # Σ ε of pure spends
    pure_rho: Fraction = Fraction(0)  # Σ ε²/2 of the same pure spends
    rho: Fraction = Fraction(0)  # Σ ρ of zCDP spends
    eps: Fraction = Fraction(0)  # Σ ε of (ε, δ) spends
    delta: Fraction = Fraction(0)  # Σ δ of (ε, δ) spends

    def plus(self, m: Measure) -> _Sums:
        if isinstance(m, PureDP):
            e = decimal_value(m.epsilon)
            return replace(self, pure=self.pure + e, pure_rho=self.pure_rho + e * e / 2)
        if isinstance(m, ZCDP):
            return replace(self, rho=self.rho + decimal_value(m.rho))
        eps, delta = self.eps + decimal_value(m.epsilon), self.delta + decimal_value(m.delta)
        return replace(self, eps=eps, delta=delta)


def _approx_spent(total: ApproxDP, s: _Sums) -> tuple[Fraction, Fraction] | None:
    """The smallest ε (exact rational of a float bound) with its δ, or None if δ is exceeded."""
    budget_delta = decimal_value(total.delta)
    if s.delta > budget_delta:
        return None
    left = budget_delta - s.delta
    options: list[tuple[Fraction, Fraction]] = []
    for rho, plain in ((s.rho, s.pure), (s.rho + s.pure_rho, Fraction(0))):
        if rho == 0:
            options.append((s.eps + plain, s.delta))
        elif left > 0 and _down(left) > 0:
            conv = decimal_value(zcdp_to_epsilon(_up(rho), _down(left)))
            options.append((s.eps + plain + conv, budget_delta))
    return min(options) if options else None


def _spent_exact(total: Measure, s: _Sums) -> tuple[Fraction, Fraction] | None:
    """What the sums spend in the total's measure: (ε or ρ, δ); None when not statable."""
    if isinstance(total, PureDP):
        return s.pure, Fraction(0)
    if isinstance(total, ZCDP):
        return s.rho + s.pure_rho, Fraction(0)
    return _approx_spent(total, s)


def _parts(m: Measure) -> tuple[Fraction, Fraction]:
    """A measure's (ε or ρ, δ) as the decimals written."""
    if isinstance(m, ZCDP):
        return decimal_value(m.rho), Fraction(0)
    return decimal_value(m.epsilon), decimal_value(m.delta if isinstance(m, ApproxDP) else 0.0)


def _like(total: Measure, first: float, delta: float) -> Measure:
    """A measure of the total's kind: ``first`` is its ε or ρ."""
    if isinstance(total, ApproxDP):
        return ApproxDP(first, delta)
    return PureDP(first) if isinstance(total, PureDP) else ZCDP(first)


def _fits(total: Measure, s: _Sums) -> bool:
    spent = _spent_exact(total, s)
    return spent is not None and all(a <= b for a, b in zip(spent, _parts(total), strict=True))


#: Below this, an amount left is what rounding leaves (less than any release takes): shown as 0.
_CRUMB = 1e-6


def _describe(m: Measure, left: bool = False) -> str:
    """A measure for a message; ``left``: an amount remaining, where a float crumb (such as
    ``4.1e-13`` left by rounding, less than any release takes) or a negative residue is 0."""

    def amount(value: float) -> str:
        return "0" if left and value < _CRUMB else f"{value:.10g}"

    if isinstance(m, PureDP):
        return f"pure epsilon={amount(m.epsilon)}"
    if isinstance(m, ZCDP):
        return f"rho={amount(m.rho)} (zCDP)"
    return f"(epsilon={amount(m.epsilon)}, delta={m.delta:.3g})"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Accountant:
    """The budget of one dataset, kept in memory: charged before noise, refused past the total.

    Parameters
    ----------
    total : PureDP, ZCDP or ApproxDP
        The total budget: ``PureDP(ε)``, ``ZCDP(ρ)``, or ``ApproxDP(ε, δ)`` with δ in
        ``(0, 1e-3]``.
    dataset : str, default="dataset"
        The name of the dataset (shown in messages and kept in the history).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation the total is stated for (see the module docstring for how
        spends under the other relation count).
    privacy_unit : str, optional
        The privacy unit of the total: ``"record"`` or the person-id column (``"pid"`` or
        ``"person:pid"``, as ``PrivacyUnit("pid", ...)`` releases); if None, the first
        accepted charge's. A spend of another unit is refused (:meth:`check`, :meth:`charge`).

    Examples
    --------
    >>> import treedp
    >>> from treedp.privacy import PureDP
    >>> acct = treedp.Accountant(PureDP(1.0), dataset="survey")
    >>> rel = treedp.release_counts([3, 0, 5, 2], epsilon=0.25, accountant=acct,
    ...                             rng=treedp.InsecureSeededSource(7))
    >>> acct.remaining
    PureDP(epsilon=0.75)
    """

    @accepts_aliases
    def __init__(
        self,
        total: Measure,
        *,
        dataset: str = "dataset",
        neighbours: str = "add_remove",
        privacy_unit: str | None = None,
    ) -> None:
        if not isinstance(dataset, str) or not dataset:
            raise InvalidParameterError(must("dataset", "be a non-empty str."))
        _check_neighbours(neighbours)
        self._total = check_total(total)
        self._dataset = dataset
        self._neighbours = neighbours
        self._declared = None if privacy_unit is None else unit_label(privacy_unit)
        self._sums = _Sums()
        self._history: list[Charge] = []
        self._units: dict[str, None] = {}  # the units charged, in order (one, but old ledgers)
        self._lock = threading.RLock()  # one charge at a time within this process

    @property
    def total(self) -> Measure:
        """The total budget."""
        return self._total

    @property
    def dataset(self) -> str:
        """The dataset's name."""
        return self._dataset

    @property
    def neighbours(self) -> str:
        """The neighbour relation the total is stated for."""
        return self._neighbours

    @property
    def privacy_unit(self) -> str | None:
        """The privacy unit of the total (``"record"`` or ``"person:<column>"``): its charges'
        (a ledger's, whoever charged first), else the one it was opened with; None before."""
        self._refresh()
        return self._held_units()[0] if self._held_units() else None

    @property
    def history(self) -> tuple[Charge, ...]:
        """Every accepted charge, oldest first."""
        self._refresh()
        return tuple(self._history)

    @property
    def spent(self) -> Measure:
        """What the accepted charges spend together, in the total's measure (rounded up)."""
        self._refresh()
        spent = _spent_exact(self._total, self._sums)
        assert spent is not None
        return _like(self._total, _up(spent[0]), _up(spent[1]))

    @property
    def remaining(self) -> Measure:
        """What is left, in the total's measure (rounded down).

        For an ``ApproxDP`` total, ``(ε − ε_spent, δ − δ_spent)`` for :attr:`spent`; zCDP spends
        convert non-linearly, so whether a spend fits is :meth:`can_afford`'s to say.
        """
        self._refresh()
        return self._remaining_of(self._sums)

    def _remaining_of(self, sums: _Sums) -> Measure:
        spent = _spent_exact(self._total, sums)
        assert spent is not None  # the sums of accepted charges always fit
        left = [_down(t - s) for t, s in zip(_parts(self._total), spent, strict=True)]
        return _like(self._total, *left)

    def cost(self, record: SpendRecord) -> Measure:
        """What ``record`` adds to this accountant: its measure restated for its relation.

        Raises
        ------
        InvalidTypeError
            If ``record`` is not a :class:`SpendRecord`.
        InvalidParameterError
            If the record's measure or neighbour relation cannot be charged to this total.
        """
        if not isinstance(record, SpendRecord):
            raise InvalidTypeError(
                f"An accountant charges a SpendRecord. Got {type(record).__name__} instead."
            )
        cost = restate(record.measure, record.neighbours, self._neighbours)
        if isinstance(self._total, PureDP) and not isinstance(cost, PureDP):
            raise InvalidParameterError(
                f"The {record.mechanism} spend is {_describe(cost)}, which cannot be charged to "
                "a pure-DP total (no conversion to pure DP exists). Open the accountant with "
                "a ZCDP(rho) or ApproxDP(epsilon, delta) total."
            )
        if isinstance(self._total, ZCDP) and isinstance(cost, ApproxDP):
            raise InvalidParameterError(
                f"The {record.mechanism} spend is {_describe(cost)}, which cannot be charged to "
                "a zCDP total (no conversion from (epsilon, delta) to zCDP exists). Open the "
                "accountant with an ApproxDP(epsilon, delta) total."
            )
        return cost

    def can_afford(self, record: SpendRecord) -> bool:
        """Whether :meth:`charge` would accept ``record`` now."""
        try:
            self.check(record)
        except BudgetExceededError:
            return False
        return True

    def check(self, record: SpendRecord) -> None:
        """Raise now what :meth:`charge` would raise for ``record``, charging nothing: a release
        calls it before reading its data, then :meth:`charge` after (which checks again)."""
        cost = self.cost(record)
        self._refresh()
        self._check_unit(record)
        if not _fits(self._total, self._sums.plus(cost)):
            raise self._refusal(record, cost, self._sums)

    def charge(self, record: SpendRecord) -> Charge:
        """Charge ``record``: call this before drawing any noise for the release it describes.

        Returns
        -------
        Charge
            The accepted charge (also appended to :attr:`history`).

        Raises
        ------
        BudgetExceededError
            If the spend would exceed the total; nothing is charged.
        InvalidParameterError, InvalidTypeError
            If the record cannot be charged to this total (see :meth:`cost`), or its privacy
            unit is not the total's (:attr:`privacy_unit`); nothing is charged.
        """
        cost, record = self.cost(record), described(record)  # with what it released
        _interrupts.check()  # a CLI signal whose exception was lost: stop before the charge
        with self._lock:
            return self._charge(record, cost, None)

    def parallel(self, budget: Measure, *, label: str) -> ParallelGroup:
        """Reserve ``budget`` once for releases on disjoint parts of the data.

        The reservation is charged now (refused like any charge if it does not fit); then
        ``group.part(key)`` is an accountant with total ``budget`` for the part named ``key``,
        under ``add_remove`` neighbours (one record added or removed touches one part). The
        parts must be disjoint by a public rule: a record belongs to at most one part, decided
        from the record alone. Charges made through the parts are kept in :attr:`history`
        (with their ``group``) and add nothing further to the total.
        Reservation and parts are in :attr:`privacy_unit` (``"record"`` if none is fixed yet):
        under a person unit, a *person* belongs to at most one part, decided from the person.

        Parameters
        ----------
        budget : PureDP, ZCDP or ApproxDP
            What each part may spend (the maximum over the parts is what the whole costs).
        label : str
            A name for the partition (for example ``"by state"``), kept in the history.
        """
        if not isinstance(label, str) or not label:
            raise InvalidParameterError("The 'label' of a parallel group must be a non-empty str.")
        check_total(budget)
        unit = self.privacy_unit or "record"
        reservation = SpendRecord(
            mechanism="parallel",
            measure=budget,
            neighbours="add_remove",
            unit=unit,
            parameters={"label": label, "composition": "parallel (disjoint parts)"},
        )
        charge = self.charge(reservation)
        return ParallelGroup(self, label, budget, charge.seq, unit)

    # -- storage hooks (the ledger overrides these) ------------------------------------------

    def _refresh(self) -> None:
        """Bring the in-memory state up to date."""

    def _held_units(self) -> list[str]:
        """The units charged (one, but in old ledgers), else the declared one."""
        charged = list(self._units)
        return charged if charged else ([] if self._declared is None else [self._declared])

    def _check_unit(self, record: SpendRecord) -> None:
        """Refuse a spend of another privacy unit than the total's (InvalidParameterError)."""
        refusal = unit_refusal(self._dataset, self._declared, [*self._units], record.unit,
                               record.mechanism)  # fmt: skip
        if refusal is not None:
            raise refusal

    def check_unit(self, unit: str, mechanism: str = "requested") -> None:
        """Refuse now, reading nothing, a release of privacy unit ``unit`` (``"record"`` or
        ``"person:<column>"``) that :meth:`check` would refuse: called before any data is read."""
        self._refresh()
        with self._lock:
            self._check_unit(SpendRecord(mechanism, PureDP(0.0), "add_remove", unit))

    def _refusal(self, record: SpendRecord, cost: Measure, sums: _Sums) -> BudgetExceededError:
        remaining, after = self._remaining_of(sums), _spent_exact(self._total, sums.plus(cost))
        then = ""  # a converted spend: what the total would have spent with it
        if type(cost) is not type(self._total) and after is not None:
            then = f", {_describe(_like(self._total, *map(_up, after)))} in all with it"
        return BudgetExceededError(
            f"Refused: the {record.mechanism} release would spend {_describe(cost)} "
            f"({record.neighbours} neighbours{then}) on dataset {self._dataset!r}, but only "
            f"{_describe(remaining, left=True)} of the total {_describe(self._total)} "
            f"({self._neighbours} neighbours) remains. Nothing was charged, drawn or released."
        )

    def _charge(self, record: SpendRecord, cost: Measure, group: str | None) -> Charge:
        """Check and record one charge (``group`` set: logged only, paid by a reservation)."""
        self._check_unit(record)
        new = self._sums if group is not None else self._sums.plus(cost)
        if group is None and not _fits(self._total, new):
            raise self._refusal(record, cost, self._sums)
        charge = self._log(record, cost, group)
        self._history.append(charge)
        self._units.setdefault(record.unit)
        self._sums = new
        return charge

    def _log(self, record: SpendRecord, cost: Measure, group: str | None) -> Charge:
        return Charge(len(self._history) + 1, _now(), record, cost, group)

    def _accept(self, charge: Charge) -> None:
        """Add an accepted charge to the in-memory state."""
        self._history.append(charge)
        self._units.setdefault(charge.record.unit)
        if charge.group is None:
            self._sums = self._sums.plus(charge.cost)

    def _reset(self) -> None:
        self._sums = _Sums()
        self._history = []
        self._units = {}

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dataset={self._dataset!r}, total={self._total!r}, "
            f"neighbours={self._neighbours!r}, spent={self.spent!r})"
        )


@dataclass
class ParallelGroup:
    """A reservation for releases on disjoint parts (:meth:`Accountant.parallel`)."""

    parent: Accountant
    label: str
    budget: Measure
    reservation: int
    unit: str = "record"
    _parts: dict[str, _PartAccountant] = field(default_factory=dict, repr=False)

    def part(self, key: str) -> Accountant:
        """The accountant of the part named ``key`` (the same object for the same key)."""
        if not isinstance(key, str) or not key:
            raise InvalidParameterError("The 'key' of a part must be a non-empty str.")
        if key not in self._parts:
            self._parts[key] = _PartAccountant(self, key)
        return self._parts[key]

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts opened so far."""
        return tuple(self._parts)


class _PartAccountant(Accountant):
    """One part of a parallel group: its own budget, each charge logged on the parent."""

    def __init__(self, group: ParallelGroup, key: str) -> None:
        super().__init__(
            group.budget,
            dataset=f"{group.parent.dataset}[{group.label}={key}]",
            neighbours="add_remove",
            privacy_unit=group.unit,
        )
        self._group = group
        self._key = key

    def _log(self, record: SpendRecord, cost: Measure, group: str | None) -> Charge:
        parent = self._group.parent
        with parent._lock:
            return parent._charge(
                record, cost, f"{self._group.label}/{self._key}#{self._group.reservation}"
            )


def check_accountant(
    accountant: Any, unit: str | None = None, mechanism: str = "requested"
) -> Accountant | None:
    """``accountant`` if it is None or an :class:`Accountant`; else an InvalidTypeError. With
    ``unit``, also refuses (reading nothing) a release of that privacy unit the accountant
    would refuse (:meth:`Accountant.check_unit`)."""
    if accountant is not None and not isinstance(accountant, Accountant):
        raise InvalidTypeError(
            must(
                "accountant",
                "be a treedp.Accountant (or a ledger opened with "
                f"treedp.open_ledger). Got {type(accountant).__name__} instead.",
            )
        )
    checked: Accountant | None = accountant
    if checked is not None and unit is not None:
        checked.check_unit(unit, mechanism)
    return checked
