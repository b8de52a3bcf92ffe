"""Per-person contribution bounds: the privacy unit, its bounds, their sensitivity, and sampling.

Without a privacy unit, one row is one person (``max_contributions = 1``). With a
``privacy_unit`` column (a person id), each person may own many rows; the bounds

* ``max_contributions`` ``m``: rows kept per person overall,
* ``max_groups`` ``g``: groups (keys of a group-by) a person may contribute to,
* ``max_contributions_per_group`` ``c``: rows kept per person within one group,

are enforced by :func:`bound_contributions`, which drops the rows beyond them by uniform
random sampling per person. It needs only the person and group code of each row and a random
source, so an engine (a DataFrame library, Spark, Dask) can run the same rule before counting.

Sensitivity
-----------
Unset bounds take the values implied by the others: ``c = m`` and ``g = m`` when not given,
``m = g·c`` when not given, and then ``c ← min(c, m)``, ``g ← min(g, m)``. After bounding, one
person owns ``r_j <= c`` rows in each of at most ``g`` groups ``j``, with ``Σ_j r_j <= m``.

In a released vector that counts each row in exactly one entry per group (a tree level, the
histogram), adding the person changes group ``j``'s part by ``r_j`` in L1 and at most ``r_j``
in L2 (all rows in one entry). Over all groups:

* ``add_remove`` (add or remove one person with all their rows):
  ``L1 = max Σ_j r_j = min(m, g·c)`` and ``L2² = max Σ_j r_j² = q·c² + s²`` with
  ``q = min(g, ⌊m/c⌋)`` full groups and ``s = m − q·c`` rows left for one more group when
  ``q < g`` (else ``s = 0``): squares are maximised by filling groups to ``c`` first.
* ``replace`` (one person's rows replaced by another person's bounded rows, the number of
  persons fixed but every group's size private): a removal and an addition, so
  ``L1 = 2·min(m, g·c)`` and ``L2 = √2 · L2(add_remove)``.

Every bound is attained (a person with ``m`` rows spread ``c`` per group over ``g`` groups, all
in one bin), so the figures are exact, not loose; ``tests/engines/test_grouped.py`` checks them
by brute force.

Why sampling keeps this: each person's kept rows depend only on their own rows and fresh
randomness; coupling the other persons' randomness, neighbouring datasets give bounded datasets
that differ by one person's kept rows, which obey the bounds. The output is a mixture over the
coupling of outputs each within the guarantee, so it is within the guarantee too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._codes import factorize
from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.noise.rng import words

__all__ = ["ContributionBounds", "bound_contributions", "check_bound", "scaled_budget"]


def check_bound(value: Any, name: str) -> int | None:
    """A contribution bound: None or a positive int (bools and floats refused)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidTypeError(
            must(name, f"be a positive int. Got {type(value).__name__} {value!r} instead.")
        )
    if value < 1:
        raise InvalidParameterError(must(name, f"be a positive int (>= 1). Got {value!r} instead."))
    return int(value)


@dataclass(frozen=True)
class ContributionBounds:
    """The privacy unit and the per-person bounds, with the sensitivity they imply.

    Attributes
    ----------
    unit : str or None
        The name of the person-id column; None when one row is one person.
    max_contributions : int
        ``m``: rows kept per person overall (1 without a unit).
    max_groups : int
        ``g``: groups a person contributes to (``<= m``).
    max_contributions_per_group : int
        ``c``: rows kept per person and group (``<= m``).

    Build with :meth:`from_parameters`, which fills unset bounds as the module docstring says.
    """

    unit: str | None
    max_contributions: int
    max_groups: int
    max_contributions_per_group: int

    def kept(self) -> str:
        """What a per-person release's answers and intervals describe, in words: the rows
        kept, not every row of the input (a person's rows past the bounds are dropped at
        random before counting; the truncation's bias is in no interval)."""
        if self.max_groups * self.max_contributions_per_group > self.max_contributions:
            per = f"at most {self.max_contributions} per person"
        else:
            per = (
                f"at most {self.max_contributions_per_group} per person and key, in at most "
                f"{self.max_groups} keys"
            )
        return (
            f"the answers and their intervals describe the rows kept ({per}, a random choice "
            "of each person's rows), not every row of the input"
        )

    @classmethod
    def from_parameters(
        cls,
        unit: str | None,
        max_contributions: Any = None,
        max_groups: Any = None,
        max_contributions_per_group: Any = None,
        *,
        grouped: bool = True,
    ) -> ContributionBounds:
        """Validate the bounds (no data is read) and fill the unset ones.

        Raises
        ------
        InvalidTypeError, InvalidParameterError
            For a bound that is not a positive int, bounds without a unit, a unit without
            enough bounds, or group bounds without a group-by.
        """
        m = check_bound(max_contributions, "max_contributions")
        g = check_bound(max_groups, "max_groups")
        c = check_bound(max_contributions_per_group, "max_contributions_per_group")
        if unit is None:
            if (m, g, c) != (None, None, None):
                raise InvalidParameterError(
                    "Contribution bounds need a 'privacy_unit' (the person-id column): without "
                    "one, each row is one person and contributes once."
                )
            return cls(None, 1, 1, 1)
        if not grouped and (g is not None or c is not None):
            raise InvalidParameterError(
                "The 'max_groups' and 'max_contributions_per_group' parameters bound a "
                "group-by release; without 'by' give 'max_contributions' only."
            )
        if m is None and (g is None or c is None):
            raise InvalidParameterError(
                "With a 'privacy_unit', give 'max_contributions', or both 'max_groups' and "
                "'max_contributions_per_group' (rows kept per person are bounded either way)."
            )
        if m is None:
            assert g is not None and c is not None
            m = g * c
        c = m if c is None else min(c, m)
        g = m if g is None else min(g, m)
        return cls(unit, m, g, c)

    @property
    def l1(self) -> int:
        """L1 change of one released vector (all groups) when one person is added or removed."""
        return min(self.max_contributions, self.max_groups * self.max_contributions_per_group)

    @property
    def l2(self) -> float:
        """L2 change of one released vector (all groups) when one person is added or removed."""
        return math.sqrt(self.l2_squared())

    def l2_squared(self, neighbours: str = "add_remove") -> int:
        """The exact squared L2 change ``q·c² + s²`` (twice that for ``replace``): the factor
        by which a person-level zCDP loss exceeds the record-level one.

        Under ``replace`` the change is ``v' − v`` for two non-negative vectors, whose squared
        norm is at most ``‖v'‖² + ‖v‖²`` (the cross term is not positive): ``2·L2²``.
        """
        m, g, c = self.max_contributions, self.max_groups, self.max_contributions_per_group
        q = min(g, m // c)
        s = m - q * c if q < g else 0
        sq = q * c * c + min(s, c) ** 2
        return 2 * sq if neighbours == "replace" else sq

    def sensitivity(self, neighbours: str) -> tuple[int, float]:
        """``(L1, L2)`` of one released vector over all groups under ``neighbours``."""
        if neighbours == "replace":
            return 2 * self.l1, math.sqrt(2.0) * self.l2
        return self.l1, self.l2

    def describe(self) -> dict[str, Any]:
        """The privacy unit and bounds as plain data."""
        return asdict(self)

    @property
    def unit_label(self) -> str:
        """``"record"`` (one row is one person) or ``"person:<column>"``."""
        return "record" if self.unit is None else f"person:{self.unit}"


def scaled_budget(budget: float, factor: int) -> float:
    """The largest float ``e <= budget/factor`` with ``factor·e <= budget`` exactly: the
    record-level budget of each tree when one person moves ``factor`` records of it."""
    e = budget / factor
    while Fraction(e) * factor > Fraction(budget):
        e = math.nextafter(e, 0.0)
    return e


def _priorities(source: RandomSource, n: int) -> np.ndarray:
    return words(source, 64, n) if n else np.zeros(0, dtype=np.uint64)


#: Each row's 64-bit word is drawn in two parts: its top ``_HI`` bits for every row, its low
#: ``_LO`` bits only for the rows that can be among their person's lowest words
#: (:func:`_lowest`). The parts are independent and uniform, so the word is.
_HI = 8
_LO = 64 - _HI


def _low_bits(source: RandomSource, n: int) -> np.ndarray:
    """``n`` uniform ``_LO``-bit words (``_LO / 8`` bytes each) as uint64."""
    out = np.zeros((n, 8), dtype=np.uint8)
    if n:
        raw = np.frombuffer(source.random_bytes(n * (_LO // 8)), dtype=np.uint8)
        out[:, : _LO // 8] = raw.reshape(n, _LO // 8)
    low: np.ndarray = out.view("<u8").ravel().astype(np.uint64, copy=False)
    return low


def _order(
    codes: list[tuple[np.ndarray, int]],
    source: RandomSource | None,
    prio: np.ndarray | None = None,
) -> np.ndarray:
    """Sort order by the codes (each ``< bound``), then by a random priority (if ``source``),
    then by position: exactly the order a stable ``lexsort`` by (codes, word) gives.

    Every row's priority is a full 64-bit random word, and rows of one run whose words tie
    (probability below ``r²·2^-65`` for ``r`` rows) keep their input order, so each person's
    sampling law depends on their own rows only (round 3 found the tie law following the width
    of the random field packed next to the codes). For speed the codes, the word's top bits
    and the row's position are packed into one uint64 and sorted by value once (no stable
    argsort); rows whose codes and top bits tie are then ordered by their whole words
    (:func:`_untie`). Codes and positions too wide to pack: a lexsort. ``prio``: the words,
    when the caller drew them (else drawn here).
    """
    n = codes[0][0].size
    widths = [max(1, int(bound - 1).bit_length()) for _, bound in codes]
    if prio is None and source is not None:
        prio = _priorities(source, n)
    at_bits = max(1, int(n - 1).bit_length())
    rand_bits = 64 - sum(widths) - at_bits
    if rand_bits < (0 if prio is None else 1):
        ordered: np.ndarray = np.lexsort(
            (*(() if prio is None else (prio,)), *reversed([c for c, _ in codes]))
        )
        return ordered
    key = np.zeros(n, dtype=np.uint64)
    for (c, _), w in zip(codes, widths, strict=True):
        key <<= np.uint64(w)
        key |= c.astype(np.uint64, copy=False)
    if prio is not None:
        key <<= np.uint64(rand_bits)
        key |= prio >> np.uint64(64 - rand_bits)
    key <<= np.uint64(at_bits)
    key |= np.arange(n, dtype=np.uint64)
    key.sort()  # distinct values: an unstable sort is exact
    order: np.ndarray = (key & np.uint64((1 << at_bits) - 1)).astype(np.intp)
    if prio is not None:
        _untie(order, key >> np.uint64(at_bits), prio)
    return order


def _untie(order: np.ndarray, sorted_key: np.ndarray, prio: np.ndarray) -> None:
    """Within each run of equal packed keys (rows in increasing position), order the rows by
    their whole 64-bit words, in place and stably: the result is the order by (codes, word,
    position), as a lexsort would give it."""
    tie = np.flatnonzero(sorted_key[1:] == sorted_key[:-1])
    if tie.size == 0:
        return
    tied = np.zeros(order.size, dtype=bool)
    tied[tie] = True
    tied[tie + 1] = True
    at = np.flatnonzero(tied)  # tie groups are contiguous in sorted order
    rows = order[at]
    order[at] = rows[np.lexsort((prio[rows], sorted_key[at]))]


def bound_contributions(
    person: np.ndarray,
    group: np.ndarray | None,
    bounds: ContributionBounds,
    source: RandomSource,
    n_groups: int | None = None,
) -> np.ndarray:
    """Indices (sorted) of the rows kept under ``bounds``, sampled uniformly per person.

    Parameters
    ----------
    person : ndarray of int
        A code per row identifying its person (any integers; equal codes, same person).
    group : ndarray of int, optional
        A code per row identifying its group (None: one group).
    bounds : ContributionBounds
        The bounds; steps that cannot bind (decided from the bounds alone) are skipped.
    source : RandomSource
        Randomness for the priorities (operating-system randomness by default upstream;
        seeded only through :class:`treedp.InsecureSeededSource`).
    n_groups : int, optional
        The public number of groups when ``group`` holds codes in ``[0, n_groups)`` (they are
        then used as they are, and fewer bits go to them in the sort key).

    Returns
    -------
    ndarray of intp
        The kept rows, in increasing order.

    Notes
    -----
    Three vectorised steps: keep ``c`` random rows per (person, group), ``g`` random groups
    per person, ``m`` random rows per person. Each gives every row (or pair) a 64-bit random
    word and keeps, per run, those of lowest (word, position): the ranks a sort by (person[,
    group], word) would give, computed by :func:`_lowest` in time linear in the rows (only the
    rows that can be among the lowest draw their words' low bits and are sorted; nothing is
    drawn when no run exceeds the step's bound). Each depends on a person's own rows and
    fresh randomness only.
    """
    m, g, c = bounds.max_contributions, bounds.max_groups, bounds.max_contributions_per_group
    p = _dense(np.asarray(person))
    n = p.size
    keep: np.ndarray | None = None  # None: every row (no index array built)
    if group is not None:
        gr = np.asarray(group) if n_groups is not None else _dense(np.asarray(group))
        n_g = n if n_groups is None else n_groups
        rows: np.ndarray | None = None  # kept rows, increasing
        if c < m or g < m:
            pair = pair_codes(p, gr, n_g)  # in [0, n), in (person, group) order
        if c < m:
            rows = np.flatnonzero(_lowest(pair, c, source))
        if g < m:
            rows = _keep_groups(p, pair, np.arange(n) if rows is None else rows, g, source)
        if rows is not None:
            keep = rows
            p = p[keep]
    ran_both = group is not None and c < m and g < m
    if not (ran_both and g * c <= m):  # else steps 1 and 2 already keep at most g·c <= m
        lowest = _lowest(p, m, source)
        keep = np.flatnonzero(lowest) if keep is None else keep[lowest]
    return np.arange(n) if keep is None else keep


def pair_codes(p: np.ndarray, gr: np.ndarray, n_g: int) -> np.ndarray:
    """Codes in ``[0, n)`` of the (person, group) pairs, increasing in (person, group) order
    (``p`` non-negative codes, ``gr`` in ``[0, n_g)``): injective, ``p·n_g + gr`` only where it
    cannot leave int64, else ``np.unique`` over the stacked pairs."""
    n = p.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if (int(p.max()) + 1) * max(n_g, 1) <= 2**62:
        joined = p.astype(np.int64, copy=False) * np.int64(n_g)
        return _dense(joined + gr.astype(np.int64, copy=False))
    _, inverse = np.unique(
        np.stack([p.astype(np.int64), gr.astype(np.int64)]), axis=1, return_inverse=True
    )
    out: np.ndarray = inverse.ravel().astype(np.int64)
    return out


def _keep_groups(
    p: np.ndarray, pair: np.ndarray, rows: np.ndarray, g: int, source: RandomSource
) -> np.ndarray:
    """The ``rows`` (increasing) whose (person, group) pair is among ``g`` pairs drawn
    uniformly per person: :func:`_lowest` over the pairs present, in (person, group) order."""
    n = p.size
    present = np.zeros(n, dtype=bool)
    present[pair[rows]] = True
    pairs = np.flatnonzero(present)  # the pairs present, in (person, group) order
    owner = np.empty(n, dtype=np.int64)
    owner[pair[rows]] = p[rows]
    chosen = np.zeros(n, dtype=bool)
    chosen[pairs[_lowest(owner[pairs], g, source)]] = True
    kept: np.ndarray = rows[chosen[pair[rows]]]
    return kept


def _lowest(codes: np.ndarray, k: int, source: RandomSource) -> np.ndarray:
    """True for the rows kept when each person (a code in ``[0, n)``) keeps the ``k`` of their
    rows with the lowest 64-bit random words (ties: the earlier row), in time linear in the
    rows; persons with at most ``k`` rows keep them all (nothing is drawn when no person has
    more).

    Each row gets an independent uniform 64-bit word, drawn in two parts
    (:func:`_lowest_of`): the top 8 bits for every row, in row order, then the low 56 bits
    for the candidates only, in row order. The kept rows of a person with ``r > k`` rows are
    a uniform ``k``-subset of them (up to word ties, probability below ``r²·2^-65``), chosen
    from that person's rows and fresh randomness only.
    """
    return _lowest_of(
        codes,
        k,
        lambda n: words(source, _HI, n),
        lambda rows: _low_bits(source, rows.size),
    )


def _lowest_of(codes: np.ndarray, k: int, high: Any, low: Any) -> np.ndarray:
    """:func:`_lowest` given the parts of the words: ``high(n)`` the top ``_HI`` bits of all
    ``n`` rows' words, ``low(rows)`` the low ``_LO`` bits of the words of ``rows``
    (increasing row indices).

    For a person with ``r > k`` rows, the rows whose top bits lie below ``⌈2^8·(k + 4√k +
    8)/r⌉`` (public arithmetic on ``r``) are candidates: when there are at least ``k`` of
    them they hold the ``k`` lowest words (every other row's word is above every
    candidate's), else (rarely) all the person's rows are. Only candidates draw their low bits
    and are sorted, by (person, word, row) as :func:`_order` sorts, so the kept rows are
    exactly those of a full sort of every row by (person, word, row).
    """
    n = codes.size
    sizes = np.bincount(codes, minlength=1)
    big = sizes > k
    if not big.any():
        return np.ones(n, dtype=bool)
    hi = np.asarray(high(n))
    frac = np.zeros(sizes.size)
    np.divide(k + 4.0 * math.sqrt(k) + 8.0, sizes, out=frac, where=big)
    limit = np.ceil(np.minimum(frac, 1.0) * 2.0**_HI).astype(np.uint16)  # 0: within the bound
    rows = np.flatnonzero(hi < limit[codes])
    sub = codes[rows]
    per = np.bincount(sub, minlength=sizes.size)
    short = big & (per < k)
    if short.any():  # rarely: every row of such a person is a candidate
        rows = np.flatnonzero((hi < limit[codes]) | short[codes])
        sub = codes[rows]
        per = np.bincount(sub, minlength=sizes.size)
    word = (hi[rows].astype(np.uint64) << np.uint64(_LO)) | np.asarray(low(rows))
    order = _order([(sub, sizes.size)], None, word)
    start = np.cumsum(per) - per  # each person's first place in the sorted candidates
    first = np.arange(rows.size) - start[sub[order]] < k
    keep: np.ndarray = ~big[codes]
    keep[rows[order[first]]] = True
    return keep


def _dense(codes: np.ndarray) -> np.ndarray:
    """Codes in ``[0, n)`` (``n`` the number of rows): equal inputs, equal codes, numbered in
    the order of the values (:func:`treedp._codes.factorize`: a hash table over the rows, no
    sort of the rows; mixed types such as ``5`` and ``"p1"`` never raise)."""
    n = codes.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    if codes.dtype.kind in "iu" and codes.min() >= 0 and codes.max() < n:
        return codes.astype(np.int64, copy=False)  # already codes in [0, n), in order
    dense, _ = factorize(codes)
    return dense
